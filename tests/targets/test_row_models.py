"""A user's data model on rows (``sgmcmc/targets/user.py``, "A data model on rows"), and a density model whose gradient
is a staticmethod, run on the engine's compiled blocks with no formula to name and sample their exact distribution; a
model the compiler refuses is called in Python from the compiled blocks, with a one-line warning."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import COMPILED, Blocks
from sgmcmc.engine.estimators import called_in_python
from sgmcmc.geometry import RationalMetric
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.user import user_target
from tests.engine.test_driver import flat_prior, gaussian_examples
from tests.helpers import door_potentials, engine_step


class GaussianMean:
    """x_i ~ N(µ, 1) in d independent coordinates, flat prior: the posterior is N(x̄, 1/N) per coordinate. Its
    gradients are tests/engine/test_driver.py's, so the blocks compiled there (and cached) run it."""

    def __init__(self, n_data=40, dim=2, seed=0):
        self.data = np.random.default_rng(seed).standard_normal((n_data, dim)) + np.arange(1.0, dim + 1)
        self.n_data, self.dim = n_data, dim

    row_gradients = staticmethod(gaussian_examples)
    prior_gradient = staticmethod(flat_prior)

    @staticmethod
    def row_log_likelihoods(theta, rows):
        return -0.5 * np.sum((rows - theta) ** 2, axis=1)

    @staticmethod
    def prior_log_density(theta):
        return 0.0

    def posterior(self):
        return self.data.mean(axis=0), 1.0 / self.n_data


class Uncompilable(GaussianMean):
    """The same model, with a gradient numba cannot compile (a Python object inside)."""

    @staticmethod
    def row_gradients(theta, rows):
        return np.asarray(list(rows - theta))


@pytest.mark.parametrize("name", ["sgld", *(pytest.param(name, marks=pytest.mark.validate)  # in make validate: make test took 636 s on a cold clone with it (budget 600 s)
                                             for name in ("sghmc", "sgnht"))])
def test_a_row_model_runs_on_the_engines_blocks_and_samples_its_posterior(name):
    model = GaussianMean()
    target = user_target(model, "GaussianMean", batch_size=model.n_data)  # n = N: no minibatch noise
    step_size = {"sgld": 0.002, "sghmc": 0.02, "sgnht": 0.02}[name]
    sampler = make_sampler(name, target, noise_estimate="zero", **({"friction": 5.0} if name == "sghmc" else {}))
    assert isinstance(kernel_of(sampler), Blocks)
    mean, variance = model.posterior()
    rng = np.random.default_rng(1)
    theta0 = mean + np.sqrt(variance) * rng.standard_normal((400, model.dim))
    settings = RunOptions(n_steps=600, n_chains=400, burn_in=300, eval_every=10**9, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, rng, theta0=theta0)
    assert outcome.status == "completed"
    final = outcome.final_theta
    # 400 chains: the mean within 4 standard errors; the variance within 25% (a factor 2 of the noise is 100%; the
    # schemes' own bias at these ε is at most 5%)
    assert np.all(np.abs(final.mean(axis=0) - mean) < 4 * np.sqrt(variance / 400))
    np.testing.assert_allclose(final.var(axis=0) / variance, 1.0, atol=0.25)


def _row_model_variance(name, params, step_size, seed=2):
    """The variance over 400 chains after 600 steps (300 burn-in) from the posterior, over the exact variance."""
    model = GaussianMean()
    target = user_target(model, "GaussianMean", batch_size=model.n_data)  # n = N: no minibatch noise
    sampler = make_sampler(name, target, noise_estimate="zero", **params)
    mean, variance = model.posterior()
    rng = np.random.default_rng(seed)
    theta0 = mean + np.sqrt(variance) * rng.standard_normal((400, model.dim))
    outcome = run_chains(sampler, Constant(step_size), RunOptions(n_steps=600, n_chains=400, burn_in=300,
                                                                  eval_every=10**9, progress=False), rng, theta0=theta0)
    assert outcome.status == "completed"
    assert np.all(np.abs(outcome.final_theta.mean(axis=0) - mean) < 4 * np.sqrt(variance / 400))
    return sampler, outcome.final_theta.var(axis=0) / variance


