"""pSGLD's integrator on the engine (:func:`sgmcmc.engine.integrators.preconditioned` in the driver's blocks) against
its numpy steps (the reference, sgmcmc/samplers/psgld.py) on identical random numbers.

1. The formulas the targets hand the engine: each formula target's ``hessian_diagonal_into`` equals its
   ``hessian_diagonal`` (1e-12), which equals central differences of the target's exact gradient (1e-6: the exact
   values are the right ones).
2. Two consecutive blocks, the engine's (its source as Python) and numpy, on every formula target, for psgld and
   psgld_no_gamma, both preconditioners, known and zero noise estimates: the same paths and final states (θ, and the
   running average V_t handed from the first block to the second, the driver's carried vector) at 1e-12; compiled,
   with ``noise_clip``, the same clipped counts; compiled and as Python, the same bits.
3. A failure mid-block ends both at the same step (compiled): the injected covariance refused (NOT_PSD, a step size
   too large for the known V) and a non-finite state.
4. The pin can fail: psgld's numpy steps against the blocks without Γ (psgld_no_gamma's), and blocks that do not
   carry V_t to the next block (the second block restarts from the first block's initial V_t), differ by far more
   than 1e-12.
5. A target without ∂²U/∂θ_i²: Γ's curvature by central differences, as the numpy steps take it. Where the engine does
   not apply, ``engine_blocks()`` is None (the numpy steps run).
6. The stationary step on a data model is the generic recipe step, D(θ) written out and Γ by the recipe's own
   central differences.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pytest

from sgmcmc.engine.blocks import DIVERGED, FAILED, numpy_block
from sgmcmc.engine.driver import COMPILED, PYTHON, block_draws
from sgmcmc.noise import clip_counters
from sgmcmc.recipe import Recipe, recipe_step
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target
from sgmcmc.targets.base import SyntheticTarget, quadratic_gradient_into, quadratic_potential
from sgmcmc.targets.user import user_target
from tests.helpers import ScriptedNormals
from tests.targets.test_row_models import GaussianMeanWithPrior

FORMULA_TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec",
                   "gaussian_mixture_25")
SAMPLERS = ("psgld", "psgld_no_gamma")
PRECONDITIONERS = ("stationary", "running")
FULL_V = [[1.0, 0.3], [0.3, 0.5]]  # a full gradient-noise covariance on the 2D Gaussians (FULL_ESTIMATE)


def _target(name, noise_variance=None):
    if noise_variance is None:
        noise_variance = FULL_V if name.startswith("gaussian_2d") else 1.0
    return make_target(name, noise_variance=noise_variance)


def _assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def _initial_state(sampler, n_chains, seed, average=None):
    """The sampler's initial state; for the running preconditioner, V_0 = ``average`` when given (a resumed run's
    settled average) instead of init's 0."""
    rng = np.random.default_rng(seed)
    state = sampler.init(sampler.target.initial_position(n_chains, rng), rng)
    if average is not None and sampler.preconditioner == "running":
        state = state._replace(preconditioner=np.full_like(state.theta, average))
    return state


def _blocks(sampler, state, step_sizes, split, seed, advance=None, backend=PYTHON):
    """Blocks [0, split) and [split, K) run numpy and on the engine (``advance``: its blocks on ``backend``), each
    drawing from its own Generator seeded alike and carrying its own state from the first block to the second:
    ([numpy blocks], [the engine's blocks])."""
    advance = sampler.engine_blocks(backend) if advance is None else advance
    assert advance is not None
    out = []
    for run in (lambda rng, s, steps, start: numpy_block(sampler, rng, s, steps, start), advance):
        rng = np.random.default_rng(seed)
        first = run(rng, state, step_sizes[:split], 0)
        second = run(rng, first.state, step_sizes[split:], first.stop)
        out.append([first, second])
    return out


