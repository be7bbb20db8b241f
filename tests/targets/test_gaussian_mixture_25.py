"""gaussian_mixture_25 (Zhang et al. 2020 Fig. 2; the authors' mog25.m): the density is normalised (quadrature mode
by mode, where the generic dblquad of test_synthetic_targets.py also runs), the gradient matches finite differences
between and at the modes, the exact moments and draws, the gradient noise N(0, I), and the two starts."""

import numpy as np
import pytest

from sgmcmc.targets import make_target
from tests.helpers import numerical_gradient


@pytest.fixture
def target():
    return make_target("gaussian_mixture_25")


def test_density_is_normalised_by_quadrature(target):
    """∫ π over [−7, 7]² by 80 × 80-point Gauss–Legendre quadrature on each 2 × 2 cell (the mass is in 25 narrow
    peaks, one per cell centre) is 1; the mass outside lies beyond 17σ of every mode."""
    nodes, weights = np.polynomial.legendre.leggauss(80)
    total = 0.0
    for x0 in np.arange(-7.0, 7.0, 2.0):
        for y0 in np.arange(-7.0, 7.0, 2.0):
            x, y = np.meshgrid(x0 + 1.0 + nodes, y0 + 1.0 + nodes, indexing="ij")
            density = np.exp(target.log_density(np.column_stack([x.ravel(), y.ravel()]))).reshape(x.shape)
            total += weights @ density @ weights
    assert total == pytest.approx(1.0, abs=1e-10)
    # by hand at a centre: w / (2π σ²) from its own mode, the neighbours' exp(−4/(2σ²)) negligible
    assert np.exp(target.log_density(np.array([[2.0, -4.0]])))[0] == pytest.approx(0.04 / (2 * np.pi * 0.03), rel=1e-9)


def test_gradient_matches_finite_differences(target):
    rng = np.random.default_rng(0)
    theta = np.concatenate([rng.uniform(-5, 5, size=(20, 2)), target.centres[:3] + 0.1, [[1.0, 1.0], [1.0, 0.2]]])
    np.testing.assert_allclose(target.gradient(theta), numerical_gradient(target.potential, theta, 1e-6),
                               rtol=1e-6, atol=1e-5)
    np.testing.assert_allclose(target.gradient(target.centres), 0.0, atol=1e-12)  # each centre is a stationary point
    # far from every mode ∇U = (θ − nearest µ)/σ²: finite, no overflow of the responsibilities
    np.testing.assert_allclose(target.gradient(np.array([[100.0, -100.0]])), [[(100 - 4) / 0.03, (-100 + 4) / 0.03]])


def test_exact_moments_and_draws(target):
    mean, second = target.exact_moments()
    np.testing.assert_allclose(mean, 0.0)
    np.testing.assert_allclose(second, 8.03)
    draws = target.exact_sample(400_000, np.random.default_rng(1))
    np.testing.assert_allclose(draws.mean(axis=0), 0.0, atol=0.02)
    np.testing.assert_allclose((draws**2).mean(axis=0), 8.03, rtol=0.01)


def test_gradient_noise_is_the_authors_standard_normal(target):
    theta = np.zeros((200_000, 2))
    noise = target.stochastic_gradient(theta, np.random.default_rng(3)) - target.gradient(theta)
    np.testing.assert_allclose(np.cov(noise.T), np.eye(2), atol=0.02)
    assert target.noise_covariance(theta).tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_starts(target):
    modes = target.initial_position(50, np.random.default_rng(0))
    np.testing.assert_array_equal(modes[:25], target.centres)
    np.testing.assert_array_equal(modes[25:], target.centres)
    uniform = make_target("gaussian_mixture_25", start="uniform", initial_range=10.0).initial_position(
        20_000, np.random.default_rng(0))
    assert uniform.min() >= -10 and uniform.max() <= 10 and abs(uniform.mean()) < 0.1 and uniform.std() > 5.6
    with pytest.raises(ValueError, match="start"):
        make_target("gaussian_mixture_25", start="corners")


def test_the_kl_grid_tells_twice_the_temperature_from_the_target(target):
    """On the 0.2 × 0.2 grid, 10⁶ exact draws score KL(p‖q) well below the defaults' bound 0.01, and draws whose modes
    have twice the variance (a factor 2 in the noise: twice the temperature) far above it."""
    from sgmcmc.evaluation import Evaluator

    evaluator, rng = Evaluator(target), np.random.default_rng(4)
    assert evaluator.score(target.exact_sample(10**6, rng))["kl_pq"] < 0.004
    hot = target.centres[rng.integers(25, size=10**6)] + np.sqrt(2 * 0.03) * rng.standard_normal((10**6, 2))
    assert evaluator.score(hot)["kl_pq"] > 0.1