@pytest.mark.validate  # a block compiled per integrator for this model (seconds each): the long tier
@pytest.mark.parametrize("name", ["baoab", "badodab"])
def test_the_ou_splittings_on_a_row_model_sample_its_posterior(name):
    """BAOAB and BADODAB (the kept gradient first drawn by the numpy minibatch, then carried by the blocks) on the
    engine's blocks, as test_a_row_model_runs_on_the_engines_blocks_... checks the others."""
    sampler, ratio = _row_model_variance(name, {}, 0.02)
    assert isinstance(kernel_of(sampler), Blocks)
    np.testing.assert_allclose(ratio, 1.0, atol=0.25)


def running_psgld_variance_by_hand(model, alpha, damping, step_size, seed, n_chains=400, n_steps=600):
    """Li et al. (2016) Algorithm 1 on the full batch, written here: ĝ = ∇U(θ) = N(θ − x̄) (flat prior),
    V_t = αV_{t−1} + (1 − α)ĝ² from V_0 = 0, D = 1/(λ + √V_t), θ ← θ − εDĝ + N(0, 2εD) (Γ dropped), from the
    posterior; the variance over the chains at the end over the exact one."""
    mean, variance = model.posterior()
    rng = np.random.default_rng(seed)
    theta = mean + np.sqrt(variance) * rng.standard_normal((n_chains, model.dim))
    average = np.zeros_like(theta)
    for _ in range(n_steps):
        gradient = model.n_data * (theta - mean)
        average = alpha * average + (1 - alpha) * gradient**2
        diffusion = 1.0 / (damping + np.sqrt(average))
        theta = theta - step_size * diffusion * gradient + np.sqrt(2 * step_size * diffusion) * rng.standard_normal(
            theta.shape)
    return theta.var(axis=0) / variance


@pytest.mark.validate
def test_psglds_running_preconditioner_on_a_row_model_has_the_hand_written_algorithms_variance():
    """Li et al.'s running average drops Γ, so its chains need not have the posterior's variance: the engine's blocks
    against the algorithm written in the test (the same variance, whatever it is), each from 400 chains (a variance ratio with a standard error of 10%; a factor 2 of
    the noise is 100%)."""
    sampler, engine = _row_model_variance("psgld", {"preconditioner": "running"}, 0.002)
    assert isinstance(kernel_of(sampler), Blocks)
    reference = running_psgld_variance_by_hand(GaussianMean(), sampler.alpha, sampler.damping, 0.002, seed=3)
    np.testing.assert_allclose(engine / reference, 1.0, atol=0.35)  # 3.5 standard errors of the ratio


