"""The engine's minibatch estimator (sgmcmc/engine/estimators.py) against hand-written numpy on the same rows: the
minibatch gradient, the control variates' h_i, SVRG's estimate, the known V(θ) and the running noise estimate (Shang
et al. 2015 Eq. 18-19), whose state a block hands from step to step and back to the sampler state; SGLD's step with the
known V(θ) written out from the block's rows and normals; and, for every estimator state a block carries (the running
estimate, SVRG's centres, the kept gradient of BAOAB and BADODAB, pSGLD's running average), two blocks from one
Generator against one block of their steps (a block draws its minibatches and normals step after step, so the two
draw the one's numbers). No sampler's numpy step is the reference; the integrators are pinned to the generic recipe
step in tests/engine/test_driver.py and tests/samplers/test_recipe_agreement.py. The compiled block is its Python
source."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from sgmcmc.engine import estimators, integrators
from sgmcmc.engine.driver import COMPILED, PYTHON, Blocks, block_draws, python_source
from sgmcmc.engine.injection import DIAGONAL_ESTIMATE, FULL_ESTIMATE, NO_ESTIMATE
from sgmcmc.engine.static import static
from sgmcmc.geometry import IdentityMetric
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.state import SamplerState
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target
from sgmcmc.targets.logistic_regression import LogisticRegression
from sgmcmc.targets.user import UserModelError, user_target

N_DATA, DIM, BATCH = 30, 3, 8
SCALE = N_DATA * (N_DATA - BATCH) / BATCH  # c = N(N − n)/n


def logistic_examples(theta, rows):
    """∇θ log σ(y xᵀθ) per row (x, y), y = ±1: a per-example gradient that depends on θ."""
    inputs, labels = rows[:, :-1], rows[:, -1]
    margins = labels * (inputs @ theta)
    return (labels / (1.0 + np.exp(margins))).reshape(-1, 1) * inputs


def normal_prior(theta):
    return -theta / 4.0


def data():
    rng = np.random.default_rng(5)
    inputs = rng.standard_normal((N_DATA, DIM))
    return np.column_stack([inputs, np.where(rng.random(N_DATA) < 0.5, -1.0, 1.0)])


def source(running=estimators.NO_RUNNING, centre=None):
    functions = {"row_gradients": logistic_examples, "prior_gradient": normal_prior, "data": data(),
                 "n_data": N_DATA}
    if centre is not None:
        functions.update(centre=centre, centre_mean=logistic_examples(centre, data()).mean(axis=0))
    return estimators.source_of(functions, running, SCALE)


def estimate(source, theta, rows, memory):
    """The estimator's Python source at θ on ``rows``: (∇Ũ, V̂); ``memory`` is advanced in place."""
    gradient, variance = np.empty(DIM), np.full((DIM, DIM), np.nan)
    estimators.minibatch_gradient.py_func(python_source(source), theta, np.zeros((2, DIM)), rows, memory, gradient,
                                          variance)
    return gradient, variance


def summed_examples(theta, rows):
    examples = logistic_examples(theta, rows)
    return examples.sum(axis=0), np.sum((examples - examples.mean(axis=0)) ** 2, axis=0)


def precision_prior(theta, hyperparameters):
    return -hyperparameters[0] * theta


def test_the_doors_refuse_what_they_cannot_serve():
    """A model with the sums alone gets no source for the control variates, SVRG or the full running estimate (they
    need the per-example rows), and a prior of the chain's hyperparameters none without the state that holds them."""
    sums_only = {"row_gradient_sums": summed_examples, "prior_gradient": normal_prior, "data": data(),
                 "n_data": N_DATA}
    assert estimators.source_of(sums_only)[0].key.split("@")[0].endswith("sums_gradient")
    assert estimators.source_of(sums_only, estimators.RUNNING_DIAGONAL, SCALE) is not None
    assert estimators.source_of(sums_only, estimators.RUNNING_FULL, SCALE) is None
    assert estimators.source_of({**sums_only, "centre": np.zeros(DIM), "centre_mean": np.zeros(DIM)}) is None
    assert estimators.source_of({**sums_only, "update_every": 5}) is None
    hierarchical = {**sums_only, "prior_gradient": precision_prior}
    assert estimators.source_of(hierarchical) is None
    assert estimators.source_of({**hierarchical, "estimator_state": lambda n: np.ones((n, 1)),
                                 "estimator_size": 1}) is not None


