"""DataTarget: minibatches without replacement, ∇Ũ, full-data ∇U, S²(θ) and the finite-population noise covariance."""

import numpy as np
import pytest

from scipy import stats

from sgmcmc.targets.data import DataTarget
from sgmcmc.targets.normal_gamma import NormalGamma
from tests.helpers import numerical_gradient


class GaussianMean(DataTarget):
    """x_i ~ N(θ, I) in 3D with prior N(0, I): g_i = x_i − θ, S²(θ) = sample covariance of the x_i."""

    name = "gaussian_mean"
    dim = 3

    def __init__(self, n_data=7, batch_size=3):
        super().__init__(n_data, batch_size)
        self.data = np.random.default_rng(5).normal(size=(n_data, 3)) * [1.0, 2.0, 0.5]

    def potential(self, theta):
        return 0.5 * np.sum((self.data[None] - theta[:, None]) ** 2, axis=(1, 2)) + 0.5 * np.sum(theta**2, axis=1)

    def log_likelihood_gradients(self, theta, index):
        return self.data[index] - theta[:, None, :]

    def log_prior_gradient(self, theta):
        return -theta


THETA = np.array([[0.3, 0.8]])


def test_data_target_is_abstract():
    with pytest.raises(TypeError):
        DataTarget(10, 2)


@pytest.mark.parametrize("params, name", [({"n_data": 1, "batch_size": 1}, "n_data"),
                                          ({"n_data": 7, "batch_size": 0}, "batch_size"),
                                          ({"n_data": 7, "batch_size": 8}, "batch_size"),
                                          ({"n_data": 7, "batch_size": 2.5}, "batch_size"),
                                          ({"n_data": "ten", "batch_size": 2}, "n_data")])
def test_invalid_sizes_are_rejected(params, name):
    with pytest.raises(ValueError, match=name):
        GaussianMean(**params)


def test_minibatch_rows_are_distinct_indices_of_the_data():
    target = NormalGamma()
    index = target.minibatch(np.random.default_rng(0), 5000)
    assert index.shape == (5000, 10) and np.issubdtype(index.dtype, np.integer)
    assert index.min() >= 0 and index.max() < 100
    assert np.all(np.diff(np.sort(index, axis=1), axis=1) > 0)


def test_minibatch_depends_on_the_rng_only():
    target = NormalGamma()
    first = target.minibatch(np.random.default_rng(3), 50)
    np.testing.assert_array_equal(first, NormalGamma().minibatch(np.random.default_rng(3), 50))
    assert not np.array_equal(first, target.minibatch(np.random.default_rng(4), 50))


def test_minibatch_indices_are_uniform():
    index = NormalGamma().minibatch(np.random.default_rng(1), 20000)
    counts = np.bincount(index.ravel(), minlength=100)
    assert stats.chisquare(counts).pvalue > 1e-3


def test_minibatch_subsets_are_uniform():
    """Every 3-subset of 6 points equally likely (C(6, 3) = 20 cells)."""
    index = GaussianMean(n_data=6, batch_size=3).minibatch(np.random.default_rng(2), 60000)
    code = np.sum(2 ** np.sort(index, axis=1), axis=1)  # a subset as a bit mask
    _, counts = np.unique(code, return_counts=True)
    assert counts.size == 20
    assert stats.chisquare(counts).pvalue > 1e-3


def test_full_batch_takes_all_indices_draws_nothing_and_is_exact():
    target = NormalGamma(batch_size=100)
    rng = np.random.default_rng(0)
    np.testing.assert_array_equal(target.minibatch(rng, 3), np.tile(np.arange(100), (3, 1)))
    theta = np.array([[0.1, 1.2], [-0.3, 0.7]])
    np.testing.assert_allclose(target.stochastic_gradient(theta, rng), target.gradient(theta), rtol=1e-12, atol=1e-10)
    assert rng.random() == np.random.default_rng(0).random()
    assert target.noise_scale == 0.0
    np.testing.assert_array_equal(target.noise_covariance(theta), 0.0)


