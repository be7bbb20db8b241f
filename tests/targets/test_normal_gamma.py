"""T7, the Normal-Gamma posterior (SPEC §2 T7, §4.8; Shang et al. 2015 §4.1): U, gradients, exact posterior."""

import warnings

import numpy as np
import pytest
from scipy import integrate, stats

from sgmcmc.targets.normal_gamma import NormalGamma
from tests.helpers import door_potentials


@pytest.fixture(scope="module")
def target():
    return NormalGamma()


def _log_prior(theta):
    mu, gamma = theta[:, 0], theta[:, 1]
    return stats.norm.logpdf(mu, 0.0, 1.0 / np.sqrt(gamma)) + stats.gamma.logpdf(gamma, a=1.0, scale=1.0)


def _log_likelihood(theta, x):
    return np.sum(stats.norm.logpdf(x[None, :], theta[:, :1], 1.0 / np.sqrt(theta[:, 1:2])), axis=1)


def _points(seed, n=8):
    rng = np.random.default_rng(seed)
    return np.column_stack([rng.uniform(-1.0, 1.0, n), rng.uniform(0.3, 2.0, n)])


def _finite_differences(function, theta, step=1e-6):
    numerical = np.zeros_like(theta)
    for j in range(theta.shape[1]):
        shift = np.zeros(theta.shape[1])
        shift[j] = step
        numerical[:, j] = (function(theta + shift) - function(theta - shift)) / (2 * step)
    return numerical


def test_data_are_standard_normals_from_the_seed():
    np.testing.assert_array_equal(NormalGamma().data, np.random.default_rng(0).standard_normal(100))
    other = NormalGamma(n_data=50, data_seed=4).data
    np.testing.assert_array_equal(other, np.random.default_rng(4).standard_normal(50))


def test_potential_is_the_negative_log_posterior_up_to_a_constant(target):
    theta = _points(0)
    difference = target.potential(theta) + _log_prior(theta) + _log_likelihood(theta, target.data)
    np.testing.assert_allclose(difference, difference[0], atol=1e-9)


def test_gradient_matches_finite_differences_of_potential(target):
    theta = _points(1)
    numerical = _finite_differences(target.potential, theta)
    np.testing.assert_allclose(target.gradient(theta), numerical, rtol=1e-6, atol=1e-5)


def test_prior_and_per_datum_gradients_match_finite_differences(target):
    theta = _points(2)
    np.testing.assert_allclose(target.log_prior_gradient(theta), _finite_differences(_log_prior, theta),
                               rtol=1e-6, atol=1e-6)
    index = np.tile([3, 17, 42], (theta.shape[0], 1))
    per_datum = target.log_likelihood_gradients(theta, index)
    for k, i in enumerate([3, 17, 42]):
        numerical = _finite_differences(lambda t: _log_likelihood(t, target.data[i : i + 1]), theta)
        np.testing.assert_allclose(per_datum[:, k], numerical, rtol=1e-6, atol=1e-6)


def test_stochastic_gradient_is_spec_t7_formula(target):
    theta = _points(3)
    index = target.minibatch(np.random.default_rng(9), theta.shape[0])
    gradient = target.stochastic_gradient(theta, np.random.default_rng(9))
    mu, gamma, x = theta[:, 0], theta[:, 1], target.data[index]
    expected = np.column_stack([101 * mu * gamma - gamma * 10 * x.sum(axis=1),
                                1 - 101 / (2 * gamma) + mu**2 / 2 + 10 / 2 * np.sum((x - mu[:, None]) ** 2, axis=1)])
    np.testing.assert_allclose(gradient, expected, rtol=1e-12)