def test_a_model_the_compiler_refuses_is_called_in_python_from_the_compiled_blocks_and_says_so(caplog):
    """The blocks of a model numba cannot compile call its functions in Python (numba's object mode) and give the
    samples of the same model compiled (GaussianMean's gradient, written without the Python object) on the same
    draws."""
    model = Uncompilable()
    sampler = make_sampler("sgld", user_target(model, "Uncompilable", batch_size=10), noise_estimate="zero")
    with caplog.at_level(logging.WARNING):
        fallback = sampler.engine_blocks()
    assert fallback.backend == COMPILED and called_in_python(fallback.source) == ["prior_gradient", "row_gradients"]
    # the reason: what numba could not type, and where in the model's file
    assert any("calls the model's functions in Python" in record.getMessage() and "refuses the model (array(float64"
               in record.getMessage() and 'test_row_models.py", line' in record.getMessage() for record in caplog.records)
    compiled = make_sampler("sgld", user_target(GaussianMean(), "GaussianMean", batch_size=10),
                            noise_estimate="zero").engine_blocks()
    assert called_in_python(compiled.source) == []
    start = sampler.init(np.random.default_rng(0).standard_normal((3, model.dim)), np.random.default_rng(0))
    runs = [blocks(np.random.default_rng(1), start, np.full(20, 0.01), 0) for blocks in (fallback, compiled)]
    assert runs[0].stop == runs[1].stop == 20
    np.testing.assert_allclose(runs[0].theta, runs[1].theta, rtol=1e-12, atol=1e-12)
    # a second model of the class, with other data, has the same compiled calls (cached on disk: one compile per
    # class) and gives its own compiled counterpart's samples
    other = make_sampler("sgld", user_target(Uncompilable(seed=5), "Uncompilable", batch_size=10),
                         noise_estimate="zero").engine_blocks()
    assert other.source[1].key == fallback.source[1].key
    other_compiled = make_sampler("sgld", user_target(GaussianMean(seed=5), "GaussianMean", batch_size=10),
                                  noise_estimate="zero").engine_blocks()
    others = [blocks(np.random.default_rng(1), start, np.full(20, 0.01), 0) for blocks in (other, other_compiled)]
    np.testing.assert_allclose(others[0].theta, others[1].theta, rtol=1e-12, atol=1e-12)


def test_the_stationary_preconditioners_passes_over_the_rows_call_a_refused_model_in_python_too(monkeypatch):
    """pSGLD's stationary V(θ) and Γ take the model's rows through a source of their own (the moments function's):
    the fallback for a model the compiler refuses calls its functions in Python there as well, so the blocks compile
    (before: that source stayed compiled, and the whole run fell to the uncompiled Python path). The compiler is
    stood in for by a check that refuses blocks where either source calls the model's own functions compiled (a
    real compile of these blocks costs about a minute)."""
    def refuses_the_models_compiled_functions(blocks, dim):
        sources = (blocks.source, blocks.parameters[7][0])
        if any(called_in_python(source) != ["prior_gradient", "row_gradients"] for source in sources):
            return "array(float64, 1d, C) has no attribute 'x' (stand-in)"
        return None

    monkeypatch.setattr(Blocks, "compile_error", refuses_the_models_compiled_functions)
    sampler = make_sampler("psgld", user_target(Uncompilable(), "Uncompilable", batch_size=10), noise_estimate="zero")
    fallback = sampler.engine_blocks()
    assert fallback.backend == COMPILED
    assert called_in_python(fallback.parameters[7][0]) == ["prior_gradient", "row_gradients"]


class Tempered(GaussianMean):
    """The same model with its likelihood's gradient scaled by ``self.power``: a method, which each model of the class
    has bound to itself."""

    def __init__(self, power, **kwargs):
        super().__init__(**kwargs)
        self.power = power

    def row_gradients(self, theta, rows):
        return self.power * (rows - theta)

    def row_log_likelihoods(self, theta, rows):
        return -0.5 * self.power * np.sum((rows - theta) ** 2, axis=1)


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_each_block_calls_its_own_models_method_whichever_model_was_built_last():
    """Two models of one class share their compiled calls (one slot, filled at each block's start): a block of the
    model built first, run after the second was built, still calls the first model's method (its samples are the
    same run's before the second existed), and the two models' samples differ."""
    first = make_sampler("sgld", user_target(Tempered(1.0), "Tempered", batch_size=10), noise_estimate="zero")
    blocks = first.engine_blocks()
    assert called_in_python(blocks.source) == ["row_gradients"]
    start = first.init(np.random.default_rng(0).standard_normal((3, 2)), np.random.default_rng(0))
    before = blocks(np.random.default_rng(1), start, np.full(20, 0.01), 0)
    second = make_sampler("sgld", user_target(Tempered(0.5), "Tempered", batch_size=10),
                          noise_estimate="zero").engine_blocks()
    assert second.source[1].key == blocks.source[1].key
    after = blocks(np.random.default_rng(1), start, np.full(20, 0.01), 0)
    np.testing.assert_array_equal(after.theta, before.theta)
    tempered = second(np.random.default_rng(1), start, np.full(20, 0.01), 0)
    assert not np.allclose(tempered.theta, before.theta, rtol=1e-3)