def test_minibatch_gradient_is_one_draw_with_the_n_over_batch_factor():
    target = NormalGamma()
    theta = np.array([[0.1, 1.2], [-0.3, 0.7], [0.5, 2.0]])
    rng, replay = np.random.default_rng(7), np.random.default_rng(7)
    gradient, per_example = target.minibatch_gradient(theta, rng)
    index = target.minibatch(replay, 3)
    assert rng.random() == replay.random()  # exactly one minibatch draw
    np.testing.assert_allclose(per_example, target.log_likelihood_gradients(theta, index))
    expected = -10.0 * per_example.sum(axis=1) - target.log_prior_gradient(theta)
    np.testing.assert_allclose(gradient, expected)
    np.testing.assert_array_equal(target.stochastic_gradient(theta, np.random.default_rng(7)), gradient)


def test_generic_full_data_gradient_matches_finite_differences_and_chunking():
    target = GaussianMean()
    theta = np.random.default_rng(0).normal(size=(4, 3))
    numerical = numerical_gradient(target.potential, theta)
    np.testing.assert_allclose(target.gradient(theta), numerical, rtol=1e-6, atol=1e-6)
    covariance = target.per_example_covariance(theta)
    np.testing.assert_allclose(covariance, np.broadcast_to(np.cov(target.data.T), (4, 3, 3)), atol=1e-12)
    target._chunk_elements = 7  # chunks of 1 example for 4 chains × 3 dims
    np.testing.assert_allclose(target.gradient(theta), numerical, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(target.per_example_covariance(theta), covariance, atol=1e-12)


def test_normal_gamma_closed_form_gradient_equals_the_generic_sum():
    target = NormalGamma()
    theta = np.array([[0.1, 1.2], [-0.3, 0.7], [0.5, 2.0]])
    np.testing.assert_allclose(DataTarget.gradient(target, theta), target.gradient(theta), rtol=1e-12, atol=1e-10)


def test_per_example_covariance_is_the_sample_covariance_over_all_data():
    target = NormalGamma()
    theta = np.array([[0.1, 1.2], [-0.3, 0.7]])
    every = target.log_likelihood_gradients(theta, np.tile(np.arange(100), (2, 1)))
    expected = np.stack([np.cov(every[c].T, ddof=1) for c in range(2)])
    np.testing.assert_allclose(target.per_example_covariance(theta), expected, rtol=1e-12)
    assert target.noise_scale == pytest.approx(100 * 90 / 10)
    np.testing.assert_allclose(target.noise_covariance(theta), 900.0 * expected, rtol=1e-12)


@pytest.fixture(scope="module")
def noise_draws():
    target = NormalGamma()
    draws = 50000
    gradient = target.stochastic_gradient(np.repeat(THETA, draws, axis=0), np.random.default_rng(11))
    return target, gradient


def test_stochastic_gradient_is_unbiased(noise_draws):
    target, gradient = noise_draws
    standard_error = np.sqrt(np.diag(target.noise_covariance(THETA)[0]) / gradient.shape[0])
    np.testing.assert_array_less(np.abs(gradient.mean(axis=0) - target.gradient(THETA)[0]), 4.0 * standard_error)


def test_noise_covariance_has_the_finite_population_factor(noise_draws):
    """Without replacement: N(N − n)/n·S², not Shang et al.'s N²/n·S² (10% larger for N = 100, n = 10)."""
    target, gradient = noise_draws
    empirical = np.cov(gradient.T)
    exact = target.noise_covariance(THETA)[0]
    scale = np.sqrt(np.outer(np.diag(exact), np.diag(exact)))
    np.testing.assert_array_less(np.abs(empirical - exact) / scale, 0.05)
    with_replacement = np.diag(target.per_example_covariance(THETA)[0]) * 100**2 / 10
    assert np.all(np.abs(np.diag(empirical) / with_replacement - 1.0) > 0.05)


def test_default_reflect_changes_nothing():
    """A data target without a constraint inherits ``Target.reflect``: θ unchanged, no mask."""
    theta = np.array([[-1.0, 2.0, -3.0], [0.0, -0.5, 1.0]])
    reflected, mask = GaussianMean().reflect(theta)
    np.testing.assert_array_equal(reflected, theta)
    assert mask is None