def test_the_minibatch_gradient_and_the_control_variates_are_their_formulas():
    rng = np.random.default_rng(0)
    theta, centre, rows = rng.standard_normal(DIM), rng.standard_normal(DIM), rng.choice(N_DATA, BATCH, replace=False)
    gradient, _ = estimate(source(), theta, rows, np.zeros(0))
    examples = logistic_examples(theta, data()[rows])
    np.testing.assert_allclose(gradient, -N_DATA / BATCH * examples.sum(axis=0) - normal_prior(theta), rtol=1e-12)
    centred, _ = estimate(source(centre=centre), theta, rows, np.zeros(0))
    h = examples - logistic_examples(centre, data()[rows]) + logistic_examples(centre, data()).mean(axis=0)
    np.testing.assert_allclose(centred, -N_DATA / BATCH * h.sum(axis=0) - normal_prior(theta), rtol=1e-12)
    # at the centre the estimate is the full-data gradient, whatever the rows
    exact = -logistic_examples(centre, data()).sum(axis=0) - normal_prior(centre)
    np.testing.assert_allclose(estimate(source(centre=centre), centre, rows, np.zeros(0))[0], exact, rtol=1e-12)


@pytest.mark.parametrize("running", [estimators.RUNNING_FULL, estimators.RUNNING_DIAGONAL])
def test_the_running_estimate_averages_the_minibatch_covariances(running):
    """Î_t is the mean of the t minibatch covariances (denominator n − 1) of the per-example gradients, each at its own
    θ, and V̂ = c·Î_t (the diagonal form: their diagonals); t counts the minibatches."""
    rng = np.random.default_rng(1)
    full = running == estimators.RUNNING_FULL
    memory = np.zeros(1 + (DIM * DIM if full else DIM))
    covariances = []
    for t in range(1, 6):
        theta, rows = rng.standard_normal(DIM), rng.choice(N_DATA, BATCH, replace=False)
        _, variance = estimate(source(running), theta, rows, memory)
        covariance = np.cov(logistic_examples(theta, data()[rows]), rowvar=False)
        covariances.append(covariance if full else np.diag(np.diag(covariance)))
        average = np.mean(covariances, axis=0)
        assert memory[0] == t
        np.testing.assert_allclose(memory[1:], average.ravel() if full else np.diag(average), rtol=1e-12)
        np.testing.assert_allclose(variance if full else np.diag(variance), SCALE * (average if full else
                                                                                     np.diag(average)), rtol=1e-12)


def sgld_blocks(running, backend):
    function, flow, numbers = IdentityMetric().engine_function(DIM)
    mode = FULL_ESTIMATE if running == estimators.RUNNING_FULL else DIAGONAL_ESTIMATE
    return Blocks(static(integrators.langevin), source(running),
                  (static(function), static(flow), numbers, np.array([0.0])),
                  (integrators.EULER, mode, 0, integrators.PLAIN), np.zeros((DIM, DIM)), n_data=N_DATA,
                  batch_size=BATCH, backend=backend, running=running)


def two_blocks(running, backend, theta0, steps=20):
    """Two blocks of ``steps`` SGLD steps, the second from the first's state, from one Generator."""
    rng = np.random.default_rng(3)
    first = sgld_blocks(running, backend)(rng, SamplerState(theta=theta0), np.full(steps, 1e-3), 0)
    return first, sgld_blocks(running, backend)(rng, first.state, np.full(steps, 1e-3), steps)