@pytest.mark.parametrize("estimate, running_form", [("running", "full"), ("running", "diagonal"), ("known", "full")])
def test_the_noise_estimates_run_on_the_engine_and_take_the_minibatch_noise_out(estimate, running_form):
    """SGLD with minibatches of 10 of 40 rows: the minibatch noise V = N(N − n)/n·S² (S² the data's variance per
    coordinate, V constant here) is 120·S², and at ε = 0.005 the Euler scheme's stationary variance with V̂ = V is
    2ε/(2εH − ε²H²) (H = N), with nothing subtracted (2ε + ε²V)/(2εH − ε²H²), 30% more. The running estimate
    (Shang et al. 2015 Eq. 18) and the known V(θ) (a pass over all the rows at every step, in the engine's estimator)
    must give the first within 12% (1,000 chains: the variance's standard error is 4.5%) and the zero estimate, on
    the same draws, at least 15% more."""
    model = GaussianMean()
    target = user_target(model, "GaussianMean", batch_size=10)
    mean, _ = model.posterior()
    step_size, precision = 0.005, model.n_data
    noise = model.n_data * (model.n_data - 10) / 10 * model.data.var(axis=0, ddof=1)
    denominator = 2 * step_size * precision - step_size**2 * precision**2
    corrected, uncorrected = 2 * step_size / denominator, (2 * step_size + step_size**2 * noise) / denominator
    assert np.all(uncorrected > 1.25 * corrected)
    variances = {}
    for name in (estimate, "zero"):
        sampler = make_sampler("sgld", target, noise_estimate=name, running_form=running_form)
        assert isinstance(kernel_of(sampler), Blocks)
        rng = np.random.default_rng(4)
        theta0 = mean + np.sqrt(corrected) * rng.standard_normal((1000, model.dim))
        settings = RunOptions(n_steps=600, n_chains=1000, burn_in=300, eval_every=10**9, progress=False)
        outcome = run_chains(sampler, Constant(step_size), settings, rng, theta0=theta0)
        assert outcome.status == "completed"
        variances[name] = outcome.final_theta.var(axis=0)
    np.testing.assert_allclose(variances[estimate] / corrected, 1.0, atol=0.12)
    assert np.all(variances["zero"] / corrected > 1.15)


def test_the_vectorised_view_of_a_row_model_is_its_engine_functions():
    model = GaussianMean()
    target = user_target(model, "GaussianMean", batch_size=5)
    theta = np.array([[0.5, 1.0], [2.0, -1.0]])
    index = np.array([[0, 3, 7], [1, 2, 39]])
    np.testing.assert_allclose(target.log_likelihood_gradients(theta, index),
                               np.stack([model.data[i] - t for t, i in zip(theta, index)]))


class GaussianMeanWithPrior(GaussianMean):
    """The same likelihood with the prior N(0, 4I): a prior term that a dropped or mis-signed prior would show. Its
    log-likelihoods are loops (compiled in 0.2 s; ``np.sum(·, axis=1)`` takes 1.9 s)."""

    @staticmethod
    def row_log_likelihoods(theta, rows):
        out = np.empty(rows.shape[0])
        for i in range(rows.shape[0]):
            total = 0.0
            for j in range(rows.shape[1]):
                total += (rows[i, j] - theta[j]) ** 2
            out[i] = -0.5 * total
        return out

    @staticmethod
    def prior_gradient(theta):
        return -theta / 4.0

    @staticmethod
    def prior_log_density(theta):
        return -np.sum(theta * theta) / 8.0


