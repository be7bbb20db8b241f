"""Compiled blocks of steps (numba): each kernel advances every chain K steps on pre-drawn standard normals.

The kernels are line-for-line the closed-form numpy steps of the samplers (the readable reference, pinned to
these by ``tests/engine/test_compiled_blocks.py`` on identical random numbers):

- :func:`trajectory_block`: HMC, naive SGHMC (leapfrog, Eq. 10-11) and SGHMC + MH (Chen et al. 2014 Alg. 2), with
  the Metropolis–Hastings test on the exact H (its uniforms drawn after each step's normals, as the numpy step does).

BAOAB and BADODAB (one gradient per step, kept from block to block) are in :mod:`sgmcmc.engine.splitting_kernels`,
and pSGLD (``psgld``, ``psgld_no_gamma``: the RMSProp average kept from block to block, or the stationary
preconditioner with its Hessian diagonal) in :mod:`sgmcmc.engine.preconditioned_kernels`. Both compile
``gradient_into``, ``_inject`` and ``_finite`` from here: a change of them changes :func:`helpers_digest`, and their
``HELPERS_DIGEST`` must be updated (``tests/engine/test_splitting_kernels.py`` and ``test_preconditioned_kernels.py``
check it).

Random numbers: ``normals`` has shape (K, 2, c, d); step k of chain i uses ``normals[k, 0, i]`` for the gradient
noise ∇Ũ − ∇U = L z (L the target's noise factor) and ``normals[k, 1, i]`` for the injected noise: the order in which the numpy steps draw them, so a block drawn in one
call of the run's Generator is the same stream as K numpy steps.

Outputs: the paths (c, K, d) of θ (and r, and (c, K) of ξ), the number of clipped variances per step (c, K), and
per chain the first step that failed (K when none) with its code: :data:`NON_FINITE` (the state left the
floating-point range: the run stops as diverged, keeping the steps before) or :data:`NOT_PSD` (the injected
covariance ε(2D − εB̂) was not positive semidefinite: a :class:`~sgmcmc.recipe.RecipeError`). A chain stops at
its first failure; the caller keeps only the steps before the earliest one.

The chains run one after the other in one thread: measured on this 2-core machine, ``numba.prange`` over chains
tripled the compile time (about 60 s against 24 s for the old momentum kernel, under load) and gained nothing at one
chain; many-chain experiments already run two processes side by side.
"""

from __future__ import annotations

import hashlib
import inspect
import math
import os

import numba
import numpy as np
from numba import types

from sgmcmc.engine.codes import (ABOBA, CONSTANT_METRIC, DIAGONAL_ESTIMATE, EULER, LEAPFROG, NO_ESTIMATE, NON_FINITE,
                                 NOT_PSD, OK, SPLITTING, THETA_FIRST)
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
def _stochastic_gradient(kind, parameters, factor, theta, normals, step, chain, out):
    """∇Ũ = ∇U(θ) + L z (``SyntheticTarget.stochastic_gradient``), z = ``normals[step, 0, chain]``."""
    gradient_into(kind, parameters, theta, out)
    d = theta.shape[0]
    for j in range(d):
        total = 0.0
        for k in range(d):
            total += normals[step, 0, chain, k] * factor[j, k]
        out[j] += total


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


@numba.njit(cache=True, inline="always")
def potential_of(kind, parameters, theta):
    """U(θ) of one chain (the formula ``kind`` of :mod:`sgmcmc.engine.gradients`)."""
    d = theta.shape[0]
    total = 0.0
    if kind == QUADRATIC:
        for i in range(d):
            row = 0.0
            for j in range(d):
                row += parameters[d + i * d + j] * (theta[j] - parameters[j])
            total += (theta[i] - parameters[i]) * row
        return 0.5 * total
    if kind == DOUBLE_WELL:
        for i in range(d):
            total += theta[i] ** 4 - 2.0 * theta[i] ** 2
        return total
    if kind == LECTURE_QUARTIC:
        for i in range(d):
            x = theta[i]
            total += (x**4 + x**3 - 13.0 * x**2 - x + 12.0) / 14.0 + 0.5
        return total
    x, y = theta[0], theta[1]
    return x**4 / 10.0 + 0.5 * (4.0 * (y + 1.2) - x**2) ** 2