@pytest.mark.parametrize("running", [estimators.RUNNING_FULL, estimators.RUNNING_DIAGONAL])
def test_blocks_hand_the_running_estimate_over_in_the_sampler_state(running):
    """(t, Î_t) after two blocks of 20 SGLD steps, the second from the first's state, is the mean of the 40 minibatch
    covariances at the points where each gradient was taken (Euler: the step's old θ), replayed from the blocks' own
    draws (drawn step after step: one block of 40 steps draws the two blocks' numbers)."""
    n_chains, steps = 3, 20
    theta0 = np.random.default_rng(2).standard_normal((n_chains, DIM))
    first, second = two_blocks(running, PYTHON, theta0, steps)
    assert (first.state.noise_count, second.state.noise_count) == (steps, 2 * steps)
    rows = block_draws(np.random.default_rng(3), 2 * steps, n_chains, DIM, n_data=N_DATA, batch_size=BATCH)[0]
    before = np.concatenate([theta0[:, None], first.theta, second.theta[:, :-1]], axis=1)  # θ where each ∇Ũ was taken
    full = running == estimators.RUNNING_FULL
    for chain in range(n_chains):
        covariances = [np.cov(logistic_examples(before[chain, k], data()[rows[k, chain]]), rowvar=False)
                       for k in range(2 * steps)]
        average = np.mean(covariances, axis=0)
        np.testing.assert_allclose(second.state.noise[chain], average if full else np.diag(average), rtol=1e-10)


