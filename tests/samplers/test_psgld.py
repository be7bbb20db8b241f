"""pSGLD (Li, Chen, Carlson & Carin 2016), with Γ (``psgld``) and without it as published (``psgld_no_gamma``).

1. The engine's step equals a hand-written Algorithm 1 of Li et al. in their own convention (ε_WT = 2ε, ḡ = ∇log p = −∇Ũ,
   noise N(0, ε_WT G), no noise correction) for the same random numbers: the running RMSProp average over several
   steps, and the stationary preconditioner V = ∇U² + σ² with Γ by central differences of the hand-written G(θ).
2. ``psgld`` samples gaussian_1d, double_well and correlated_2d within the tolerances of test_sampling_accuracy.py;
   with Γ's sign flipped it fails them.
3. ``psgld_no_gamma`` is measurably biased: its E θ² moves to the value of the density its continuous dynamics
   leave invariant, exp(−U)·(λ + √(U′² + σ²)) (1D Fokker–Planck with Γ = 0), far outside both psgld's error and
   the standard error over chains.
4. On a user's data model the stationary preconditioner (D(θ) over all the rows at every step) samples the exact
   Gaussian posterior; without Γ its variance is measurably too large.
"""

import numpy as np
import pytest

from sgmcmc.config import RunOptions
from sgmcmc.engine.driver import PYTHON
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.user import user_target
from tests.deliberate_bugs import change_the_blocks, with_gamma_flipped
from tests.helpers import build, engine_step, sample_and_score
from tests.targets.test_row_models import GaussianMeanWithPrior

KL_1D, MOMENT_1D = 0.005, 0.05  # tests/samplers/test_sampling_accuracy.py
KL_2D, MOMENT_2D = 0.01, 0.05
SIGMA2 = 4.0  # the toy targets' gradient-noise variance (configs/target/*.yaml)
DOUBLE_WELL = (lambda x: x**4 - 2 * x**2, lambda x: 4 * x**3 - 4 * x)


# -- 1. the step against Li et al.'s Algorithm 1 --------------------------------------------------------------------
def algorithm_1(theta, log_posterior_gradients, normals, epsilon_wt, alpha, damping):
    """Li et al. (2016), Algorithm 1, as printed (Γ dropped), one line per line: V ← αV + (1 − α)ḡ⊙ḡ,
    G ← diag(1 ⊘ (λ1 + √V)), θ ← θ + (ε/2)Gḡ + N(0, εG); V starts at 0. Returns the path of θ."""
    V = np.zeros_like(theta)
    path = []
    for g_bar_of, normal in zip(log_posterior_gradients, normals):
        g_bar = g_bar_of(theta)
        V = alpha * V + (1 - alpha) * g_bar * g_bar
        G = 1.0 / (damping + np.sqrt(V))
        theta = theta + epsilon_wt / 2 * G * g_bar + np.sqrt(epsilon_wt * G) * normal
        path.append(theta)
    return path


def test_running_preconditioner_is_algorithm_1():
    rng = np.random.default_rng(0)
    n, n_steps, step_size, alpha, damping = 6, 5, 0.03, 0.9, 1e-3
    theta0 = rng.normal(size=(n, 2))
    gradient_noise = [rng.normal(size=(n, 2)) for _ in range(n_steps)]
    injected = [rng.normal(size=(n, 2)) for _ in range(n_steps)]
    target_noise = 2.0  # σ of ∇Ũ = ∇U + σ·N(0, I) on correlated_2d with noise_variance 4

    def log_posterior_gradient(noise):
        def g_bar(theta):
            x, y = theta[:, 0], theta[:, 1]
            residual = 4 * (y + 1.2) - x**2
            exact = np.stack([0.4 * x**3 - 2 * x * residual, 4 * residual], axis=1)  # ∇U of correlated_2d
            return -(exact + target_noise * noise)
        return g_bar

    expected = algorithm_1(theta0, [log_posterior_gradient(e) for e in gradient_noise], injected, 2 * step_size,
                           alpha, damping)
    for name in ("psgld", "psgld_no_gamma"):  # the running preconditioner's Γ is 0 in both
        sampler = build(name, "correlated_2d", preconditioner="running", alpha=alpha, damping=damping,
                        noise_estimate="zero")
        state = sampler.init(theta0, rng)
        for k in range(n_steps):  # a block a step: V_t handed on in the state
            state = engine_step(sampler, state, step_size, gradient_noise[k], injected[k])
            np.testing.assert_allclose(state.theta, expected[k], rtol=1e-12, atol=1e-12, err_msg=f"{name} step {k}")


