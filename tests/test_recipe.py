"""The generic recipe step and its checks (Ma et al. 2015, Eq. 3, Eq. 9 + SPEC K1)."""

import numpy as np
import pytest

from sgmcmc.recipe import (Recipe, RecipeError, check_recipe_matrices, finite_difference_correction, largest_step,
                           recipe_step)
from tests.helpers import ScriptedNormals


def test_non_psd_diffusion_is_rejected_by_name():
    diffusion = np.array([[[1.0, 0.0], [0.0, -0.5]]])
    with pytest.raises(RecipeError, match=r"diffusion matrix D\(z\) is not positive semidefinite"):
        check_recipe_matrices(diffusion, np.zeros((1, 2, 2)))


def test_asymmetric_diffusion_is_rejected_by_name():
    diffusion = np.array([[[1.0, 0.3], [0.0, 1.0]]])
    with pytest.raises(RecipeError, match=r"D\(z\) is not symmetric"):
        check_recipe_matrices(diffusion, np.zeros((1, 2, 2)))


def test_non_skew_curl_is_rejected_by_name():
    curl = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    with pytest.raises(RecipeError, match=r"curl matrix Q\(z\) is not skew-symmetric"):
        check_recipe_matrices(np.eye(2)[None], curl)


def test_valid_matrices_pass():
    check_recipe_matrices(np.diag([0.0, 2.0])[None], np.array([[[0.0, -1.0], [1.0, 0.0]]]))


def test_finite_difference_correction_matches_hand_derivative():
    # D(z) = diag(1 + z1^2, 1), Q = [[0, z1], [-z1, 0]] => Gamma_1 = 2 z1, Gamma_2 = dQ21/dz1 = -1.
    def diffusion(z):
        out = np.zeros((z.shape[0], 2, 2))
        out[:, 0, 0] = 1 + z[:, 0] ** 2
        out[:, 1, 1] = 1.0
        return out

    def curl(z):
        out = np.zeros((z.shape[0], 2, 2))
        out[:, 0, 1] = z[:, 0]
        out[:, 1, 0] = -z[:, 0]
        return out

    z = np.array([[0.3, -1.0], [2.0, 0.5]])
    expected = np.column_stack([2 * z[:, 0], -np.ones(2)])
    np.testing.assert_allclose(finite_difference_correction(diffusion, curl, z), expected, atol=1e-8)


def test_recipe_step_adds_gamma_with_a_plus_sign():
    """SPEC K1: z' = z + eps(-(D+Q) grad H + Gamma) + noise; a wrong sign would move the other way."""
    recipe = Recipe(
        energy_gradient=lambda z, rng: np.zeros_like(z),
        diffusion=lambda z: np.zeros((z.shape[0], 1, 1)),
        curl=lambda z: np.zeros((z.shape[0], 1, 1)),
        correction=lambda z: np.ones_like(z),
    )
    z = np.zeros((3, 1))
    out = recipe_step(recipe, z, 0.1, ScriptedNormals(np.zeros((3, 1))))
    np.testing.assert_allclose(out, 0.1 * np.ones((3, 1)))


def test_recipe_step_noise_covariance_is_eps_2d_minus_eps_b():
    recipe = Recipe(
        energy_gradient=lambda z, rng: np.zeros_like(z),
        diffusion=lambda z: np.broadcast_to(np.diag([1.0, 3.0]), (z.shape[0], 2, 2)).copy(),
        curl=lambda z: np.zeros((z.shape[0], 2, 2)),
        correction=lambda z: np.zeros_like(z),
        noise_covariance=lambda z: np.broadcast_to(np.diag([4.0, 2.0]), (z.shape[0], 2, 2)).copy(),
    )
    rng = np.random.default_rng(0)
    draws = recipe_step(recipe, np.zeros((200000, 2)), 0.1, rng)
    expected = 0.1 * (2 * np.array([1.0, 3.0]) - 0.1 * np.array([4.0, 2.0]))
    np.testing.assert_allclose(draws.var(axis=0), expected, rtol=0.01)


def test_recipe_step_rejects_negative_injected_covariance():
    recipe = Recipe(
        energy_gradient=lambda z, rng: np.zeros_like(z),
        diffusion=lambda z: np.ones((z.shape[0], 1, 1)),
        curl=lambda z: np.zeros((z.shape[0], 1, 1)),
        noise_covariance=lambda z: np.full((z.shape[0], 1, 1), 100.0),
    )
    with pytest.raises(RecipeError, match="injected noise covariance"):
        recipe_step(recipe, np.zeros((2, 1)), 0.1, np.random.default_rng(0))


def test_largest_step_is_2d_over_b_on_ds_range():
    """2D − εB̂ PSD up to ε = 2/λ_max(D^{-1/2}B̂D^{-1/2}): SGLD's 2/V; SGHMC's (D = diag(0, C), B̂ in r's block) 2C/V;
    the least over chains; ∞ for B̂ ⪯ 0; 0 where B̂ reaches outside D's range (θ's block of SGHMC)."""
    assert largest_step(np.eye(1)[None], np.array([[[400.0]]])) == pytest.approx(0.005)
    diffusion = np.array([[[0.0, 0.0], [0.0, 0.5]], [[0.0, 0.0], [0.0, 2.0]]])
    noise = np.array([[[0.0, 0.0], [0.0, 400.0]], [[0.0, 0.0], [0.0, 100.0]]])
    assert largest_step(diffusion, noise) == pytest.approx(2 * 0.5 / 400)
    d = np.array([[[2.0, 0.5], [0.5, 1.0]]])
    b = np.array([[[3.0, 1.0], [1.0, 2.0]]])
    steps = np.linspace(0.0, 2.0, 20001)
    psd = [np.linalg.eigvalsh(2 * d[0] - h * b[0]).min() >= -1e-12 for h in steps]
    assert largest_step(d, b) == pytest.approx(steps[np.argmin(psd) - 1], abs=1e-4)  # the last PSD ε on a grid
    assert largest_step(np.eye(2)[None], -np.eye(2)[None]) == np.inf
    assert largest_step(diffusion[:1], np.array([[[1.0, 0.0], [0.0, 1.0]]])) == 0.0