@pytest.mark.validate  # a block compiled for this model (seconds): the long tier, as tests/engine/test_driver.py's
def test_the_compiled_blocks_with_a_running_estimate_are_their_python_source():
    theta0 = np.random.default_rng(2).standard_normal((3, DIM))
    for running in (estimators.RUNNING_FULL, estimators.RUNNING_DIAGONAL):
        compiled, python = two_blocks(running, COMPILED, theta0)[1], two_blocks(running, PYTHON, theta0)[1]
        np.testing.assert_allclose(compiled.theta, python.theta, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(compiled.state.noise, python.state.noise, rtol=1e-12, atol=1e-12)
        assert compiled.state.noise_count == python.state.noise_count == 40


# ------------------------------------------------------------------------------------------------------------- SVRG
class KeysOf:
    """A Generator's ``random((1, c, N))`` for :meth:`sgmcmc.targets.data.DataTarget.minibatch`: keys 0 on the given
    rows (K, c, n) of each call in turn, 1 elsewhere (the numpy estimator takes the rows of the n smallest keys)."""

    def __init__(self, rows):
        self.rows, self.calls = rows, 0

    def random(self, size):
        keys = np.ones(size)
        keys[0, np.arange(size[1])[:, None], self.rows[self.calls]] = 0.0
        self.calls += 1
        return keys


def svrg(update_every=3):
    rows = data()
    return make_estimator("svrg", LogisticRegression(rows[:, :-1], rows[:, -1], batch_size=BATCH),
                          update_every=update_every)


def test_svrg_is_the_estimators_svrg_on_the_same_rows():
    """Seven minibatch gradients of 2 chains, each at a new θ, with update_every = 3: the engine's estimate (its Python
    source, each chain's count, θ̂ and ḡ(θ̂) in its memory) equals SVRG's formula written out and
    ``gradient_estimators.SVRG``'s on the same rows at every call, the renewals (calls 0, 3, 6) put each chain's θ̂ at its own θ with the full-data ḡ(θ̂), and the
    memory handed back leaves the estimator where the numpy estimator is left (centres, count, cost)."""
    rng = np.random.default_rng(4)
    thetas, rows = rng.standard_normal((7, 2, DIM)), np.stack([[rng.choice(N_DATA, BATCH, replace=False)
                                                                 for _ in range(2)] for _ in range(7)])
    numpy_estimator, engine_estimator = svrg(), svrg()
    functions = engine_estimator.engine_functions()
    source = estimators.source_of(functions)
    memory = functions["estimator_state"](2)
    keys = KeysOf(rows)
    model, everything = LogisticRegression(data()[:, :-1], data()[:, -1], batch_size=BATCH), np.arange(N_DATA)

    def examples(theta, index):  # g_i(θ) of one chain on rows ``index``
        return model.log_likelihood_gradients(theta[None], index[None])[0]

    centres = thetas[0].copy()
    for call, theta in enumerate(thetas):
        expected, _ = numpy_estimator.minibatch_gradient(theta, keys)
        if call % 3 == 0:
            centres = theta.copy()
        for chain in range(2):
            gradient, _ = estimate(source, theta[chain], rows[call, chain], memory[chain])
            np.testing.assert_allclose(gradient, expected[chain], rtol=1e-11, atol=1e-13)
            # by hand (Johnson & Zhang 2013; Dubey et al. 2016): −(N/n) Σ_B (g_i(θ) − g_i(θ̂)) − Σ_all g_i(θ̂) − ∇log p(θ)
            batch, centre = rows[call, chain], centres[chain]
            by_hand = (-(N_DATA / BATCH) * (examples(theta[chain], batch) - examples(centre, batch)).sum(axis=0)
                       - examples(centre, everything).sum(axis=0) - model.log_prior_gradient(theta[chain][None])[0])
            np.testing.assert_allclose(gradient, by_hand, rtol=1e-11, atol=1e-12)
        if call % 3 == 0:  # renewed here: the centre is this θ
            np.testing.assert_array_equal(memory[:, 1:1 + DIM], theta)
    np.testing.assert_allclose(memory[:, 1 + DIM:], numpy_estimator.centre_mean, rtol=1e-12)
    functions["advanced"](7, memory)
    assert engine_estimator.calls == numpy_estimator.calls == 7 and memory[0, 0] == 7
    np.testing.assert_array_equal(engine_estimator.centre, numpy_estimator.centre)
    assert engine_estimator.cost() == numpy_estimator.cost()


@pytest.mark.parametrize("name, params", [("sgld", dict(noise_estimate="zero")),
                                          ("ccadl", dict(integrator="theta_first", noise_estimate="running")),
                                          ("psgld", dict(noise_estimate="zero", preconditioner="running",
                                                         damping=1.0)),
                                          ("sghmc", dict(integrator="aboba", noise_estimate="zero"))])
def test_svrg_blocks_are_one_block_across_blocks(name, params):
    """Two blocks of 10 steps with update_every = 7 (renewals inside both blocks and none at the second's start),
    against one block of 20 from the same seed, each on its own estimator: the same paths (the centres, their count
    and ḡ(θ̂) handed from the first block to the second in the state), and the estimator's count, centres and cost
    afterwards. SVRG's estimate itself is its formula (test above)."""
    two, one, _ = assert_two_blocks_are_one_block(lambda: make_sampler(name, svrg(7), **params), 10, 0.01)
    assert two.calls == one.calls == 20
    np.testing.assert_allclose(two.centre, one.centre, rtol=1e-12)
    np.testing.assert_allclose(two.centre_mean, one.centre_mean, rtol=1e-10, atol=1e-13)
    assert two.cost() == one.cost()


@pytest.mark.parametrize("centred", [False, True])
def test_the_known_noise_is_the_covariance_over_all_the_rows(centred):
    """``known`` V(θ) on a data model (FULL_DATA): V̂ = N(N − n)/n · S_h²(θ), S_h² numpy's covariance over all N rows of
    h_i = g_i(θ), or g_i(θ) − g_i(θ̂) with the control variates; the gradient is the minibatch's, as without it."""
    rng = np.random.default_rng(8)
    theta, centre, rows = rng.standard_normal(DIM), rng.standard_normal(DIM), rng.choice(N_DATA, BATCH, replace=False)
    known = source(estimators.FULL_DATA, centre if centred else None)
    gradient, variance = estimate(known, theta, rows, np.zeros(0))
    h = logistic_examples(theta, data()) - (logistic_examples(centre, data()) if centred else 0.0)
    np.testing.assert_allclose(variance, SCALE * np.cov(h, rowvar=False), rtol=1e-12, atol=1e-15)
    plain, _ = estimate(source(centre=centre if centred else None), theta, rows, np.zeros(0))
    np.testing.assert_array_equal(gradient, plain)


def logistic(estimator=None, update_every=4):
    """Logistic regression on :func:`data` (minibatches of BATCH), or an estimator of it (SVRG: its
    ``update_every``)."""
    rows = data()
    model = LogisticRegression(rows[:, :-1], rows[:, -1], batch_size=BATCH)
    if estimator == "svrg":
        return svrg(update_every)
    return model if estimator is None else make_estimator(estimator, model, seed=0)


@pytest.mark.parametrize("name, estimator, estimate", [
    ("sgld", None, "known"), ("sghmc", None, "known"), ("sgnht", None, "known"), ("sgld", "svrg", "known"),
    ("psgld", None, "known"), ("psgld", None, "running")])
def test_known_noise_blocks_are_one_block_across_blocks(name, estimator, estimate):
    """noise_estimate=known on logistic regression (V(θ) over all the rows at every gradient, subtracted from the
    injected noise) in the engine's blocks, for the integrators that take one gradient a step (pSGLD's with the
    running preconditioner, V_t carried), with SVRG's centres (update_every = 4, renewed inside both blocks), and pSGLD
    with the running noise estimate (carried too): two blocks of 6 steps are one block of 12 from the same seed. V(θ)
    is its formula (test below) and SGLD's step with it is written out (the next test)."""
    params = dict(preconditioner="running", damping=1.0) if name == "psgld" else {}  # D ≤ 1: V̂ fits
    make = lambda: make_sampler(name, logistic(estimator), noise_estimate=estimate, **params)  # noqa: E731
    assert make().engine_blocks(PYTHON).source[4][2] == (estimators.RUNNING_FULL if estimate == "running" else
                                                        estimators.FULL_DATA)
    assert_two_blocks_are_one_block(make, 6, 0.02)


def test_sglds_step_with_the_known_noise_on_a_data_model_is_written_out():
    """SGLD with noise_estimate=known on logistic regression, one step from the block's own draws
    (:func:`block_draws`: its rows and normals): θ' = θ − ε∇Ũ(θ) + L·n₁, ∇Ũ = −(N/n) Σ_B g_i(θ) − ∇log p(θ) and
    LLᵀ = ε(2I − εV(θ)) (L Cholesky's), V(θ) = N(N − n)/n · numpy's covariance of g_i(θ) over all N rows; at
    ε = 0.05, εV(θ) is far from 0 (the step without it, L = √(2ε)I, is off by more than 10⁻³)."""
    model, step_size, n_chains = logistic(), 0.05, 3
    sampler = make_sampler("sgld", model, noise_estimate="known")
    rng = np.random.default_rng(0)
    start = sampler.init(model.initial_position(n_chains, rng), rng)
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(1), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(1), 1, n_chains, DIM, n_data=N_DATA, batch_size=BATCH,
                                   first_slot=1)  # SGLD on a data model: no gradient-noise slot
    every = np.tile(np.arange(N_DATA), (n_chains, 1))
    gradient = (-(N_DATA / BATCH) * model.log_likelihood_gradients(start.theta, rows[0]).sum(axis=1)
                - model.log_prior_gradient(start.theta))
    expected, without = [], []
    for chain, examples in enumerate(model.log_likelihood_gradients(start.theta, every)):
        covariance = step_size * (2 * np.eye(DIM) - step_size * SCALE * np.cov(examples, rowvar=False))
        drift = start.theta[chain] - step_size * gradient[chain]
        expected.append(drift + np.linalg.cholesky(covariance) @ normals[0, 1, chain])
        without.append(drift + np.sqrt(2 * step_size) * normals[0, 1, chain])
    np.testing.assert_allclose(block.theta[:, 0], expected, rtol=1e-10, atol=1e-12)
    assert np.max(np.abs(block.theta[:, 0] - np.array(without))) > 1e-3