# -- 1. the formulas ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target_name", FORMULA_TARGETS)
def test_engine_formulas_equal_the_targets(target_name):
    target = _target(target_name)
    functions = target.engine_functions()
    hessian_into = numba.njit(functions["hessian_diagonal_into"])  # compiled, as the engine compiles it
    theta = np.random.default_rng(3).normal(scale=1.5, size=(7, target.dim))
    hessian = np.empty_like(theta)
    for i, row in enumerate(theta):
        hessian_into(row, functions["parameters"], hessian[i])
    _assert_close(hessian, target.hessian_diagonal(theta))
    differences = np.empty_like(theta)
    for i in range(target.dim):
        shift = np.zeros_like(theta)
        shift[:, i] = 1e-5
        differences[:, i] = (target.gradient(theta + shift)[:, i] - target.gradient(theta - shift)[:, i]) / 2e-5
    np.testing.assert_allclose(target.hessian_diagonal(theta), differences, rtol=1e-6, atol=1e-6)


# -- 2. the blocks equal the numpy steps ----------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["known", "zero"])
@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("target_name", FORMULA_TARGETS)
def test_two_blocks_equal_the_numpy_steps(target_name, name, preconditioner, noise):
    sampler = make_sampler(name, _target(target_name), preconditioner=preconditioner, noise_estimate=noise)
    # known noise with V_0 = 0 would refuse the first step (D = 1/√((1 − α)ĝ²) is large): start from a settled V_t
    state = _initial_state(sampler, n_chains=3, seed=5, average=4.0 if noise == "known" else None)
    (numpy_first, numpy_second), (compiled_first, compiled_second) = _blocks(
        sampler, state, np.linspace(0.02, 0.005, 40), split=17, seed=6)
    for reference, compiled in ((numpy_first, compiled_first), (numpy_second, compiled_second)):
        assert reference.status is None and compiled.status is None
        assert (compiled.start, compiled.stop) == (reference.start, reference.stop)
        _assert_close(compiled.theta, reference.theta)
        _assert_close(compiled.state.theta, reference.state.theta)
        if preconditioner == "running":
            _assert_close(compiled.state.preconditioner, reference.state.preconditioner)
        else:
            assert compiled.state.preconditioner is None and reference.state.preconditioner is None
    assert numpy_second.stop == 40


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
def test_clipped_counts_equal(preconditioner):
    """V = 400 against D ≈ 1/20: ε(2D − εD²V) < 0 for ε > 0.1, clipped to 0 and counted by both."""
    sampler = make_sampler("psgld", _target("gaussian_1d", 400.0), preconditioner=preconditioner,
                           noise_estimate="known", noise_clip=True)
    state = _initial_state(sampler, n_chains=4, seed=1, average=400.0)
    steps = np.tile([0.05, 0.3], 15)
    (numpy_first, numpy_second), (compiled_first, compiled_second) = _blocks(sampler, state, steps, split=11, seed=2,
                                                                           backend=COMPILED)
    for reference, compiled in ((numpy_first, compiled_first), (numpy_second, compiled_second)):
        assert reference.status is None and compiled.status is None
        assert reference.clipped.sum() > 0
        np.testing.assert_array_equal(compiled.clipped, reference.clipped)
        _assert_close(compiled.theta, reference.theta)


