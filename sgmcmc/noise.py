"""Injected Gaussian noise N(0, ε(2D − ε T V̂ Tᵀ)) for samplers with a diagonal diffusion block.

SPEC §4.3: a sampler subtracts the covariance that the gradient noise V̂ gets on its way into the state,
ε²·T V̂ Tᵀ, where T is the block of (D + Q) that multiplies ∇_θ H. Every sampler here has a diagonal
diffusion D and a diagonal T, so the covariance is elementwise when V̂ is diagonal and needs one
Cholesky factor per chain otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Union

import numpy as np

from sgmcmc.recipe import RecipeError


@dataclass(frozen=True)
class DiagonalCovariance:
    """A batch of diagonal covariance matrices kept as their diagonals ``variances`` (n, d): what a
    diagonal running estimate gives (Shang et al. 2015 §4.3, the DRBM runs), never formed as d×d."""

    variances: np.ndarray


Covariance = Union[np.ndarray, DiagonalCovariance]


def is_diagonal(matrix: np.ndarray) -> bool:
    """True when every off-diagonal entry of a (…, k, k) array is zero."""
    k = matrix.shape[-1]
    return not np.any(matrix[..., ~np.eye(k, dtype=bool)])


def _injected_covariance(step_size, diffusion, noise_covariance, transform):
    """ε(2D − ε T V̂ T): the (n, d) variances when V̂ is diagonal, else the (n, d, d) matrices."""
    scale = np.ones_like(diffusion) if transform is None else transform
    if isinstance(noise_covariance, DiagonalCovariance):
        return step_size * (2.0 * diffusion - step_size * scale**2 * noise_covariance.variances)
    if is_diagonal(noise_covariance):
        variance_diag = np.diagonal(noise_covariance, axis1=-2, axis2=-1)
        return step_size * (2.0 * diffusion - step_size * scale**2 * variance_diag)
    covariance = -(step_size**2) * scale[:, :, None] * noise_covariance * scale[:, None, :]
    index = np.arange(diffusion.shape[1])
    covariance[:, index, index] += 2.0 * step_size * diffusion
    return covariance


def injected_noise(
    rng: np.random.Generator,
    step_size: float,
    diffusion: np.ndarray,
    noise_covariance: Optional[np.ndarray] = None,
    transform: Optional[np.ndarray] = None,
) -> np.ndarray:
    """Draw N(0, ε(2 diag(diffusion) − ε T V̂ T)) for every chain; T = diag(transform).

    Parameters
    ----------
    diffusion : (n, d) array, the diagonal of D in the block that receives noise.
    noise_covariance : None, (d, d), (n, d, d) or a :class:`DiagonalCovariance`: V̂, the gradient-noise
        covariance estimate.
    transform : None (identity) or (n, d): the diagonal of T.

    Always draws exactly one standard normal array of shape (n, d), so a step's random numbers are
    the same whatever the noise estimate (used to pin fast steps to the generic recipe step).
    """
    normal = rng.standard_normal(diffusion.shape)
    if noise_covariance is None:
        return np.sqrt(2.0 * step_size * diffusion) * normal
    covariance = _injected_covariance(step_size, diffusion, noise_covariance, transform)
    if covariance.ndim == 2:
        if np.any(covariance < 0):
            raise RecipeError(
                "injected noise covariance eps*(2D - eps*B) is not positive semidefinite: "
                f"smallest variance {covariance.min():.3g}; reduce the step size or the noise estimate"
            )
        return np.sqrt(covariance) * normal
    try:
        factor = np.linalg.cholesky(covariance)
    except np.linalg.LinAlgError:
        raise RecipeError(
            "injected noise covariance eps*(2D - eps*B) is not positive definite; "
            "reduce the step size or the noise estimate"
        ) from None
    return np.einsum("nij,nj->ni", factor, normal)


def injected_noise_clipped(
    rng: np.random.Generator,
    step_size: float,
    diffusion: np.ndarray,
    noise_covariance: Optional[np.ndarray] = None,
    transform: Optional[np.ndarray] = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Like :func:`injected_noise`, but where ε(2D − ε T V̂ T) has negative eigenvalues they are set to 0
    (SPEC §4.8; Shang et al. 2015 §3 (i) needs A·I − hΣ̂/2 ⪰ 0 and SGHMC cannot inject "negative noise").

    Returns (noise (n, d), number of eigenvalues clipped per chain (n,)). With a full V̂ the draw is
    U diag(√λ⁺) z with (λ, U) the eigendecomposition; one standard normal array z per call.
    """
    normal = rng.standard_normal(diffusion.shape)
    n, d = diffusion.shape
    if noise_covariance is None:
        return np.sqrt(2.0 * step_size * diffusion) * normal, np.zeros(n, dtype=int)
    if not isinstance(noise_covariance, DiagonalCovariance):
        noise_covariance = np.broadcast_to(noise_covariance, (n, d, d))
    covariance = _injected_covariance(step_size, diffusion, noise_covariance, transform)
    if covariance.ndim == 2:
        negative = covariance < 0
        return np.sqrt(np.where(negative, 0.0, covariance)) * normal, negative.sum(axis=1)
    values, vectors = np.linalg.eigh(covariance)
    negative = values < 0
    return np.einsum("nij,nj->ni", vectors, np.sqrt(np.where(negative, 0.0, values)) * normal), negative.sum(axis=1)