@pytest.mark.parametrize("name, estimator", [("psgld", "minibatch"), ("psgld_no_gamma", "minibatch"),
                                             ("psgld", "control_variates")])
@pytest.mark.parametrize("estimate", ["zero", "known", "running"])
def test_the_stationary_preconditioner_on_a_data_model_is_one_block_across_blocks(name, estimator, estimate):
    """pSGLD's stationary D(θ) = 1/(λ + √v(θ)), v = ∇U² + diag V(θ), on logistic regression: ∇U and V(θ) over all the
    rows at every step, Γ's ∂²U/∂θ_i² and ∂V_ii/∂θ_i by central differences
    (:func:`sgmcmc.engine.estimators.rows_stationary`), with each noise estimate (the running one carried), and with
    the control variates (V(θ) the covariance of g_i(θ) − g_i(θ̂)): two blocks of 6 steps are one block of 12 from the
    same seed. The step itself is the generic recipe step with D(θ) written out from the rows
    (tests/engine/test_driver.py, test_a_psgld_step_on_a_data_model_is_the_generic_recipe_step)."""
    make = lambda: make_sampler(name, logistic(estimator), noise_estimate=estimate, damping=1.0)  # noqa: E731
    assert make().engine_blocks(PYTHON).parameters[6].python is estimators.rows_stationary.py_func
    assert_two_blocks_are_one_block(make, 6, 0.02)