# -- 3. a failure mid-block -----------------------------------------------------------------------------------------
@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("name", SAMPLERS)
def test_not_psd_stops_at_the_same_step(name, preconditioner):
    """ε = 0.5 against V = 400 after seven steps of 0.01: the covariance is refused at step 8 by both (status failed),
    in the second block, and the running V_t handed to it is the first block's."""
    sampler = make_sampler(name, _target("gaussian_1d", 400.0), preconditioner=preconditioner, noise_estimate="known")
    state = _initial_state(sampler, n_chains=3, seed=4, average=400.0)
    steps = np.concatenate([np.full(7, 0.01), np.full(5, 0.5)])
    (_, reference), (_, compiled) = _blocks(sampler, state, steps, split=4, seed=8, backend=COMPILED)
    assert reference.status == compiled.status == FAILED
    assert reference.stop == compiled.stop == 7
    assert reference.error.split(":")[0] == compiled.error.split(":")[0] == "step 8"
    _assert_close(compiled.theta, reference.theta)
    _assert_close(compiled.state.theta, reference.state.theta)
    if preconditioner == "running":
        _assert_close(compiled.state.preconditioner, reference.state.preconditioner)


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("name", SAMPLERS)
def test_divergence_stops_at_the_same_step(name, preconditioner):
    """A step of 10^300 throws θ to about 10^300 (D∇Ũ is bounded); the next gradient 4θ³ overflows and the state is
    not finite: both stop there with the same message and keep the same last finite state."""
    sampler = make_sampler(name, _target("double_well"), preconditioner=preconditioner, noise_estimate="zero")
    state = _initial_state(sampler, n_chains=4, seed=2)
    steps = np.concatenate([np.full(5, 0.01), [1e300], np.full(6, 0.01)])
    (numpy_first, reference), (compiled_first, compiled) = _blocks(sampler, state, steps, split=3, seed=3,
                                                                   backend=COMPILED)
    assert numpy_first.status is None and compiled_first.status is None
    assert reference.status == compiled.status == DIVERGED
    assert 3 < reference.stop == compiled.stop < 12
    assert reference.error == compiled.error
    _assert_close(compiled.theta, reference.theta)
    _assert_close(compiled.state.theta, reference.state.theta)
    if preconditioner == "running":
        _assert_close(compiled.state.preconditioner, reference.state.preconditioner)


def test_an_overflowing_running_average_counts_its_chain_in_both_messages():
    """θ₀ = 10⁵² in one chain of three: its gradient² overflows V_t (θ stays finite, D = 0), and both paths stop at
    step 1 naming that one chain (the numpy path once counted only θ, r and ξ: "in 0 of 3 chains")."""
    sampler = make_sampler("psgld", _target("double_well"), preconditioner="running", noise_estimate="zero")
    state = sampler.init(np.array([[0.5], [1e52], [0.3]]), np.random.default_rng(0))
    steps = np.full(3, 0.01)
    reference = numpy_block(sampler, np.random.default_rng(1), state, steps, 0)
    compiled = sampler.engine_blocks(COMPILED)(np.random.default_rng(1), state, steps, 0)
    assert reference.status == compiled.status == DIVERGED
    assert reference.error == compiled.error == "non-finite state at step 1 in 1 of 3 chains"


# -- 4. the pin can fail ----------------------------------------------------------------------------------------------
def _largest_difference(reference_blocks, compiled_blocks):
    return max(np.max(np.abs(compiled.theta - reference.theta))
               for reference, compiled in zip(reference_blocks, compiled_blocks))


@pytest.mark.parametrize("target_name", ["double_well", "correlated_2d"])
def test_blocks_without_gamma_fail_the_pin_for_psgld(target_name):
    target = _target(target_name)
    sampler = make_sampler("psgld", target, noise_estimate="zero")
    without_gamma = make_sampler("psgld_no_gamma", target, noise_estimate="zero").engine_blocks(PYTHON)
    state = _initial_state(sampler, n_chains=3, seed=5)
    steps = np.linspace(0.02, 0.005, 40)
    right = _blocks(sampler, state, steps, split=17, seed=6)
    assert _largest_difference(*right) < 1e-12
    wrong = _blocks(sampler, state, steps, split=17, seed=6, advance=without_gamma)
    assert _largest_difference(*wrong) > 1e-4


