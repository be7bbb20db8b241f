"""Injected noise N(0, eps(2D - eps T V T)) of the fast steps (SPEC §4.3)."""

import numpy as np
import pytest

from sgmcmc.noise import injected_noise
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