def test_nonpositive_precision_is_outside_the_support_without_warnings(target):
    theta = np.array([[0.0, 0.0], [0.3, -0.5], [0.1, 1e-300], [0.1, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        potential, log_density = target.potential(theta), target.log_density(theta)
    assert np.all(potential[:2] == np.inf) and np.all(np.isfinite(potential[2:]))
    assert np.all(log_density[:2] == -np.inf) and np.all(np.isfinite(log_density[2:]))


def test_posterior_parameters_follow_spec(target):
    x = target.data
    n, mean = x.size, x.mean()
    parameters = target.posterior_parameters()
    assert parameters == pytest.approx({"kappa_N": n + 1, "mu_N": n * mean / (n + 1), "alpha_N": 1 + n / 2,
                                        "beta_N": 1 + 0.5 * np.sum((x - mean) ** 2) + n * mean**2 / (2 * (n + 1))})


def test_log_density_is_normalised_and_consistent_with_potential(target):
    mass, _ = integrate.dblquad(lambda g, m: np.exp(target.log_density(np.array([[m, g]])))[0], -1.0, 1.0, 0.2, 2.5,
                                epsabs=1e-10)
    assert mass == pytest.approx(1.0, abs=1e-6)
    theta = _points(4)
    difference = target.log_density(theta) + target.potential(theta)
    np.testing.assert_allclose(difference, difference[0], atol=1e-9)


def test_marginals_integrate_the_joint(target):
    t_marginal, gamma_marginal = target.marginals()
    for mu in [-0.2, 0.0, 0.08, 0.3]:
        value, _ = integrate.quad(lambda g: np.exp(target.log_density(np.array([[mu, g]])))[0], 0.0, np.inf)
        assert value == pytest.approx(t_marginal.pdf(mu), rel=1e-6)
    for gamma in [0.7, 1.0, 1.3]:
        value, _ = integrate.quad(lambda m: np.exp(target.log_density(np.array([[m, gamma]])))[0], -np.inf, np.inf)
        assert value == pytest.approx(gamma_marginal.pdf(gamma), rel=1e-6)


def test_exact_moments_are_the_normal_gamma_moments(target):
    p = target.posterior_parameters()
    kappa, mu_n, alpha, beta = p["kappa_N"], p["mu_N"], p["alpha_N"], p["beta_N"]
    mean, second = target.exact_moments()
    np.testing.assert_allclose(mean, [mu_n, alpha / beta], rtol=1e-12)
    np.testing.assert_allclose(second, [beta / (kappa * (alpha - 1)) + mu_n**2, alpha / beta**2 + (alpha / beta) ** 2],
                               rtol=1e-12)


def test_exact_sample_has_the_exact_marginals(target):
    sample = target.exact_sample(20000, np.random.default_rng(0))
    assert sample.shape == (20000, 2)
    for j, marginal in enumerate(target.marginals()):
        assert stats.kstest(sample[:, j], marginal.cdf).pvalue > 1e-3
    # and not those of a slightly wrong posterior
    assert stats.kstest(1.05 * sample[:, 1], target.marginals()[1].cdf).pvalue < 1e-6


def test_reflect_flips_nonpositive_precision_and_marks_it(target):
    theta = np.array([[0.0, 1.0], [-0.1, -0.5], [0.2, 0.0], [-1.0, 2.0]])
    reflected, mask = target.reflect(theta)
    np.testing.assert_array_equal(reflected, [[0.0, 1.0], [-0.1, 0.5], [0.2, 0.0], [-1.0, 2.0]])
    np.testing.assert_array_equal(mask, [[False, False], [False, True], [False, True], [False, False]])
    np.testing.assert_array_equal(mask.sum(axis=1), [0, 1, 1, 0])  # reflections per chain
    assert theta[1, 1] == -0.5  # input untouched


def test_initial_position_histogram_grid_and_attributes():
    target = NormalGamma()
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(target.initial_position(3, rng), [[0.0, 1.0]] * 3)
    assert rng.random() == np.random.default_rng(0).random()
    np.testing.assert_array_equal(NormalGamma(initial_position=(0.5, 2.0)).initial_position(2, rng), [[0.5, 2.0]] * 2)
    edges_mu, edges_gamma = target.histogram_edges()
    np.testing.assert_allclose(edges_mu, np.linspace(-0.5, 0.5, 101))
    np.testing.assert_allclose(edges_gamma, np.linspace(0.5, 1.5, 101))
    assert (target.name, target.dim, target.n_data, target.batch_size) == ("normal_gamma", 2, 100, 10)
    assert target.has_exact_density


@pytest.mark.parametrize("params, message", [({"batch_size": 0}, "batch_size must be an integer in 1..100"),
                                             ({"batch_size": 101}, "batch_size must be an integer in 1..100"),
                                             ({"n_data": 1, "batch_size": 1}, "n_data must be an integer >= 2"),
                                             ({"initial_position": (0.0, 0.0)}, "initial_position"),
                                             ({"initial_position": (0.0, 1.0, 2.0)}, "initial_position")])
def test_invalid_parameters_are_rejected(params, message):
    with pytest.raises(ValueError, match=message):
        NormalGamma(**params)


def test_engine_functions_are_the_numpy_gradients_and_reflection(target):
    """What Normal-Gamma hands the engine, on one chain, is its numpy per-datum g, ∇log p and reflection (with the
    momentum flip and the count of reflected coordinates)."""
    functions = target.engine_functions()
    assert functions["n_data"] == target.n_data and functions["data"].shape == (target.n_data, 1)
    theta, index = _points(5), np.array([3, 17, 42, 99])
    for chain in theta:
        np.testing.assert_allclose(functions["row_gradients"](chain, functions["data"][index]),
                                   target.log_likelihood_gradients(chain[None], index[None])[0], rtol=1e-14)
        np.testing.assert_allclose(functions["prior_gradient"](chain), target.log_prior_gradient(chain[None])[0],
                                   rtol=1e-14)
    points = np.array([[0.0, 1.0], [-0.1, -0.5], [0.2, 0.0], [-1.0, 2.0]])
    expected, mask = target.reflect(points)
    for point, reflected, flipped in zip(points, expected, mask):
        theta, momentum, empty = point.copy(), np.array([0.4, -0.7]), np.zeros(0)
        assert functions["reflect"](theta, momentum) == flipped.sum()
        np.testing.assert_array_equal(theta, reflected)
        np.testing.assert_array_equal(momentum, np.where(flipped, -1.0, 1.0) * [0.4, -0.7])
        theta = point.copy()
        assert functions["reflect"](theta, empty) == flipped.sum()  # SGLD: no momentum
        np.testing.assert_array_equal(theta, reflected)


def test_the_engines_door_gives_the_potential_and_infinity_outside_the_support():
    """U = −Σ_i log p(x_i | θ) − log p(θ) from the door's ``row_log_likelihoods`` and ``prior_log_density`` (as Python
    and compiled) is :meth:`NormalGamma.potential` at three points, and +∞ where γ < 0 (each term −∞, not NaN)."""
    target = NormalGamma(n_data=20)
    functions = target.engine_functions()
    theta = np.vstack([_points(6, n=3), [[0.3, -0.5]]])
    expected = target.potential(theta)
    assert np.all(np.isfinite(expected[:3])) and expected[3] == np.inf
    for potential in door_potentials(functions, theta):
        np.testing.assert_allclose(potential, expected, rtol=1e-10)
    assert functions["prior_log_density"](theta[3]) == -np.inf
    np.testing.assert_array_equal(functions["row_log_likelihoods"](theta[3], functions["data"][:4]), -np.inf)


@pytest.mark.validate  # Normal-Gamma's blocks compiled for this test alone (seconds each): make test took 643 s
def test_sghmc_on_the_engine_samples_the_exact_posterior():
    """SGHMC as Table 1 runs it (theta_first, minibatches of 10, the running noise estimate subtracted) in compiled
    blocks, 2,000 chains started from exact posterior draws, 400 steps at h = 0.005 with C = 20 (with C = 10 a first
    minibatch's covariance makes ε(2C − εΣ̂) indefinite in some chain): the final draws keep the exact moments
    (Normal-Gamma is conjugate). Each chain is independent, so the means are within 4 standard errors and the
    variances within 12% (their standard error is 3%; measured 1% and 3% off): a factor 2 in the injected noise
    moves them by about 100%."""
    from sgmcmc.engine.blocks import kernel_of
    from sgmcmc.engine.driver import Blocks
    from sgmcmc.config import RunOptions
    from sgmcmc.runner import run_chains
    from sgmcmc.samplers import make_sampler
    from sgmcmc.schedules import Constant

    target = NormalGamma()
    sampler = make_sampler("sghmc", target, integrator="theta_first", noise_estimate="running", friction=20.0)
    assert isinstance(kernel_of(sampler), Blocks)
    rng = np.random.default_rng(4)
    chains = 2000
    settings = RunOptions(n_steps=400, n_chains=chains, burn_in=200, eval_every=10**9, progress=False)
    outcome = run_chains(sampler, Constant(0.005), settings, rng, theta0=target.exact_sample(chains, rng))
    assert outcome.status == "completed"
    mean, second = target.exact_moments()
    variance = second - mean**2
    final = outcome.final_theta
    assert np.all(np.abs(final.mean(axis=0) - mean) < 4 * np.sqrt(variance / chains))
    np.testing.assert_allclose(final.var(axis=0) / variance, 1.0, atol=0.12)
