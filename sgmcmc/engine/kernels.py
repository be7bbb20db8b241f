"""What the old compiled kernels still in use share (numba): BAOAB and BADODAB (:mod:`sgmcmc.engine.splitting_kernels`)
and pSGLD (:mod:`sgmcmc.engine.preconditioned_kernels`), the samplers not yet on the engine's blocks
(:mod:`sgmcmc.engine.driver`). Both compile ``gradient_into`` (the built-in formulas, by code), ``_inject`` and
``_finite`` from here: a change of them changes :func:`helpers_digest`, and their ``HELPERS_DIGEST`` must be updated
(``tests/engine/test_splitting_kernels.py`` and ``test_preconditioned_kernels.py`` check it). :class:`Specialised`
compiles a kernel once per value of its dispatch arguments.

Random numbers: ``normals`` has shape (K, 2, c, d); step k of chain i uses ``normals[k, 0, i]`` for the gradient
noise ∇Ũ − ∇U = L z (L the target's noise factor) and ``normals[k, 1, i]`` for the injected noise: the order in which
the numpy steps draw them, so a block drawn in one call of the run's Generator is the same stream as K numpy steps.
A kernel reports per chain the first step that failed (K when none) with its code: :data:`NON_FINITE` (the state left
the floating-point range) or :data:`NOT_PSD` (the injected covariance ε(2D − εB̂) was not positive semidefinite).
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os

import numba
import numpy as np
from numba import types

from sgmcmc.engine.codes import DIAGONAL_ESTIMATE, NO_ESTIMATE, NOT_PSD, OK
from sgmcmc.engine import codes, gradients
from sgmcmc.engine.gradients import CORRELATED_2D, DOUBLE_WELL, LECTURE_QUARTIC, QUADRATIC

# numba freezes these constants into the compiled code, and its on-disk cache is keyed on this file alone: a change of
# codes.py or gradients.py that leaves this file as it is would run stale kernels. So their values are written here
# too, and a mismatch stops the import (change both files together).
_FROZEN = {"OK": 0, "NON_FINITE": 1, "NOT_PSD": 2, "CONSTANT_METRIC": 0, "RATIONAL_METRIC": 1, "SPLITTING": 0, "EULER": 1,
           "THETA_FIRST": 2, "ABOBA": 3, "LEAPFROG": 0, "ALGORITHM_2": 1, "NO_ESTIMATE": 0, "DIAGONAL_ESTIMATE": 1,
           "FULL_ESTIMATE": 2, "QUADRATIC": 0, "DOUBLE_WELL": 1, "LECTURE_QUARTIC": 2, "CORRELATED_2D": 3}


def check_frozen(module: str, frozen: dict) -> None:
    """Stop the import of kernel file ``module`` when a code it froze into its compiled code (``frozen``: name →
    value, from :mod:`~sgmcmc.engine.codes` or :mod:`~sgmcmc.engine.gradients`) has another value now."""
    changed = [name for name, value in frozen.items() if getattr(codes, name, getattr(gradients, name, None)) != value]
    if changed:
        raise RuntimeError(f"{module}: the codes {', '.join(changed)} differ from the values this file was compiled "
                           "with; update _FROZEN there (which also renews numba's cache)")


check_frozen(__name__, _FROZEN)


def helpers_digest(*helpers) -> str:
    """The digest of compiled helpers of this file that another file compiles into its own kernels (their source and
    the codes frozen here). numba's on-disk cache of that file does not see a change of them: the file records this
    digest as it was written and compiles without its cache where the imported helpers' digest differs
    (:mod:`sgmcmc.engine.splitting_kernels`, :mod:`sgmcmc.engine.preconditioned_kernels`; their tests fail until the
    recorded digest is updated, which renews the cache)."""
    source = "".join(inspect.getsource(helper.py_func) for helper in helpers)
    source += repr(sorted(_FROZEN.items()))
    return hashlib.sha256(source.encode()).hexdigest()[:16]


@numba.njit(cache=True, inline="always")
def gradient_into(kind, parameters, theta, out):
    """∇U(θ) of one chain's θ (d,) into ``out`` (d,): the formula ``kind`` of :mod:`sgmcmc.engine.gradients`."""
    d = theta.shape[0]
    if kind == QUADRATIC:
        for i in range(d):
            total = 0.0
            for j in range(d):
                total += parameters[d + i * d + j] * (theta[j] - parameters[j])
            out[i] = total
    elif kind == DOUBLE_WELL:
        for i in range(d):
            x = theta[i]
            out[i] = 4.0 * x**3 - 4.0 * x
    elif kind == LECTURE_QUARTIC:
        for i in range(d):
            x = theta[i]
            out[i] = (4.0 * x**3 + 3.0 * x**2 - 26.0 * x - 1.0) / 14.0
    elif kind == CORRELATED_2D:
        x, y = theta[0], theta[1]
        residual = 4.0 * (y + 1.2) - x**2
        out[0] = 0.4 * x**3 - 2.0 * x * residual
        out[1] = 4.0 * residual