def test_blocks_that_drop_the_average_between_blocks_fail_the_pin():
    """Blocks whose final state keeps the V_t they started from: the first block still agrees, the second does not."""
    sampler = make_sampler("psgld", _target("double_well"), preconditioner="running", noise_estimate="zero")
    state = _initial_state(sampler, n_chains=3, seed=5)
    blocks = sampler.engine_blocks(PYTHON)

    def forgetful(rng, state, step_sizes, start):
        block = blocks(rng, state, step_sizes, start)
        return dataclasses.replace(block, state=block.state._replace(preconditioner=state.preconditioner))

    steps = np.full(40, 0.01)
    (numpy_first, numpy_second), (compiled_first, compiled_second) = _blocks(sampler, state, steps, split=17, seed=6,
                                                                           advance=forgetful)
    _assert_close(compiled_first.theta, numpy_first.theta)
    assert np.max(np.abs(compiled_second.theta - numpy_second.theta)) > 1e-4


# -- 5. where the engine does not run ---------------------------------------------------------------------------------
class _NoOwnHessian(SyntheticTarget):
    """A formula target that hands the engine no ∂²U/∂θ_i² (its Hessian diagonal is the base class's central
    differences)."""

    name, dim = "no_own_hessian", 1

    def potential(self, theta):
        return 0.5 * theta[:, 0] ** 2

    def gradient(self, theta):
        return np.array(theta, dtype=float)

    def engine_functions(self):
        return self.density_functions(quadratic_gradient_into, quadratic_potential, [0.0, 1.0])


@pytest.mark.parametrize("name", SAMPLERS)
def test_a_curvature_by_central_differences_equals_the_numpy_steps(name):
    """A density model that hands over no ∂²U/∂θ_i²: Γ's curvature by central differences of its ∇U
    (:func:`sgmcmc.engine.estimators.differenced_stationary`, psgld; psgld_no_gamma reads none), the numpy steps' paths
    (whose ``Target.hessian_diagonal`` takes the same differences)."""
    sampler = make_sampler(name, _NoOwnHessian(noise_variance=1.0), noise_estimate="known")
    blocks = sampler.engine_blocks(PYTHON)
    assert (blocks.parameters[6].python.__name__ == "differenced_stationary") == (name == "psgld")
    state = _initial_state(sampler, n_chains=3, seed=5)
    (numpy_first, numpy_second), (first, second) = _blocks(sampler, state, np.linspace(0.02, 0.005, 40), split=17,
                                                           seed=6)
    for reference, engine in ((numpy_first, first), (numpy_second, second)):
        _assert_close(engine.theta, reference.theta)


def test_no_engine_blocks_where_they_do_not_apply():
    assert make_sampler("psgld", make_target("double_well")).engine_blocks(PYTHON) is not None
    # the generic recipe step (a full V̂ with the clip runs on the engine: the next test)
    assert make_sampler("psgld", make_target("double_well"), integrator="generic").engine_blocks(PYTHON) is None
    # a data target on rows: both preconditioners (the stationary one's D over all the rows at every step)
    for preconditioner in PRECONDITIONERS:
        data = make_sampler("psgld", make_target("normal_gamma"), preconditioner=preconditioner, noise_estimate="zero")
        assert data.engine_blocks(PYTHON) is not None


