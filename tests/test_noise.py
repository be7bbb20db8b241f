"""Injected noise N(0, eps(2D - eps T V T)) of the fast steps (SPEC §4.3)."""

import numpy as np
import pytest

from sgmcmc.noise import clip_counters
from tests.reference_noise import clipped_gaussian, injected_noise, injected_noise_clipped, is_diagonal
from sgmcmc.recipe import RecipeError
from tests.helpers import ScriptedNormals


def _factor(diffusion, variance, transform, step_size):
    """Columns of the linear map w -> noise, read off with unit vectors."""
    d = diffusion.shape[1]
    columns = [injected_noise(ScriptedNormals(np.eye(d)[k][None]), step_size, diffusion, variance, transform)[0] for k in range(d)]
    return np.column_stack(columns)


@pytest.mark.parametrize("variance", [np.diag([4.0, 1.0]), np.array([[4.0, 1.5], [1.5, 1.0]])])
def test_injected_covariance_matches_formula(variance):
    diffusion = np.array([[1.5, 0.7]])
    transform = np.array([[0.8, 0.25]])
    step_size = 0.1
    factor = _factor(diffusion, variance, transform, step_size)
    expected = step_size * (2 * np.diag(diffusion[0]) - step_size * np.diag(transform[0]) @ variance @ np.diag(transform[0]))
    np.testing.assert_allclose(factor @ factor.T, expected, atol=1e-12)


def test_zero_noise_estimate_gives_2_eps_d():
    factor = _factor(np.array([[2.0]]), None, None, 0.05)
    np.testing.assert_allclose(factor**2, [[0.2]])


def test_too_large_noise_estimate_is_an_error():
    with pytest.raises(RecipeError, match="not positive"):
        injected_noise(np.random.default_rng(0), 0.1, np.array([[0.1]]), np.array([[4.0]]))
    with pytest.raises(RecipeError, match="not positive"):
        injected_noise(np.random.default_rng(0), 0.1, np.array([[0.1, 1.0]]), np.array([[4.0, 0.1], [0.1, 1.0]]))


# -- the clipped draw: Cholesky where it exists, eigendecomposition otherwise ----------------------------------
def _rotated(eigenvalues, seed):
    """U diag(λ) Uᵀ with a random rotation U: a full symmetric matrix with the given eigenvalues."""
    rotation, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(len(eigenvalues), len(eigenvalues))))
    return rotation @ np.diag(eigenvalues) @ rotation.T


def _clipped_draws(covariance, n_draws, seed):
    """n_draws clipped draws of N(0, covariance⁺) through injected_noise_clipped: ε = 1, D = I, V̂ = 2I − Σ
    (so that ε(2D − εV̂) = Σ); returns (draws, clipped per chain, fallbacks counted)."""
    d = covariance.shape[0]
    before = clip_counters.snapshot()
    noise, clipped = injected_noise_clipped(np.random.default_rng(seed), 1.0, np.ones((n_draws, d)),
                                            2.0 * np.eye(d) - covariance)
    after = clip_counters.snapshot()
    assert after[0] - before[0] == n_draws
    return noise, clipped, after[1] - before[1]


def _whitened_covariance(draws, covariance):
    """The sample covariance of L⁻¹x (L the Cholesky factor of ``covariance``): I when x ~ N(0, covariance)."""
    whitened = np.linalg.solve(np.linalg.cholesky(covariance), draws.T)
    return whitened @ whitened.T / draws.shape[0]


def test_the_cholesky_path_draws_the_covariance_and_is_l_z():
    """Nothing to clip: the draw is L z (no eigendecomposition) and its covariance is Σ: with 10⁵ draws each
    entry of the whitened sample covariance is within 0.03 of I (about 7 s.e.; a factor 2 in Σ gives 2 or 0.5)."""
    covariance = _rotated([3.0, 1.0, 0.2], seed=1)
    assert not is_diagonal(covariance)
    draws, clipped, fallbacks = _clipped_draws(covariance, 100_000, seed=2)
    assert fallbacks == 0 and np.all(clipped == 0)
    np.testing.assert_allclose(_whitened_covariance(draws, covariance), np.eye(3), atol=0.03)
    z = np.random.default_rng(2).standard_normal((100_000, 3))
    np.testing.assert_allclose(draws, z @ np.linalg.cholesky(covariance).T, rtol=1e-12, atol=1e-12)
    for wrong in (0.5, 2.0):  # the test is strong enough to see a factor of 2 in the covariance
        assert np.abs(_whitened_covariance(np.sqrt(wrong) * draws, covariance) - np.eye(3)).max() > 0.3