def _hand_written_stationary_step(theta, g_bar, normal, epsilon_wt, damping, gradient, with_gamma):
    """Algorithm 1's step with V at its stationary value V(θ) = ∇U(θ)² + σ² and, ``with_gamma``, the Γ Li et al.'s
    Eq. 4 defines, Γ_i = ∂G_ii/∂θ_i, by central differences of G(θ) written here."""
    def G(x):
        return 1.0 / (damping + np.sqrt(gradient(x) ** 2 + SIGMA2))

    gamma = np.zeros_like(theta)
    if with_gamma:
        h = 1e-6
        for i in range(theta.shape[1]):
            shift = np.zeros_like(theta)
            shift[:, i] = h
            gamma[:, i] = (G(theta + shift)[:, i] - G(theta - shift)[:, i]) / (2 * h)
    return theta + epsilon_wt / 2 * (G(theta) * g_bar + gamma) + np.sqrt(epsilon_wt * G(theta)) * normal


@pytest.mark.parametrize("target_name", ["double_well", "correlated_2d"])
@pytest.mark.parametrize("name", ["psgld", "psgld_no_gamma"])
def test_stationary_preconditioner_is_algorithm_1_with_or_without_gamma(name, target_name):
    rng = np.random.default_rng(1)
    sampler = build(name, target_name, noise_estimate="zero", damping=0.1)
    dim = sampler.target.dim
    theta = rng.normal(size=(8, dim))
    gradient_noise, injected = rng.normal(size=(8, dim)), rng.normal(size=(8, dim))
    gradient = sampler.target.gradient  # the formula ∇U (checked against differences of U in tests/targets)
    g_bar = -(gradient(theta) + 2.0 * gradient_noise)
    expected = _hand_written_stationary_step(theta, g_bar, injected, 2 * 0.05, 0.1, gradient, name == "psgld")
    state = engine_step(sampler, sampler.init(theta, rng), 0.05, gradient_noise, injected)
    np.testing.assert_allclose(state.theta, expected, rtol=1e-7, atol=1e-9)
    # Γ is not negligible at these points: the two samplers' steps differ by εΓ
    other = build("psgld_no_gamma" if name == "psgld" else "psgld", target_name, noise_estimate="zero", damping=0.1)
    moved = engine_step(other, other.init(theta, rng), 0.05, gradient_noise, injected)
    assert np.max(np.abs(moved.theta - state.theta)) > 1e-3


# -- 2. psgld samples the target; Γ with the wrong sign does not -------------------------------------------------
@pytest.mark.parametrize("target_name", ["gaussian_1d", "double_well"])
def test_psgld_matches_exact_1d_density(target_name):
    check = sample_and_score(build("psgld", target_name), 0.02, 3000)
    assert check.passes(KL_1D, MOMENT_1D), check


def test_psgld_matches_exact_2d_density():
    check = sample_and_score(build("psgld", "correlated_2d", {"initial_spread": 1.0}), 0.01, 4000)
    assert check.passes(KL_2D, MOMENT_2D), check


def test_psgld_with_gamma_sign_flipped_fails(monkeypatch):
    """The engine's blocks with Γ's sign flipped (tests/deliberate_bugs.py), on the double well (a block compiled
    for the bug: one target)."""
    change_the_blocks(monkeypatch, with_gamma_flipped)
    check = sample_and_score(build("psgld", "double_well"), 0.02, 3000)
    assert not check.passes(KL_1D, MOMENT_1D) and check.second_moment_error > 0.1, check


# -- 3. psgld_no_gamma is biased, by the amount the Fokker–Planck equation predicts --------------------------------
def no_gamma_second_moment(potential, gradient, damping=1e-5):
    """E θ² under exp(−U)(λ + √(U′² + σ²)), the density that θ' = θ − εDŨ′ + N(0, 2εD) leaves invariant as ε → 0
    (1D: zero probability flux, D p ∝ exp(−U)), by quadrature on a fine grid."""
    x = np.linspace(-5, 5, 400001)
    weight = np.exp(-potential(x)) * (damping + np.sqrt(gradient(x) ** 2 + SIGMA2))
    return float(np.sum(x**2 * weight) / np.sum(weight))


def second_moment_per_chain(sampler, step_size=0.02, n_steps=3000, n_chains=1000, seed=1):
    """Each chain's time average of θ² after a quarter burn-in (independent across chains)."""
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 4, eval_every=n_steps, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed))
    assert outcome.status == "completed", outcome.error
    return np.mean(outcome.samples[..., 0] ** 2, axis=1)