def test_a_full_estimate_with_the_clip_equals_the_numpy_steps():
    """A full V = 400·FULL_V with the clip, h = 0.4 … 0.02: some steps have a Cholesky factor of ε(2D − εDVD), the
    others are eigendecomposed with an eigenvalue clipped (sgmcmc.noise.clipped_gaussian); the samples, clipped counts
    and draws counted are the numpy steps'."""
    sampler = make_sampler("psgld", _target("gaussian_2d_cov", 400 * np.array(FULL_V)), noise_clip=True)
    state, steps = _initial_state(sampler, n_chains=3, seed=5), np.linspace(0.4, 0.02, 30)
    before = clip_counters.snapshot()
    reference = numpy_block(sampler, np.random.default_rng(6), state, steps, 0)
    middle = clip_counters.snapshot()
    compiled = sampler.engine_blocks(PYTHON)(np.random.default_rng(6), state, steps, 0)
    after = clip_counters.snapshot()
    draws, fallbacks = np.subtract(middle, before)
    assert 0 < fallbacks < draws and reference.clipped.sum() > 0
    assert tuple(np.subtract(after, middle)) == (draws, fallbacks)
    _assert_close(compiled.theta, reference.theta)
    np.testing.assert_array_equal(compiled.clipped, reference.clipped)


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
def test_the_compiled_block_is_the_python_source(preconditioner):
    """Two blocks compiled and as Python on the same random numbers: the same bits."""
    sampler = make_sampler("psgld", _target("double_well"), preconditioner=preconditioner)
    state = _initial_state(sampler, n_chains=3, seed=5, average=4.0)
    steps = np.linspace(0.02, 0.005, 40)
    _, compiled = _blocks(sampler, state, steps, split=17, seed=6, backend=COMPILED)
    _, python = _blocks(sampler, state, steps, split=17, seed=6, backend=PYTHON)
    for mine, theirs in zip(compiled, python):
        np.testing.assert_array_equal(mine.theta, theirs.theta)
        if preconditioner == "running":
            np.testing.assert_array_equal(mine.state.preconditioner, theirs.state.preconditioner)


# -- 6. the stationary step on a data model is the generic recipe step ------------------------------------------------
@pytest.mark.parametrize("name", SAMPLERS)
def test_the_stationary_step_on_a_data_model_is_the_generic_recipe_step(name):
    """A user's row model, x_i ~ N(θ, I) with the prior N(0, 4I) (N = 40, d = 2, minibatches of 10), written out here:
    ∇Ũ = −(N/n) Σ_{i∈S̃} (x_i − θ) + θ/4 on the block's own minibatch, ∇U the same over all rows, V = c·diag S²
    (S² the rows' covariance, c = N(N − n)/n), D(θ) = 1/(λ + √(∇U² + V)). One block step of each chain is the generic
    recipe step (Ma et al. 2015 Eq. 9 + K1, z = θ, Q = 0, B̂ = 0) on the block's injected normals, with Γ = ∂_i D_ii
    by the recipe's own central differences of this D (psgld), or Γ = 0 (psgld_no_gamma). Γ moves θ by about 10⁻³
    here (psgld_no_gamma's step against the recipe with Γ), five orders of magnitude above the tolerance."""
    model = GaussianMeanWithPrior(n_data=40, dim=2)
    target = user_target(model, "GaussianMeanWithPrior", batch_size=10)
    sampler = make_sampler(name, target, noise_estimate="zero", damping=0.1)
    start = sampler.init(np.random.default_rng(0).normal(1.0, 0.3, size=(4, 2)), np.random.default_rng(1))
    step_size = 0.01
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(3), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, 4, 2, n_data=40, batch_size=10)
    data, scale = model.data, 40 * 30 / 10
    gradient = np.array([-(40 / 10) * np.sum(data[r] - t, axis=0) + t / 4.0 for t, r in zip(start.theta, rows[0])])

    def diffusion_diagonal(theta):
        exact = -np.sum(data[None] - theta[:, None], axis=1) + theta / 4.0
        return 1.0 / (0.1 + np.sqrt(exact**2 + scale * np.var(data, axis=0, ddof=1)))

    recipe = Recipe(lambda z, rng: gradient, lambda z: np.stack([np.diag(row) for row in diffusion_diagonal(z)]),
                    lambda z: np.zeros((z.shape[0], 2, 2)),
                    correction=None if name == "psgld" else (lambda z: np.zeros_like(z)))
    expected = recipe_step(recipe, start.theta, step_size, ScriptedNormals(normals[0, 1]))
    np.testing.assert_allclose(block.theta[:, 0], expected, rtol=1e-8, atol=1e-10)
    assert np.max(np.abs(block.theta[:, 0] - start.theta)) > 1e-3
