"""Compiled blocks of pSGLD (numba) on the formula targets: :func:`psgld_block` advances every chain K steps on
pre-drawn standard normals, line for line the numpy step of :class:`sgmcmc.samplers.psgld.PSGLD` (the readable
reference, pinned to this by ``tests/engine/test_preconditioned_kernels.py`` on identical random numbers):

    θ' = θ − εD∇Ũ(θ) + εΓ(θ) + N(0, ε(2D − εDV̂D))      (Ma et al. 2015, Eq. 9 + K1, with z = θ, H = U, Q = 0)

with D diagonal and one of Li et al.'s (2016) two preconditioners:

- ``running`` (Li et al., Algorithm 1): V_t = αV_{t−1} + (1 − α)∇Ũ ⊙ ∇Ũ carried per chain (the state's
  ``preconditioner``; its value after each step is written to ``average_path``), D = 1 ⊘ (λ + √V_t), Γ = 0;
- ``stationary``: v(θ) = ∇U(θ)² + diag V (the formula targets' gradient-noise covariance V is constant, so
  ∂Cov = 0), D(θ) = 1 ⊘ (λ + √v(θ)) and, ``with_gamma``, Γ_i = −D_ii² ∂_iU ∂²_iiU / √v_i (0 where v_i = 0)
  (``stationary_correction``), with ∂²_iiU from :func:`hessian_diagonal_into`.

Random numbers: ``normals`` (K, 2, c, d); step k of chain i uses ``normals[k, 0, i]`` for the gradient noise
∇Ũ − ∇U = L z and ``normals[k, 1, i]`` for the injected noise, the order of the numpy step (``gradient_and_noise``,
then ``inject``). Outputs and failures as in :mod:`sgmcmc.engine.kernels`: a chain stops at its first step whose
injected covariance is not PSD (:data:`NOT_PSD`) or whose θ or V_t is not finite (:data:`NON_FINITE`).

The formulas (``gradient_into``), the injected noise (``_inject``) and ``_finite`` are imported from
:mod:`sgmcmc.engine.kernels` and compiled into this file's kernel. numba's on-disk cache is keyed on this file alone,
so :data:`HELPERS_DIGEST` records their digest (:func:`sgmcmc.engine.kernels.helpers_digest`) as this file was
written: where the imported helpers differ, the kernel is compiled without the disk cache (correct, compiled in every
process) and ``tests/engine/test_preconditioned_kernels.py`` fails until the digest here is updated.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from sgmcmc.engine import kernels
from sgmcmc.engine.codes import NON_FINITE, OK
from sgmcmc.engine.gradients import CORRELATED_2D, DOUBLE_WELL, LECTURE_QUARTIC, QUADRATIC
from sgmcmc.engine.kernels import Specialised, _finite, _inject, gradient_into

# numba freezes these constants into the compiled code, and its cache is keyed on this file alone: their values are
# written here too, and a mismatch stops the import (change both files together, which renews the cache).
_FROZEN = {"OK": 0, "NON_FINITE": 1, "QUADRATIC": 0, "DOUBLE_WELL": 1, "LECTURE_QUARTIC": 2, "CORRELATED_2D": 3}
kernels.check_frozen(__name__, _FROZEN)


def helpers_digest() -> str:
    """The digest of what this file compiles from :mod:`sgmcmc.engine.kernels` (:func:`~sgmcmc.engine.kernels.
    helpers_digest`)."""
    return kernels.helpers_digest(gradient_into, _inject, _finite)


HELPERS_DIGEST = "d6c26bcc193c8475"
CACHE = helpers_digest() == HELPERS_DIGEST


@numba.njit(cache=CACHE, inline="always")
def hessian_diagonal_into(kind, parameters, theta, out):
    """∂²U/∂θ_i² of one chain's θ (d,) into ``out`` (d,), for the formula ``kind`` (the targets' exact
    ``hessian_diagonal``): QUADRATIC P_ii; DOUBLE_WELL 12θ² − 4; LECTURE_QUARTIC (12θ² + 6θ − 26)/14;
    CORRELATED_2D (5.2θ₁² − 2(4(θ₂ + 1.2) − θ₁²), 16)."""
    d = theta.shape[0]
    if kind == QUADRATIC:
        for i in range(d):
            out[i] = parameters[d + i * d + i]
    elif kind == DOUBLE_WELL:
        for i in range(d):
            out[i] = 12.0 * theta[i] ** 2 - 4.0
    elif kind == LECTURE_QUARTIC:
        for i in range(d):
            x = theta[i]
            out[i] = (12.0 * x**2 + 6.0 * x - 26.0) / 14.0
    elif kind == CORRELATED_2D:
        x, y = theta[0], theta[1]
        out[0] = 5.2 * x**2 - 2.0 * (4.0 * (y + 1.2) - x**2)
        out[1] = 16.0


@numba.njit(cache=CACHE)
def _psgld_block(kind, parameters, factor, noise_diagonal, running, with_gamma, alpha, damping, mode,
                 variance_diagonal, variance, clip, theta0, average0, normals, step_sizes, theta_path, average_path,
                 clipped_path, bad_step, bad_code):
    """pSGLD: θ' = θ + ε(−D∇Ũ + Γ) + N(0, ε(2D − εDV̂D)), with D = 1 ⊘ (λ + √V_t), V_t = αV_{t−1} + (1 − α)∇Ũ²,
    Γ = 0 (``running``; V_t written to ``average_path``), or D = 1 ⊘ (λ + √v(θ)), v = ∇U² + diag V
    (``noise_diagonal``), Γ_i = −D_ii² ∂_iU ∂²_iiU / √v_i when ``with_gamma`` (stationary)."""
    n_chains, d = theta0.shape
    n_steps = step_sizes.shape[0]
    for i in range(n_chains):
        theta = theta0[i].copy()
        average, new_average = average0[i].copy(), np.empty(d)
        exact, gradient, hessian, diffusion = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
        drift, noise, new = np.empty(d), np.empty(d), np.empty(d)
        work = np.empty((d, d))
        bad_step[i], bad_code[i] = n_steps, OK
        for k in range(n_steps):
            step = step_sizes[k]
            # ∇Ũ = ∇U(θ) + L z (SyntheticTarget.stochastic_gradient)
            gradient_into(kind, parameters, theta, exact)
            for j in range(d):
                total = 0.0
                for m in range(d):
                    total += normals[k, 0, i, m] * factor[j, m]
                gradient[j] = exact[j] + total
            if running:
                for j in range(d):
                    new_average[j] = alpha * average[j] + (1.0 - alpha) * gradient[j] * gradient[j]
                    diffusion[j] = 1.0 / (damping + math.sqrt(new_average[j]))
                    drift[j] = -diffusion[j] * gradient[j]
            else:
                if with_gamma:
                    hessian_diagonal_into(kind, parameters, theta, hessian)
                for j in range(d):
                    moment = exact[j] * exact[j] + noise_diagonal[j]
                    diffusion[j] = 1.0 / (damping + math.sqrt(moment))
                    correction = 0.0
                    if with_gamma:
                        root = math.sqrt(moment)
                        slope = (exact[j] * hessian[j] + 0.0) / root if root > 0 else 0.0
                        correction = -diffusion[j] * diffusion[j] * slope
                    drift[j] = -diffusion[j] * gradient[j] + correction
            status, clipped = _inject(step, diffusion, diffusion, mode, variance_diagonal, variance, clip, normals, k, 1,
                                      i, noise, work)
            if status != OK:
                bad_step[i], bad_code[i] = k, status
                break
            for j in range(d):
                new[j] = theta[j] + step * drift[j] + noise[j]
            if not (_finite(new) and (not running or _finite(new_average))):
                bad_step[i], bad_code[i] = k, NON_FINITE
                break
            for j in range(d):
                theta[j] = new[j]
                theta_path[i, k, j] = new[j]
            if running:
                for j in range(d):
                    average[j] = new_average[j]
                    average_path[i, k, j] = new_average[j]
            clipped_path[i, k] = clipped


psgld_block = Specialised(_psgld_block, "kind", "running", "with_gamma", "mode", "clip")