@numba.njit(cache=True, inline="always")
def _trajectory_gradient(kind, parameters, factor, stochastic, theta, normals, step, slot, chain, out):
    """∇U(θ), or ∇Ũ(θ) with z = ``normals[step, slot, chain]`` when ``stochastic``."""
    gradient_into(kind, parameters, theta, out)
    if stochastic:
        d = theta.shape[0]
        for j in range(d):
            total = 0.0
            for k in range(d):
                total += normals[step, slot, chain, k] * factor[j, k]
            out[j] += total


@numba.njit(cache=True)
def _trajectory_block(kind, parameters, factor, stochastic, trajectory, n_inner, friction, mode, variance_diagonal, variance,
                     metropolis, theta0, normals, uniforms, step_sizes, theta_path, momentum_path, accept_path,
                     bad_step, bad_code):
    """The resampled-trajectory samplers (``sgmcmc/samplers/hmc.py``, ``sghmc_mh.py``): r ~ N(0, I) (slot 0), then
    ``trajectory`` LEAPFROG (HMC / naive SGHMC: half kick, m × (drift, kick), the last kick a half; with ∇Ũ, slots
    1..m+1, when ``stochastic``) or ALGORITHM_2 (Chen et al. 2014 Alg. 2: m × (θ += εr, r += −ε∇Ũ − εCr +
    N(0, ε(2C − εV̂))), slots 1 + 2i and 2 + 2i), then, if ``metropolis``, the MH test on the exact H with the
    uniform ``uniforms[step, chain]``."""
    n_chains, d = theta0.shape
    n_steps = step_sizes.shape[0]
    for i in range(n_chains):
        theta = theta0[i].copy()
        start_momentum, momentum, proposal, gradient = np.empty(d), np.empty(d), np.empty(d), np.empty(d)
        noise, frictions, ones = np.empty(d), np.full(d, friction), np.ones(d)
        work = np.empty((d, d))
        bad_step[i], bad_code[i] = n_steps, OK
        for k in range(n_steps):
            step = step_sizes[k]
            for j in range(d):
                start_momentum[j] = normals[k, 0, i, j]
                momentum[j] = start_momentum[j]
                proposal[j] = theta[j]
            status = OK
            if trajectory == LEAPFROG:
                _trajectory_gradient(kind, parameters, factor, stochastic, proposal, normals, k, 1, i, gradient)
                for j in range(d):
                    momentum[j] = momentum[j] - 0.5 * step * gradient[j]
                for inner in range(n_inner):
                    for j in range(d):
                        proposal[j] = proposal[j] + step * momentum[j]
                    scale = 0.5 if inner == n_inner - 1 else 1.0
                    _trajectory_gradient(kind, parameters, factor, stochastic, proposal, normals, k, 2 + inner, i, gradient)
                    for j in range(d):
                        momentum[j] = momentum[j] - scale * step * gradient[j]
            else:
                for inner in range(n_inner):
                    for j in range(d):
                        proposal[j] = proposal[j] + step * momentum[j]
                    _trajectory_gradient(kind, parameters, factor, True, proposal, normals, k, 1 + 2 * inner, i, gradient)
                    status, _ = _inject(step, frictions, ones, mode, variance_diagonal, variance, False, normals, k,
                                        2 + 2 * inner, i, noise, work)
                    if status != OK:
                        break
                    for j in range(d):
                        momentum[j] = momentum[j] - step * gradient[j] - step * frictions[j] * momentum[j] + noise[j]
            if status != OK:
                bad_step[i], bad_code[i] = k, status
                break
            accept = 1.0
            if metropolis:
                old_energy = potential_of(kind, parameters, theta)
                new_energy = potential_of(kind, parameters, proposal)
                for j in range(d):
                    old_energy += 0.5 * start_momentum[j] ** 2
                    new_energy += 0.5 * momentum[j] ** 2
                log_ratio = old_energy - new_energy if math.isfinite(new_energy) else -math.inf
                accept = math.exp(min(log_ratio, 0.0))
                if not uniforms[k, i] < accept:
                    for j in range(d):
                        proposal[j] = theta[j]
                        momentum[j] = start_momentum[j]
            if not (_finite(proposal) and _finite(momentum)):
                bad_step[i], bad_code[i] = k, NON_FINITE
                break
            for j in range(d):
                theta[j] = proposal[j]
                theta_path[i, k, j] = proposal[j]
                momentum_path[i, k, j] = momentum[j]
            accept_path[i, k] = accept


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


trajectory_block = Specialised(_trajectory_block, "kind", "stochastic", "trajectory", "mode", "metropolis")