@pytest.mark.validate  # a block compiled for each integrator on this model (seconds): the long tier
@pytest.mark.parametrize("name, params, centred, step_size", [
    ("sgnht", dict(noise_estimate="known"), True, 0.02),
    ("badodab", dict(noise_estimate="known"), True, 0.05),
    ("baoab", dict(noise_estimate="running", running_form="diagonal"), False, 0.05)])
def test_the_compiled_blocks_with_a_data_models_noise_estimate_are_their_python_source(name, params, centred,
                                                                                        step_size):
    """SGNHT with the control variates' known V(θ) (each step a pass over all the rows), and BADODAB's and BAOAB's O
    step with the known V(θ₁) or the running diagonal estimate (one compiled block for ou_splitting and the model: the
    noise estimate is in the source's numbers): the compiled block gives the Python source's bits (loops, not numba's
    np.sum, whose order differs from numpy's)."""
    rows, paths = data(), []
    for backend in (COMPILED, PYTHON):
        target = LogisticRegression(rows[:, :-1], rows[:, -1], batch_size=BATCH)
        target = make_estimator("control_variates", target) if centred else target
        sampler = make_sampler(name, target, **params)
        rng = np.random.default_rng(0)
        state = sampler.init(target.initial_position(3, rng), rng)
        block = sampler.engine_blocks(backend)(np.random.default_rng(1), state, np.full(12, step_size), 0)
        assert block.status is None
        paths.append(block.theta)
    np.testing.assert_array_equal(*paths)


def test_known_noise_on_a_target_that_keeps_it_unknown_subtracts_nothing():
    """Welling and Teh's mixture draws its minibatches with replacement and keeps its V unknown (Target's
    noise_covariance, None): ``known`` must not become the estimator's per-example covariance there, but take the
    blocks of ``zero``: no V̂ in the injected noise, no noise estimate in the estimator."""
    target = make_target("welling_teh_mixture")
    known, zero = (make_sampler("sgld", target, noise_estimate=estimate).engine_blocks(PYTHON)
                   for estimate in ("known", "zero"))
    assert known.options == zero.options and known.options[1] == NO_ESTIMATE
    assert known.source[4][2] == zero.source[4][2] == estimators.NO_RUNNING


@pytest.mark.parametrize("name", ["baoab", "badodab"])
@pytest.mark.parametrize("params", [dict(noise_estimate="known"), dict(noise_estimate="known", centred=True),
                                    dict(noise_estimate="running"),
                                    dict(noise_estimate="running", running_form="diagonal", noise_clip=True),
                                    dict(noise_estimate="zero", normal_gamma="reflected"),
                                    dict(noise_estimate="known", normal_gamma="inside"),
                                    dict(noise_estimate="running", normal_gamma="inside"),
                                    dict(noise_estimate="zero", svrg=True), dict(noise_estimate="running", svrg=True),
                                    dict(noise_estimate="known", svrg=True)])  # V(θ₁) about each chain's own θ̂
