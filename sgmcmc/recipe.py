"""The complete recipe of Ma, Chen & Fox (2015): one Euler step built from H, D, Q and Γ.

A recipe sampler on the augmented state z is the SDE (Ma et al. 2015, Eq. 3)

    dz = [−(D(z) + Q(z)) ∇H(z) + Γ(z)] dt + sqrt(2 D(z)) dW,   Γ_i(z) = Σ_j ∂_{z_j}(D_ij(z) + Q_ij(z)),

with D symmetric positive semidefinite and Q skew-symmetric. Its stochastic-gradient Euler step is
Eq. 9 with the sign of Γ corrected (SPEC §0, K1; the printed Eq. 9 subtracts Γ):

    z_{t+1} = z_t − ε (D + Q)(z_t) ∇H̃(z_t) + ε Γ(z_t) + N(0, ε (2 D(z_t) − ε B̂_t)).

All arrays carry the chain dimension first: z is (n_chains, dim_z), D and Q are (n_chains, dim_z, dim_z).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

MatrixField = Callable[[np.ndarray], np.ndarray]


class RecipeError(ValueError):
    """A recipe matrix violates the conditions of Ma et al. (2015), Theorem 1."""


@dataclass(frozen=True)
class Recipe:
    """The ingredients of a recipe sampler (Ma et al. 2015, Eq. 3 and Eq. 9).

    Attributes
    ----------
    energy_gradient : callable (z, rng) -> (n, dim_z)
        Stochastic gradient ∇H̃(z) (the θ block uses the target's stochastic gradient).
    diffusion : callable z -> (n, dim_z, dim_z)
        D(z), symmetric positive semidefinite.
    curl : callable z -> (n, dim_z, dim_z)
        Q(z), skew-symmetric.
    correction : callable z -> (n, dim_z), optional
        Γ(z). When ``None`` it is computed by central finite differences of D + Q.
    noise_covariance : callable z -> (n, dim_z, dim_z), optional
        B̂(z), the covariance of the gradient noise after it has passed through (D + Q) (SPEC §4.3).
        ``None`` means B̂ = 0.
    energy : callable z -> (n,), optional
        H(z) itself, so the stationary density ∝ exp(−H(z)) can be evaluated (stationarity checks).
    """

    energy_gradient: Callable[[np.ndarray, np.random.Generator], np.ndarray]
    diffusion: MatrixField
    curl: MatrixField
    correction: Optional[Callable[[np.ndarray], np.ndarray]] = None
    noise_covariance: Optional[MatrixField] = None
    energy: Optional[Callable[[np.ndarray], np.ndarray]] = None


def finite_difference_correction(
    diffusion: MatrixField, curl: MatrixField, z: np.ndarray, spacing: float = 1e-5
) -> np.ndarray:
    """Γ_i(z) = Σ_j ∂_{z_j}(D_ij + Q_ij)(z) by central differences (Ma et al. 2015, Eq. 3)."""
    z = np.asarray(z, dtype=float)
    correction = np.zeros_like(z)
    for j in range(z.shape[1]):
        shift = np.zeros_like(z)
        shift[:, j] = spacing
        upper = diffusion(z + shift) + curl(z + shift)
        lower = diffusion(z - shift) + curl(z - shift)
        correction += (upper[:, :, j] - lower[:, :, j]) / (2.0 * spacing)
    return correction


def check_recipe_matrices(diffusion: np.ndarray, curl: np.ndarray, tolerance: float = 1e-10) -> None:
    """Raise :class:`RecipeError` unless D is symmetric PSD and Q skew-symmetric (Ma et al. 2015, Thm. 1)."""
    scale = max(1.0, float(np.max(np.abs(diffusion), initial=0.0)), float(np.max(np.abs(curl), initial=0.0)))
    asymmetry = float(np.max(np.abs(diffusion - np.swapaxes(diffusion, -1, -2)), initial=0.0))
    if asymmetry > tolerance * scale:
        raise RecipeError(f"diffusion matrix D(z) is not symmetric (max |D - D^T| = {asymmetry:.3g})")
    smallest = float(np.min(np.linalg.eigvalsh(diffusion)))
    if smallest < -tolerance * scale:
        raise RecipeError(f"diffusion matrix D(z) is not positive semidefinite (smallest eigenvalue {smallest:.3g})")
    skew_error = float(np.max(np.abs(curl + np.swapaxes(curl, -1, -2)), initial=0.0))
    if skew_error > tolerance * scale:
        raise RecipeError(f"curl matrix Q(z) is not skew-symmetric (max |Q + Q^T| = {skew_error:.3g})")


def check_recipe(recipe: Recipe, z: np.ndarray, tolerance: float = 1e-10) -> None:
    """Check D(z) and Q(z) of ``recipe`` at the states ``z`` (n_chains, dim_z)."""
    check_recipe_matrices(recipe.diffusion(z), recipe.curl(z), tolerance)


def psd_square_root(covariance: np.ndarray, tolerance: float = 1e-10, name: str = "covariance") -> np.ndarray:
    """Symmetric square root of a batch of PSD matrices (n, k, k); raise RecipeError if not PSD."""
    eigenvalues, eigenvectors = np.linalg.eigh(covariance)
    scale = max(1.0, float(np.max(np.abs(eigenvalues), initial=0.0)))
    if np.min(eigenvalues) < -tolerance * scale:
        raise RecipeError(f"{name} is not positive semidefinite (smallest eigenvalue {np.min(eigenvalues):.3g})")
    root = np.sqrt(np.clip(eigenvalues, 0.0, None))
    return np.einsum("nij,nj,nkj->nik", eigenvectors, root, eigenvectors)


def largest_step(diffusion: np.ndarray, noise: np.ndarray, tolerance: float = 1e-10) -> float:
    """The largest ε for which 2D − εB̂ is PSD for every chain of D (n, k, k), PSD, and B̂ (n, k, k), symmetric (the
    injected noise's covariance ε(2D − εB̂), SPEC §4.3): 2/λ with λ the largest eigenvalue of D^{-1/2}B̂D^{-1/2} on D's
    range (∞ where none is positive), 0 where B̂ reaches outside D's range (then no ε > 0 is PSD)."""
    bound = np.inf
    for d, b in zip(diffusion, noise):
        values, vectors = np.linalg.eigh(d)
        kept = values > tolerance * max(1.0, float(values.max(initial=0.0)))
        if np.abs(b @ vectors[:, ~kept]).max(initial=0.0) > tolerance * max(1.0, float(np.abs(b).max())):
            return 0.0
        scaled = vectors[:, kept] / np.sqrt(values[kept])
        top = float(np.linalg.eigvalsh(scaled.T @ b @ scaled).max(initial=0.0))
        if top > 0.0:
            bound = min(bound, 2.0 / top)
    return bound


def recipe_step(recipe: Recipe, z: np.ndarray, step_size: float, rng: np.random.Generator) -> np.ndarray:
    """One generic recipe step, Ma et al. (2015) Eq. 9 with +εΓ (SPEC §0 K1, §4.1).

    Random numbers are drawn in a fixed order: first whatever ``recipe.energy_gradient`` draws (the
    gradient noise), then one standard normal array of shape ``z.shape`` mapped through the symmetric
    square root of ε(2D − εB̂).
    """
    z = np.asarray(z, dtype=float)
    gradient = recipe.energy_gradient(z, rng)
    diffusion = recipe.diffusion(z)
    curl = recipe.curl(z)
    if recipe.correction is None:
        correction = finite_difference_correction(recipe.diffusion, recipe.curl, z)
    else:
        correction = recipe.correction(z)
    drift = -np.einsum("nij,nj->ni", diffusion + curl, gradient) + correction
    covariance = 2.0 * diffusion
    if recipe.noise_covariance is not None:
        covariance = covariance - step_size * recipe.noise_covariance(z)
    root = psd_square_root(step_size * covariance, name="injected noise covariance eps*(2D - eps*B)")
    normal = rng.standard_normal(z.shape)
    return z + step_size * drift + np.einsum("nij,nj->ni", root, normal)
