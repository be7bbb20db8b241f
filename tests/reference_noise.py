"""The numpy draws of the injected noise N(0, ε(2D − ε T V̂ Tᵀ)) for a diagonal diffusion block (SPEC §4.3): the
hand-written reference the engine's injection (sgmcmc/engine/injection.py) is checked against in
tests/engine/test_injection.py, and itself checked against the formula in tests/test_noise.py.

A sampler subtracts the covariance that the gradient noise V̂ gets on its way into the state, ε²·T V̂ Tᵀ, where T
is the block of (D + Q) that multiplies ∇_θ H. With a diagonal D and T the covariance is elementwise when V̂ is
diagonal and needs one Cholesky factor per chain otherwise. The clipped draw (:func:`injected_noise_clipped`)
eigendecomposes only the chains whose covariance has no Cholesky factor, and counts them in
:data:`sgmcmc.noise.clip_counters`, as the engine's blocks do.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sgmcmc.noise import clip_counters
from sgmcmc.recipe import RecipeError


def is_diagonal(matrix: np.ndarray) -> bool:
    """True when every off-diagonal entry of a (…, k, k) array is zero (without copying the off-diagonal entries:
    they are the columns 1.. of the flattened matrices minus their last entry, read as (k − 1, k + 1))."""
    k = matrix.shape[-1]
    if k < 2:
        return True
    if np.any(matrix[..., 0, 1]):  # a full estimate: decided without reading the rest
        return False
    flat = np.reshape(matrix, matrix.shape[:-2] + (k * k,))  # a view for contiguous or broadcast (…, k, k)
    return not np.any(np.reshape(flat[..., :-1], matrix.shape[:-2] + (k - 1, k + 1))[..., 1:])


def _injected_covariance(step_size, diffusion, noise_covariance, transform):
    """ε(2D − ε T V̂ T): the (n, d) variances when V̂ is diagonal, else the (n, d, d) matrices."""
    scale = np.ones_like(diffusion) if transform is None else transform
    if is_diagonal(noise_covariance):
        variance_diag = np.diagonal(noise_covariance, axis1=-2, axis2=-1)
        return step_size * (2.0 * diffusion - step_size * scale**2 * variance_diag)
    if transform is None:  # T = I: one product instead of three (the same values: the factors 1 are exact)
        covariance = np.empty((diffusion.shape[0],) + noise_covariance.shape[-2:])
        np.multiply(-(step_size**2), noise_covariance, out=covariance)
    else:
        covariance = -(step_size**2) * scale[:, :, None] * noise_covariance * scale[:, None, :]
    index = np.arange(diffusion.shape[1])
    covariance[:, index, index] += 2.0 * step_size * diffusion
    return covariance



def clipped_gaussian(covariance: np.ndarray, normal: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A N(0, Σ⁺) draw per chain from standard normals ``normal`` (n, d), with Σ⁺ the symmetric (n, d, d)
    ``covariance`` with its negative eigenvalues set to 0.

    Where Σ has a Cholesky factor L (Σ positive definite, so nothing to clip), the draw is L z; only the chains
    whose factorisation fails are eigendecomposed, Σ = U diag(λ) Uᵀ, and drawn as U diag(√λ⁺) z. The two are the
    same distribution but different functions of z: a chain's draw for a given z is L z on the first path and
    U diag(√λ) z on the second (Cholesky succeeding on a matrix whose smallest eigenvalue is negative only at the
    level of rounding draws from that matrix, i.e. clips a rounding error). Each chain's path depends on its own
    Σ only. Returns (draws (n, d), eigenvalues clipped (n,), eigendecomposed (n,) bool)."""
    n = covariance.shape[0]
    # A variance <= 0 on the diagonal: no Cholesky factor, so no attempt (where clipping happens at every step, as
    # with the running estimate on logistic regression at h = 1e-4, the attempt would only add its cost).
    fallback = ~np.all(np.diagonal(covariance, axis1=1, axis2=2) > 0, axis=1)
    factor = None
    if not fallback.any():
        try:
            factor = np.linalg.cholesky(covariance)  # every chain at once, the usual case when nothing is clipped
        except np.linalg.LinAlgError:
            pass
    if factor is None:  # chain by chain: which ones have a factor
        factor = np.zeros_like(covariance)
        for chain in np.flatnonzero(~fallback):
            try:
                factor[chain] = np.linalg.cholesky(covariance[chain])
            except np.linalg.LinAlgError:
                fallback[chain] = True
    noise = np.matmul(factor, normal[:, :, None])[:, :, 0]
    clipped = np.zeros(n, dtype=int)
    if fallback.any():
        values, vectors = np.linalg.eigh(covariance[fallback])
        negative = values < 0
        noise[fallback] = np.einsum("nij,nj->ni", vectors, np.sqrt(np.where(negative, 0.0, values)) * normal[fallback])
        clipped[fallback] = negative.sum(axis=1)
    return noise, clipped, fallback


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
    noise_covariance : None, (d, d) or (n, d, d): V̂, the gradient-noise
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

    Returns (noise (n, d), number of eigenvalues clipped per chain (n,)); one standard normal array z per call.
    With a full V̂ the draw is :func:`clipped_gaussian`'s: L z with L the Cholesky factor where there is one
    (nothing to clip), else U diag(√λ⁺) z from the eigendecomposition (λ, U), counted in
    :data:`clip_counters`. Before the Cholesky path every chain drew U diag(√λ⁺) z: for the same z a chain with
    nothing to clip now gets a different sample of the same N(0, Σ⁺) (runs with ``noise_clip`` changed numbers).
    """
    normal = rng.standard_normal(diffusion.shape)
    n, d = diffusion.shape
    if noise_covariance is None:
        return np.sqrt(2.0 * step_size * diffusion) * normal, np.zeros(n, dtype=int)
    noise_covariance = np.broadcast_to(noise_covariance, (n, d, d))
    covariance = _injected_covariance(step_size, diffusion, noise_covariance, transform)
    if covariance.ndim == 2:
        negative = covariance < 0
        return np.sqrt(np.where(negative, 0.0, covariance)) * normal, negative.sum(axis=1)
    noise, clipped, fallback = clipped_gaussian(covariance, normal)
    clip_counters.draws += n
    clip_counters.fallbacks += int(fallback.sum())
    return noise, clipped