def test_psgld_no_gamma_is_biased_on_the_double_well_where_psgld_is_not():
    """Measured (seed 1, 1000 chains × 2250 kept steps, ε = 0.02): E θ² = 0.833 exactly; psgld within 0.02 of it,
    psgld_no_gamma about 0.23 above it, at the 1.065 of the no-Γ density, with a standard error over chains of
    ~0.005. The bounds: psgld within the accuracy tests' 0.05; psgld_no_gamma more than 0.15 off (and more than 20
    standard errors), and within 0.05 of the predicted 1.065."""
    exact = build("psgld", "double_well").target.exact_moments()[1][0]
    predicted = no_gamma_second_moment(*DOUBLE_WELL)
    with_gamma = second_moment_per_chain(build("psgld", "double_well"))
    without = second_moment_per_chain(build("psgld_no_gamma", "double_well"))
    error = {name: float(np.mean(values) - exact) for name, values in (("psgld", with_gamma), ("no_gamma", without))}
    standard_error = float(np.std(without, ddof=1) / np.sqrt(without.size))
    assert abs(error["psgld"]) < MOMENT_1D, error
    assert error["no_gamma"] > 0.15 and error["no_gamma"] > 20 * standard_error, (error, standard_error)
    assert abs(np.mean(without) - predicted) < 0.05, (np.mean(without), predicted)


# -- 4. the stationary preconditioner on a data model ---------------------------------------------------------------
@pytest.mark.validate  # two blocks compiled for the stationary preconditioner on a row model (about 45 s)
def test_the_stationary_preconditioner_samples_a_data_models_posterior_and_without_gamma_does_not():
    """A user's row model, x_i ~ N(θ, I) with the prior N(0, 4I), N = 40, d = 2, minibatches of 10: the posterior is
    N(Σ_i x_i/(N + 1/4), I/(N + 1/4)). With D(θ) over all the rows at every step and the known V(θ) subtracted
    (ε = 0.02, 200 chains × 1,000 steps, 400 burnt in), psgld's posterior mean is within 0.03 (a fifth of a posterior
    sd) and its variance within 15% in each coordinate (measured: 1-4% above, the Euler step's; twice the injected
    noise would double it), while psgld_no_gamma's variance is more than 15% above (measured: 22-28%)."""
    model = GaussianMeanWithPrior(n_data=40, dim=2)
    mean, variance = model.data.sum(axis=0) / 40.25, 1.0 / 40.25
    settings = RunOptions(n_steps=1000, n_chains=200, burn_in=400, eval_every=1000, progress=False)
    ratios = {}
    for name in ("psgld", "psgld_no_gamma"):
        sampler = make_sampler(name, user_target(model, "GaussianMeanWithPrior", batch_size=10),
                               noise_estimate="known", preconditioner="stationary")
        outcome = run_chains(sampler, Constant(0.02), settings, np.random.default_rng(1))
        assert outcome.status == "completed", outcome.error
        samples = outcome.samples.reshape(-1, 2)
        np.testing.assert_allclose(samples.mean(axis=0), mean, atol=0.03)
        ratios[name] = samples.var(axis=0) / variance
    assert np.all(np.abs(ratios["psgld"] - 1.0) < 0.15), ratios
    assert np.all(ratios["psgld_no_gamma"] > 1.15), ratios


def test_the_stationary_preconditioner_refuses_svrg_and_names_the_remedy():
    """SVRG's V(θ) is about each chain's own centre, which jumps at every renewal: D(θ) would not be a function of θ."""
    target = make_estimator("svrg", user_target(GaussianMeanWithPrior(), batch_size=8))
    with pytest.raises(ValueError, match="gradient=control_variates .* or sampler.preconditioner=running"):
        make_sampler("psgld", target)
    assert make_sampler("psgld", target, preconditioner="running").engine_blocks(PYTHON) is not None


def test_the_default_noise_estimate_is_known_with_the_stationary_preconditioner_and_zero_with_the_running_one():
    """The running average starts at V₀ = 0, so the first step's D = 1/(λ + √(0.01 ĝ²)) ≈ 10/|ĝ|, and ε(2D − εDV̂D)
    with the double well's V̂ = 4 is PSD only for |ĝ| ≥ 0.4 at ε = 0.02: with the noise known, a run of 100 chains fails
    at step 1; at the default (zero, Li et al.'s) it completes."""
    target = make_target("double_well")
    assert make_sampler("psgld", target).noise_estimate == "known"
    settings = RunOptions(n_steps=20, n_chains=100, burn_in=10, eval_every=20, progress=False, backend=PYTHON)
    statuses = {}
    for noise in (None, "known"):
        sampler = make_sampler("psgld", target, preconditioner="running", noise_estimate=noise)
        statuses[sampler.noise_estimate] = run_chains(sampler, Constant(0.02), settings,
                                                      np.random.default_rng(0)).status
    assert statuses == {"zero": "completed", "known": "failed"}
