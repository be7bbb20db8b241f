"""Compiled blocks of BAOAB and BADODAB (numba): :func:`splitting_block` advances every chain K steps on pre-drawn
standard normals, line for line the numpy steps ``BAOAB._step_baoab`` and ``BADODAB._step_badodab``
(``sgmcmc/samplers/baoab.py``, the readable reference, pinned to this by ``tests/engine/test_splitting_kernels.py``
on identical random numbers). With h the step size and F = −∇Ũ:

- BAOAB (Leimkuhler & Matthews 2013 §2): r₁ = r + (h/2)F(θ), θ₁ = θ + (h/2)r₁,
  r₂ = e^{−hC} r₁ + N(0, (1 − e^{−2hC}) − h²V̂), θ' = θ₁ + (h/2)r₂, r' = r₂ + (h/2)F(θ');
- BADODAB (Leimkuhler & Shang 2016 §5): the same B and A parts around ξ₁ = ξ + (h/2)(r₁ᵀr₁/d − 1),
  r₂ = e^{−hξ₁} r₁ + N(0, A(1 − e^{−2hξ₁})/ξ₁ − h²V̂), ξ' = ξ₁ + (h/2)(r₂ᵀr₂/d − 1).

F(θ') is the step's one gradient: it is kept (``SamplerState.gradient``, the ``gradient`` path of the kernel's
:class:`~sgmcmc.engine.blocks.CompiledKernel`, ``state_paths``) and starts the next step, also across blocks: a block
starts from the state's kept gradient (``gradient0``). A state without one (a run's first step) gets it from the
numpy step's own draw before the block's normals are drawn (``CompiledKernel.prepare``), the numpy step's order.

Random numbers: ``normals`` (K, 2, c, d); step k of chain i uses ``normals[k, 0, i]`` for the O step's noise (drawn
first by the numpy step) and ``normals[k, 1, i]`` for the gradient noise L z of ∇Ũ(θ'). The O step's variance is the
exact Ornstein–Uhlenbeck one written as the recipe's ε·2D' with D' = D·(1 − e^{−2hc})/(2hc) (``ou_fraction``) and
drawn by :func:`sgmcmc.engine.kernels._inject` (which subtracts h²V̂: elementwise, or a Cholesky factor for a full V̂).

Outputs as :mod:`sgmcmc.engine.kernels`: the paths (c, K, d) of θ, r, the kept gradient (and (c, K) of ξ), the clipped
counts, and per chain the first failed step with its code (NON_FINITE: θ, r, ξ or the gradient left the
floating-point range; NOT_PSD: the O step's covariance was refused).

The helpers ``gradient_into``, ``_inject`` and ``_finite`` are imported from :mod:`sgmcmc.engine.kernels` and
compiled into this file's kernel. numba's on-disk cache is keyed on this file alone, so a change of those helpers (or
of the codes frozen there) would leave a stale cached kernel here: :data:`HELPERS_DIGEST` is their source's digest as
this file was written; where the imported helpers differ, the kernel is compiled without the disk cache (correct but
compiled in every process) and ``tests/engine/test_splitting_kernels.py`` fails until the digest here is updated
(which renews the cache).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from sgmcmc.engine import kernels
from sgmcmc.engine.codes import NON_FINITE, NOT_PSD, OK
from sgmcmc.engine.kernels import Specialised, _finite, _inject, gradient_into

# The codes used here: frozen into the compiled code (as in kernels.py), checked at import.
_FROZEN = {"OK": 0, "NON_FINITE": 1, "NOT_PSD": 2}
kernels.check_frozen(__name__, _FROZEN)


def helpers_digest() -> str:
    """The digest of what this file compiles from :mod:`sgmcmc.engine.kernels` (:func:`~sgmcmc.engine.kernels.
    helpers_digest`)."""
    return kernels.helpers_digest(gradient_into, _inject, _finite)


HELPERS_DIGEST = "d6c26bcc193c8475"
CACHE = helpers_digest() == HELPERS_DIGEST


@numba.njit(cache=CACHE, inline="always")
def _noisy_gradient(kind, parameters, factor, theta, normals, step, slot, chain, out):
    """∇Ũ = ∇U(θ) + L z (``SyntheticTarget.stochastic_gradient``), z = ``normals[step, slot, chain]``."""
    gradient_into(kind, parameters, theta, out)
    d = theta.shape[0]
    for j in range(d):
        total = 0.0
        for k in range(d):
            total += normals[step, slot, chain, k] * factor[j, k]
        out[j] += total


@numba.njit(cache=CACHE, inline="always")
def _ou_fraction(rate, step_size):
    """(1 − e^{−2hc})/(2hc), 1 at c = 0 (``sgmcmc.samplers.baoab.ou_fraction``)."""
    u = 2.0 * step_size * rate
    if abs(u) < 1e-12:
        return 1.0
    return -math.expm1(-u) / u


@numba.njit(cache=CACHE)
def _splitting_block(kind, parameters, factor, thermostat, friction, diffusion_constant, mode, variance_diagonal,
                     variance, clip, theta0, momentum0, xi0, gradient0, normals, step_sizes, theta_path, momentum_path,
                     xi_path, gradient_path, clipped_path, bad_step, bad_code):
    """BAOAB (``thermostat`` False: friction C (d,)) or BADODAB (True: A = ``diffusion_constant``, ξ per chain),
    each step B A [D] O [D] A B with the gradient ∇Ũ(θ_n) of ``gradient0`` / the previous step."""
    n_chains, d = theta0.shape
    n_steps = step_sizes.shape[0]
    for i in range(n_chains):
        theta, momentum, gradient = theta0[i].copy(), momentum0[i].copy(), gradient0[i].copy()
        xi = xi0[i]
        half_theta, new_theta, new_momentum, new_gradient = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
        diffusion, noise, ones = np.empty(d), np.empty(d), np.ones(d)
        work = np.empty((d, d))
        bad_step[i], bad_code[i] = n_steps, OK
        for k in range(n_steps):
            step = step_sizes[k]
            half = 0.5 * step
            heat = 0.0
            for j in range(d):
                new_momentum[j] = momentum[j] - half * gradient[j]                          # B
                half_theta[j] = theta[j] + half * new_momentum[j]                           # A
                heat += new_momentum[j] ** 2
            new_xi = xi
            if thermostat:
                new_xi = xi + half * (heat / d - 1.0)                                       # D
                fraction = _ou_fraction(new_xi, step)
                for j in range(d):
                    diffusion[j] = diffusion_constant * fraction
            else:
                for j in range(d):
                    diffusion[j] = friction[j] * _ou_fraction(friction[j], step)
            status, clipped = _inject(step, diffusion, ones, mode, variance_diagonal, variance, clip, normals, k, 0, i,
                                      noise, work)
            if status != OK:
                bad_step[i], bad_code[i] = k, status
                break
            heat = 0.0
            for j in range(d):                                                              # O
                rate = new_xi if thermostat else friction[j]
                new_momentum[j] = math.exp(-step * rate) * new_momentum[j] + noise[j]
                heat += new_momentum[j] ** 2
            if thermostat:
                new_xi = new_xi + half * (heat / d - 1.0)                                   # D
            for j in range(d):
                new_theta[j] = half_theta[j] + half * new_momentum[j]                       # A
            _noisy_gradient(kind, parameters, factor, new_theta, normals, k, 1, i, new_gradient)
            for j in range(d):
                new_momentum[j] = new_momentum[j] - half * new_gradient[j]                  # B
            if not (_finite(new_theta) and _finite(new_momentum) and _finite(new_gradient) and math.isfinite(new_xi)):
                bad_step[i], bad_code[i] = k, NON_FINITE
                break
            for j in range(d):
                theta[j] = new_theta[j]
                momentum[j] = new_momentum[j]
                gradient[j] = new_gradient[j]
                theta_path[i, k, j] = new_theta[j]
                momentum_path[i, k, j] = new_momentum[j]
                gradient_path[i, k, j] = new_gradient[j]
            xi = new_xi
            xi_path[i, k] = xi
            clipped_path[i, k] = clipped


splitting_block = Specialised(_splitting_block, "kind", "thermostat", "mode", "clip")