def test_ou_splitting_blocks_with_a_data_models_noise_estimate_are_one_block_across_blocks(name, params):
    """BAOAB and BADODAB on logistic regression with the known V(θ) (at θ₁, the O step's point: a pass over all the
    rows, plain or about the control variates' centre) or the running estimate (the kept gradient's: c·Î_t) subtracted
    in the O step, with SVRG's centres (renewed inside both blocks), and on Normal-Gamma (a data model on γ > 0): from
    a start whose first half move crosses γ = 0 in two of the three chains (its reflection, V̂ none: near γ = 0 the
    known V leaves no PSD room at these steps), or from the target's own start with V̂. Two blocks of 6 steps (the
    first kept gradient drawn by the first block from the run's Generator, then handed over in the state with the
    momentum, the running estimate and the centres) are one block of 12 from the same seed: paths, momenta,
    reflections, the running estimate (its count 13: the first kept gradient's and one a step) and SVRG's count,
    centres and cost. The O step is pinned to its formula with the known V(θ₁) in tests/engine/test_driver.py
    (test_an_ou_splitting_step_is_the_recipes_moves_around_the_exact_friction)."""
    params = dict(params)
    centred, normal_gamma = params.pop("centred", False), params.pop("normal_gamma", None)
    with_svrg = params.pop("svrg", False)

    def target():
        if normal_gamma:
            return make_target("normal_gamma", n_data=N_DATA, batch_size=BATCH)
        return logistic("svrg" if with_svrg else "control_variates" if centred else None)

    def start(sampler):
        rng = np.random.default_rng(0)
        state = sampler.init(sampler.target.initial_position(3, rng), rng)
        if normal_gamma == "reflected":  # γ = 0.01 and r_γ = −100, −50, 1: the first half move crosses 0 in two chains
            state = state._replace(theta=np.array([[0.0, 0.01]] * 3),
                                   momentum=np.array([[0.0, -100.0], [0.0, -50.0], [0.0, 1.0]]))
        return state

    two, one, (first, second, _) = assert_two_blocks_are_one_block(lambda: make_sampler(name, target(), **params), 6,
                                                                   0.01 if normal_gamma else 0.05, start=start)
    if normal_gamma == "reflected":
        assert first.reflected.sum(axis=1).tolist() == [1, 1, 0]
    if params["noise_estimate"] == "running":
        assert (first.state.noise_count, second.state.noise_count) == (7, 13)
    if with_svrg:  # the same count of minibatch gradients, centres and cost
        assert two.calls == one.calls == 13
        np.testing.assert_allclose(two.centre, one.centre, rtol=1e-12)
        assert two.cost() == one.cost()


def assert_two_blocks_are_one_block(make, steps, step_size, start=None):
    """Two blocks of ``steps`` steps of a sampler ``make()`` (the engine's blocks, Python source), the second from the
    first's state, on one Generator, against one block of 2·``steps`` of another ``make()`` from the same state and
    seed (3 chains at the target's start, or ``start(sampler)``): the same paths, momenta, reflections, running noise
    estimate and kept gradient (1e-10: a block's sums are the same, in the same order, so in practice equal bits).
    Returns the two blocks' sampler's target and the one block's (estimators: ``calls``, ``centre``, ``cost()``), and
    the blocks (first, second, one)."""
    samplers = make(), make()
    if start is None:
        rng = np.random.default_rng(0)
        state = samplers[0].init(samplers[0].target.initial_position(3, rng), rng)
    else:
        state = start(samplers[0])
    blocks, whole = samplers[0].engine_blocks(PYTHON), samplers[1].engine_blocks(PYTHON)
    assert isinstance(blocks, Blocks) and isinstance(whole, Blocks)
    rng = np.random.default_rng(1)
    first = blocks(rng, state, np.full(steps, step_size), 0)
    second = blocks(rng, first.state, np.full(steps, step_size), steps)
    one = whole(np.random.default_rng(1), state, np.full(2 * steps, step_size), 0)
    assert first.status is None and second.status is None and one.status is None
    close = dict(rtol=1e-10, atol=1e-12)
    for field in ("theta", "momentum", "xi", "reflected"):
        if getattr(one, field) is None:
            assert getattr(first, field) is None and getattr(second, field) is None
        else:
            np.testing.assert_allclose(np.concatenate([getattr(first, field), getattr(second, field)], axis=1),
                                       getattr(one, field), **close)
    for field in SamplerState._fields:
        value = getattr(one.state, field)
        if value is None:
            assert getattr(second.state, field) is None, field
        else:
            np.testing.assert_allclose(getattr(second.state, field), value, **close, err_msg=field)
    return samplers[0].target, samplers[1].target, (first, second, one)


class SummedLogistic:
    """:func:`logistic_examples` on :func:`data` as a user's data model on rows, with or without ``row_gradient_sums``
    (its sums, or a wrong second sum: ``wrong``)."""
    n_data, dim = N_DATA, DIM
    row_gradients, prior_gradient = staticmethod(logistic_examples), staticmethod(normal_prior)

    def __init__(self, sums=True, wrong=False):
        self.data = data()
        if sums:
            self.row_gradient_sums = self._wrong_sums if wrong else self._sums

    @staticmethod
    def _sums(theta, rows):
        gradients = logistic_examples(theta, rows)
        return gradients.sum(axis=0), np.sum((gradients - gradients.mean(axis=0)) ** 2, axis=0)

    @staticmethod
    def _wrong_sums(theta, rows):
        total, scatter = SummedLogistic._sums(theta, rows)
        return total, 2.0 * scatter