@numba.njit(cache=True, inline="always")
def _inject(step_size, diffusion, scale, mode, variance_diagonal, variance, clip, normals, step, slot, chain, out, work):
    """N(0, ε(2D − ε T V̂ T)) into ``out`` (``sgmcmc.noise.injected_noise``) with z = ``normals[step, slot, chain]``:
    returns (status, clipped count)."""
    d = diffusion.shape[0]
    if mode == NO_ESTIMATE:
        for j in range(d):
            out[j] = math.sqrt(2.0 * step_size * diffusion[j]) * normals[step, slot, chain, j]
        return OK, 0
    if mode == DIAGONAL_ESTIMATE:
        clipped = 0
        for j in range(d):
            value = step_size * (2.0 * diffusion[j] - step_size * scale[j] ** 2 * variance_diagonal[j])
            if value < 0:
                if not clip:
                    return NOT_PSD, 0
                value = 0.0
                clipped += 1
            out[j] = math.sqrt(value) * normals[step, slot, chain, j]
        return OK, clipped
    # full V̂: ε(2D − ε T V̂ T) = L Lᵀ, noise L z
    for i in range(d):
        for j in range(d):
            work[i, j] = -(step_size**2) * scale[i] * variance[i, j] * scale[j]
        work[i, i] += 2.0 * step_size * diffusion[i]
    for j in range(d):
        pivot = work[j, j]
        for k in range(j):
            pivot -= work[j, k] * work[j, k]
        if not pivot > 0:
            return NOT_PSD, 0
        pivot = math.sqrt(pivot)
        work[j, j] = pivot
        for i in range(j + 1, d):
            value = work[i, j]
            for k in range(j):
                value -= work[i, k] * work[j, k]
            work[i, j] = value / pivot
    for i in range(d):
        total = 0.0
        for k in range(i + 1):
            total += work[i, k] * normals[step, slot, chain, k]
        out[i] = total
    return OK, 0


@numba.njit(cache=True, inline="always")
def _finite(values):
    for value in values:
        if not math.isfinite(value):
            return False
    return True


# Off (environment SGMCMC_SPECIALISE_KERNELS=0) runs the generic kernels: the same source, so the same bits
# (tests/engine/test_specialised.py checks this) and a dozen compiled variants in all instead of one per combination:
# the engine tests alone asked for more than a hundred, still compiling after 22 minutes from a cold cache on this
# machine under load. The test suite runs the generic kernels; a run compiles only the combination it uses.
SPECIALISE = os.environ.get("SGMCMC_SPECIALISE_KERNELS", "1") != "0"


class Specialised:
    """A block kernel compiled once per value of its dispatch arguments (the gradient formula, the metric, the
    integrator, the noise mode, clipping, …): they are given to numba as literal types, so its branch pruning and
    LLVM drop the branches a run never takes. Measured on the double well with 1,000 chains (SGLD): 103 ns per
    chain-step as one generic kernel against 20 ns specialised. Each combination compiles on first use and is
    cached on disk (``cache=True``) like any other signature; the compiled entry point is then called directly."""

    def __init__(self, kernel, *dispatch: str):
        parameters = list(inspect.signature(kernel.py_func).parameters)
        self.kernel = kernel
        self.positions = frozenset(parameters.index(name) for name in dispatch)
        self.entries = {}
        self.__doc__ = kernel.py_func.__doc__

    def __call__(self, *args):
        if not SPECIALISE:
            return self.kernel(*args)
        key = tuple(_literal_value(value) if position in self.positions else _fingerprint(value)
                    for position, value in enumerate(args))
        entry = self.entries.get(key)
        if entry is None:
            signature = tuple(types.literal(_literal_value(value)) if position in self.positions else numba.typeof(value)
                              for position, value in enumerate(args))
            self.kernel.compile(signature)
            entry = self.entries[key] = self.kernel.overloads[signature].entry_point
        return entry(*args)


def _literal_value(value):
    return bool(value) if isinstance(value, (bool, np.bool_)) else int(value)


def _fingerprint(value):
    """What fixes numba's type of an argument (an array's dtype, rank, layout and flags; else its Python type), cheaper
    than ``numba.typeof`` (measured under load: 21 µs for a kernel's 17 arguments against 278 µs), which then runs
    only when a fingerprint is new."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return value.dtype.str, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable, flags.aligned
    return type(value)