def test_a_row_model_hands_the_engine_its_own_log_densities():
    """The model's ``row_log_likelihoods`` and ``prior_log_density`` reach the engine's door (as Python and compiled)
    and give U(θ) = ½ Σ_i ‖x_i − θ‖² + ‖θ‖²/8, written out; a model without them hands over neither."""
    model = GaussianMeanWithPrior(n_data=12)
    target = user_target(model, "GaussianMeanWithPrior", batch_size=4)
    functions = target.engine_functions()
    theta = np.random.default_rng(3).normal(1.0, 1.0, size=(3, model.dim))
    by_hand = np.array([0.5 * np.sum((model.data - t) ** 2) + t @ t / 8.0 for t in theta])
    for potential in door_potentials(functions, theta):
        np.testing.assert_allclose(potential, by_hand, rtol=1e-12)
    np.testing.assert_allclose(target.potential(theta), by_hand, rtol=1e-12)

    class WithoutDensities:
        __init__ = GaussianMean.__init__
        row_gradients, prior_gradient = staticmethod(gaussian_examples), staticmethod(flat_prior)

    functions = user_target(WithoutDensities(), "WithoutDensities").engine_functions()
    assert "row_gradients" in functions and not {"row_log_likelihoods", "prior_log_density"} & set(functions)


MEAN, COVARIANCE = np.array([1.0, -0.5]), np.array([[1.0, 0.5], [0.5, 2.0]])
PRECISION = np.linalg.inv(COVARIANCE)


class CorrelatedGaussian:
    """A density model: N(m, Σ) with Σ = [[1, 0.5], [0.5, 2]], its gradient a staticmethod (vectorised, θ (n, 2); the
    compiler freezes the module's arrays in as constants)."""

    dim = 2
    mean, covariance, precision = MEAN, COVARIANCE, PRECISION

    @staticmethod
    def grad_log_density(theta):
        return -(theta - MEAN) @ PRECISION

    def log_density(self, theta):
        centred = theta - self.mean
        return -0.5 * np.sum(centred @ self.precision * centred, axis=1)

    def metric(self):
        return RationalMetric([1.0, 0.6], [0.5, 0.2])


class MethodGaussian(CorrelatedGaussian):
    """The same model with its gradient a method (it has ``self``): called once a step for all the chains, the
    replay's table answering each chain (sgmcmc/engine/replay.py)."""

    def grad_log_density(self, theta):
        return -(theta - self.mean) @ self.precision


@pytest.mark.parametrize("model", [CorrelatedGaussian, MethodGaussian])
def test_a_density_model_samples_its_distribution_on_the_engines_blocks(model):
    """SGLD with gradient noise v = 2 and its known V̂ = vI subtracted: the Euler scheme's stationary law of a Gaussian
    is Gaussian with mean m and a covariance within O(ε) of Σ. 500 chains × 800 steps from N(m, Σ): the mean within 4
    standard errors, the variances within 20% (a factor 2 in the injected noise moves them by 100%). The gradient a
    staticmethod (called per chain from the compiled blocks) or a method (once a step for all the chains, from the
    replay's table)."""
    model = model()
    target = user_target(model, type(model).__name__, noise_variance=2.0)
    sampler = make_sampler("sgld", target, noise_estimate="known")
    blocks = kernel_of(sampler)
    assert isinstance(blocks, Blocks) and (blocks.replay is not None) == isinstance(model, MethodGaussian)
    rng = np.random.default_rng(2)
    theta0 = rng.multivariate_normal(model.mean, model.covariance, size=500)
    settings = RunOptions(n_steps=800, n_chains=500, burn_in=400, eval_every=10**9, progress=False)
    outcome = run_chains(sampler, Constant(0.02), settings, rng, theta0=theta0)
    assert outcome.status == "completed"
    final = outcome.final_theta
    assert np.all(np.abs(final.mean(axis=0) - model.mean) < 4 * np.sqrt(np.diag(model.covariance) / 500))
    np.testing.assert_allclose(final.var(axis=0) / np.diag(model.covariance), 1.0, atol=0.2)