@pytest.mark.parametrize("name, params, door", [
    ("sgld", dict(noise_estimate="zero"), "sums_gradient"),
    ("sgld", dict(noise_estimate="running", running_form="diagonal"), "sums_gradient"),
    ("baoab", dict(noise_estimate="running", running_form="diagonal"), "sums_gradient"),
    ("sgld", dict(noise_estimate="running"), "minibatch_gradient"),
    ("sgld", dict(noise_estimate="known"), "minibatch_gradient")])
def test_the_sums_door_is_the_rows_door(name, params, door):
    """A model that also hands over its rows' sums (Σ g_i, Σ (g_i − ḡ)²) runs on :func:`estimators.sums_gradient`
    where that serves (no noise estimate, or the running diagonal one, also in BAOAB's O step) and on the rows
    elsewhere (the full running estimate, the known V); either way its paths and running estimate, over two blocks of
    8 steps, are those of the same model without the sums on the same draws."""
    runs = []
    for sums in (True, False):
        sampler = make_sampler(name, user_target(SummedLogistic(sums), batch_size=BATCH), **params)
        blocks = sampler.engine_blocks(PYTHON)
        assert blocks.source[0].key.split("@")[0].endswith(door if sums else "minibatch_gradient")
        rng = np.random.default_rng(0)
        state = sampler.init(sampler.target.initial_position(3, rng), rng)
        first = blocks(rng, state, np.full(8, 0.05), 0)
        runs.append((first, blocks(rng, first.state, np.full(8, 0.05), 8)))
    for summed, rowed in zip(*runs):
        assert summed.status is None and rowed.status is None
        np.testing.assert_allclose(summed.theta, rowed.theta, rtol=1e-10, atol=1e-12)
        if summed.state.noise is not None:
            np.testing.assert_allclose(summed.state.noise, rowed.state.noise, rtol=1e-10, atol=1e-12)


def test_sums_that_disagree_with_the_rows_are_refused_in_one_line():

    with pytest.raises(UserModelError, match="row_gradient_sums' Σ \\(g_i − ḡ\\)² disagrees") as error:
        user_target(SummedLogistic(wrong=True), batch_size=BATCH)
    assert "\n" not in str(error.value)


compiled_examples, compiled_prior = numba.njit(logistic_examples), numba.njit(normal_prior)


@numba.njit
def compiled_sums(theta, rows):
    """:meth:`SummedLogistic._sums` in loops numba compiles."""
    gradients = compiled_examples(theta, rows)
    total, scatter = np.zeros(gradients.shape[1]), np.zeros(gradients.shape[1])
    for i in range(gradients.shape[0]):
        total += gradients[i]
    for i in range(gradients.shape[0]):
        scatter += (gradients[i] - total / gradients.shape[0]) ** 2
    return total, scatter


class CompiledSummedLogistic(SummedLogistic):
    """:class:`SummedLogistic` with functions numba compiles."""
    row_gradients, prior_gradient = staticmethod(compiled_examples), staticmethod(compiled_prior)
    row_gradient_sums = staticmethod(compiled_sums)

    def __init__(self):
        self.data = data()


@pytest.mark.validate  # a block compiled for this model (seconds): the long tier
def test_the_compiled_sums_door_is_its_python_source():
    """SGLD with the running diagonal estimate on the sums door: the compiled block gives the Python source's bits."""
    paths = []
    for backend in (COMPILED, PYTHON):
        sampler = make_sampler("sgld", user_target(CompiledSummedLogistic(), batch_size=BATCH),
                               noise_estimate="running", running_form="diagonal")
        blocks = sampler.engine_blocks(backend)
        assert blocks.source[0].key.split("@")[0].endswith("sums_gradient")
        rng = np.random.default_rng(0)
        block = blocks(np.random.default_rng(1), sampler.init(sampler.target.initial_position(3, rng), rng),
                       np.full(12, 0.05), 0)
        assert block.status is None
        paths.append(block.theta)
    np.testing.assert_array_equal(*paths)
