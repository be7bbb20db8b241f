"""The injected noise of one chain's step, N(0, ε(2D − ε T V̂ T)) (Ma et al. 2015 Eq. 9 with the gradient-noise
correction B̂ = T V̂ T of SPEC §4.3), for the integrators of :mod:`sgmcmc.engine.integrators`.

``diffusion`` is D's diagonal, ``scale`` the diagonal T through which ∇Ũ enters the block (1 for SGLD, SGHMC and
SGNHT), ``variance`` V̂ (d, d), or the row (1, d) of its diagonal where it does not enter in full
(:func:`variance_diagonal`), and ``mode`` says how it enters: not at all, by its diagonal, or in full (a Cholesky
factor, LAPACK potrf's test: a pivot that is not > 0 has none). With ``clip`` a negative variance of the diagonal
form is set to 0 and counted instead of refusing the step; in full, the draw is that of ``clipped_gaussian`` in tests/reference_noise.py:
the Cholesky factor where there is one, else the eigendecomposition with the negative eigenvalues set to 0 and counted
(a V̂ whose off-diagonal entries are all 0 is drawn elementwise). The count returned then
carries the flags :data:`~sgmcmc.engine.codes.CLIP_DRAW` and ``CLIP_FALLBACK`` (a full draw, an eigendecomposed one)
for :data:`sgmcmc.noise.clip_counters`.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# a step's status, and how V̂ enters the injected covariance (re-exported for the integrators and their callers)
from sgmcmc.engine.codes import (CLIP_DRAW, CLIP_FALLBACK, DIAGONAL_ESTIMATE, FULL_ESTIMATE, NO_ESTIMATE, NON_FINITE,
                                 NOT_PSD, OK)

__all__ = ["inject", "finite_state", "variance_diagonal", "set_variance_diagonal", "OK", "NON_FINITE", "NOT_PSD", "NO_ESTIMATE", "DIAGONAL_ESTIMATE", "FULL_ESTIMATE"]


@numba.njit(cache=True, inline="always")
def inject(step_size, diffusion, scale, mode, variance, clip, normals, out, square, slot=1):
    """N(0, ε(2D − ε T V̂ T)) from the standard normals ``normals[slot]`` (a step's slots (slots, d), indexed in place
    on the elementwise paths: a view costs reference counts; the full draw, O(d²) a step, takes the view) into ``out``
    (d,); ``square`` is scratch, (d, d) where V̂ enters in full. Returns (status, the number of clipped variances)."""
    d = diffusion.shape[0]
    if mode == NO_ESTIMATE:
        for j in range(d):
            out[j] = math.sqrt(2.0 * step_size * diffusion[j]) * normals[slot, j]
        return OK, 0
    if mode == DIAGONAL_ESTIMATE or (clip and _diagonal(variance)):
        clipped = 0
        for j in range(d):
            value = step_size * (2.0 * diffusion[j] - step_size * (scale[j] * scale[j]) * variance_diagonal(variance, j))
            if value < 0:
                if not clip:
                    return NOT_PSD, 0
                value = 0.0
                clipped += 1
            out[j] = math.sqrt(value) * normals[slot, j]
        return OK, clipped
    return _full_draw(step_size, diffusion, scale, variance, clip, normals[slot], out, square)


@numba.njit(cache=True, inline="always")
def variance_diagonal(variance, j):
    """V̂_jj of V̂ held in full (d, d), or as the row (1, d) of its diagonal (where it enters by its diagonal, or not
    at all: nothing d × d is made; at d = 1 the two are one)."""
    return variance[0, j] if variance.shape[0] == 1 else variance[j, j]


@numba.njit(cache=True, inline="always")
def set_variance_diagonal(variance, j, value):
    """V̂_jj = ``value`` in either form (:func:`variance_diagonal`)."""
    if variance.shape[0] == 1:
        variance[0, j] = value
    else:
        variance[j, j] = value


@numba.njit(cache=True)
def _full_draw(step_size, diffusion, scale, variance, clip, z, out, square):
    """:func:`inject`'s draw with the full V̂ from the standard normals ``z`` (d,): Cholesky, or the
    eigendecomposition where clipped. Called, not inlined: compiled once for every block (inlined, it added seconds to
    each block's compilation); its O(d²) work a step outweighs the call."""
    d = diffusion.shape[0]
    _covariance(step_size, diffusion, scale, variance, square)
    for j in range(d):
        pivot = square[j, j]
        for k in range(j):
            pivot -= square[j, k] * square[j, k]
        if not pivot > 0:
            if not clip:
                return NOT_PSD, 0
            _covariance(step_size, diffusion, scale, variance, square)
            return OK, CLIP_DRAW + CLIP_FALLBACK + _eigen_draw(square, z, out)
        pivot = math.sqrt(pivot)
        square[j, j] = pivot
        for i in range(j + 1, d):
            value = square[i, j]
            for k in range(j):
                value -= square[i, k] * square[j, k]
            square[i, j] = value / pivot
    for i in range(d):
        total = 0.0
        for k in range(i + 1):
            total += square[i, k] * z[k]
        out[i] = total
    return OK, CLIP_DRAW if clip else 0


@numba.njit(cache=True)
def _diagonal(variance):
    """Whether every off-diagonal entry of V̂ is 0."""
    for i in range(variance.shape[0]):
        for j in range(variance.shape[1]):
            if i != j and variance[i, j] != 0:
                return False
    return True


@numba.njit(cache=True, inline="always")
def _covariance(step_size, diffusion, scale, variance, out):
    """ε(2D − ε T V̂ T) (d, d) into ``out``."""
    d = diffusion.shape[0]
    for i in range(d):
        for j in range(d):
            out[i, j] = -step_size * step_size * scale[i] * variance[i, j] * scale[j]
        out[i, i] += 2.0 * step_size * diffusion[i]


@numba.njit(cache=True)
def _eigen_draw(covariance, z, out):
    """U diag(√λ⁺) z into ``out`` from covariance = U diag(λ) Uᵀ (numba's ``np.linalg.eigh``, LAPACK's routine as
    numpy's), λ⁺ = max(λ, 0); returns the number of negative eigenvalues. A non-finite covariance
    (an overflowed running estimate) draws NaN: the step then diverges (numba's eigh refuses it)."""
    if not np.all(np.isfinite(covariance)):
        out[:] = math.nan
        return 0
    values, vectors = np.linalg.eigh(covariance)
    negative = values < 0
    out[:] = np.dot(np.ascontiguousarray(vectors), np.sqrt(np.where(negative, 0.0, values)) * z)
    return int(np.sum(negative))


@numba.njit(cache=True, inline="always")
def finite_state(theta, momentum, xi, carry) -> bool:
    """Whether every entry of θ, r, ξ and the integrator's carried vector (one dimension each, all but θ possibly
    empty) is finite. One pass without early exits: measured in the block driver, three short-circuited tests of θ, r
    and ξ cost 28 ns a step more."""
    ok = True
    for j in range(carry.shape[0]):
        ok &= math.isfinite(carry[j])
    for j in range(theta.shape[0]):
        ok &= math.isfinite(theta[j])
    for j in range(momentum.shape[0]):
        ok &= math.isfinite(momentum[j])
    for j in range(xi.shape[0]):
        ok &= math.isfinite(xi[j])
    return ok