@pytest.mark.parametrize("model", [CorrelatedGaussian, MethodGaussian])
@pytest.mark.parametrize("name", ["sgld", "sgrld"])
def test_a_density_models_block_is_written_from_its_gradient_noise_and_metric(name, model):
    """One step of the engine's block (its source as Python: the compiled block is that source,
    tests/engine/test_driver.py) from scripted normals z₀ (the gradient noise's slot), z₁ (the injected noise's)
    against the Euler step written here from what the model hands over: ∇Ũ = (θ − m)Σ⁻¹ + √v z₀ (v = 0.5, known and
    subtracted), and for SGRLD the model's own rational metric S = a/√(1 + bθ²), a = (1, 0.6), b = (0.5, 0.2),
    written out: θ − εS²∇Ũ + ε·2SS' + √(ε(2S² − εvS⁴)) z₁ (SGLD: S = 1). The gradient a staticmethod or a method
    (the replay's table); not the numpy steps."""
    target = user_target(model(), model.__name__, noise_variance=0.5)
    sampler = make_sampler(name, target, noise_estimate="known")
    theta = np.random.default_rng(0).standard_normal((3, 2))
    state = sampler.init(theta, np.random.default_rng(1))
    gradient_noise, injected = np.random.default_rng(7).standard_normal((2, 3, 2))
    step_size, variance = 0.02, 0.5
    if name == "sgrld":
        a, b = np.array([1.0, 0.6]), np.array([0.5, 0.2])
        root, derivative = a / np.sqrt(1 + b * theta**2), -a * b * theta * (1 + b * theta**2) ** -1.5
    else:
        root, derivative = np.ones_like(theta), np.zeros_like(theta)
    gradient = (theta - MEAN) @ PRECISION + np.sqrt(variance) * gradient_noise
    expected = (theta - step_size * root**2 * gradient + step_size * 2 * root * derivative
                + np.sqrt(step_size * (2 * root**2 - step_size * variance * root**4)) * injected)
    moved = engine_step(sampler, state, step_size, gradient_noise, injected)
    np.testing.assert_allclose(moved.theta, expected, rtol=1e-12, atol=1e-13)
    assert np.abs(moved.theta - theta).min() > 1e-3


def test_control_variates_on_a_row_model_run_on_the_engine_and_count_their_gradients():
    """Control variates about the posterior mode (Baker et al. 2019) on the Gaussian mean: h_i = g_i(θ) − g_i(θ̂) +
    ḡ(θ̂) = x̄ − θ for every row, so ∇Ũ is exact and SGLD's variance at ε = 0.005 is the Euler scheme's 2ε/(2εH − ε²H²)
    with no minibatch noise (the plain minibatch, 30% more: the test above); each step counts 2n per-example
    gradients."""
    model = GaussianMean()
    target = make_estimator("control_variates", user_target(model, "GaussianMean", batch_size=10))
    mean, _ = model.posterior()
    np.testing.assert_allclose(target.centre[0], mean, rtol=1e-6)
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    assert isinstance(kernel_of(sampler), Blocks)
    step_size, precision = 0.005, model.n_data
    exact = 2 * step_size / (2 * step_size * precision - step_size**2 * precision**2)
    rng = np.random.default_rng(4)
    theta0 = mean + np.sqrt(exact) * rng.standard_normal((1000, model.dim))
    before = target.cost()["gradient_evaluations_per_chain"]
    settings = RunOptions(n_steps=600, n_chains=1000, burn_in=300, eval_every=10**9, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, rng, theta0=theta0)
    assert outcome.status == "completed"
    np.testing.assert_allclose(outcome.final_theta.var(axis=0) / exact, 1.0, atol=0.12)
    assert target.cost()["gradient_evaluations_per_chain"] - before == 2 * 10 * 600