def test_the_eigendecomposition_path_draws_the_clipped_covariance():
    """A negative eigenvalue: the chain falls back to U diag(√λ⁺) z, whose covariance is Σ⁺ = U diag(λ⁺) Uᵀ
    (checked in Σ⁺'s eigenbasis: variances λ⁺ within 3% of λ, 0 exactly on the clipped direction)."""
    eigenvalues = np.array([3.0, 1.0, -0.5])
    rotation, _ = np.linalg.qr(np.random.default_rng(3).normal(size=(3, 3)))
    covariance = rotation @ np.diag(eigenvalues) @ rotation.T
    draws, clipped, fallbacks = _clipped_draws(covariance, 100_000, seed=4)
    assert fallbacks == 100_000 and np.all(clipped == 1)
    in_basis = draws @ rotation
    sample = in_basis.T @ in_basis / draws.shape[0]
    np.testing.assert_allclose(np.diag(sample)[:2], eigenvalues[:2], rtol=0.03)
    np.testing.assert_allclose(sample[2], 0.0, atol=1e-10)
    np.testing.assert_allclose(sample[0, 1], 0.0, atol=0.03 * np.sqrt(3.0))
    values, vectors = np.linalg.eigh(covariance)  # the draw itself: U diag(√λ⁺) z, as before the Cholesky path
    z = np.random.default_rng(4).standard_normal((100_000, 3))
    np.testing.assert_allclose(draws, (np.sqrt(np.maximum(values, 0.0)) * z) @ vectors.T, rtol=1e-10, atol=1e-12)


def test_the_fallback_happens_exactly_for_the_chains_with_a_negative_eigenvalue():
    smallest = [0.5, 1e-3, -1e-3, -2.0, 1e-2, -0.1, -3.0]
    covariance = np.stack([_rotated([2.0, 1.0, s], seed=10 + k) for k, s in enumerate(smallest)])
    covariance[-1] = np.diag([2.0, 1.0, -3.0])  # a negative variance: not even tried
    normal = np.random.default_rng(5).standard_normal((len(smallest), 3))
    draws, clipped, fallback = clipped_gaussian(covariance, normal)
    np.testing.assert_array_equal(fallback, np.array(smallest) < 0)
    np.testing.assert_array_equal(clipped, (np.array(smallest) < 0).astype(int))
    for chain in np.flatnonzero(~fallback):  # the positive definite chains: L z, whatever the other chains did
        np.testing.assert_allclose(draws[chain], np.linalg.cholesky(covariance[chain]) @ normal[chain], rtol=1e-12)
    before = clip_counters.snapshot()
    injected_noise_clipped(ScriptedNormals(normal), 1.0, np.ones((len(smallest), 3)), 2.0 * np.eye(3) - covariance)
    assert np.subtract(clip_counters.snapshot(), before).tolist() == [len(smallest), 4]


def test_is_diagonal_reads_every_off_diagonal_entry():
    assert is_diagonal(np.zeros((2, 4, 4))) and is_diagonal(np.diag([1.0, 2.0])) and is_diagonal(np.ones((3, 1, 1)))
    for i, j in [(0, 1), (1, 0), (3, 2), (2, 3), (0, 3), (3, 0)]:
        matrix = np.tile(np.eye(4), (2, 1, 1))
        matrix[1, i, j] = 1e-300
        assert not is_diagonal(matrix)
        assert not is_diagonal(np.broadcast_to(matrix[1], (3, 4, 4)))
        assert not is_diagonal(matrix.transpose(0, 2, 1))
