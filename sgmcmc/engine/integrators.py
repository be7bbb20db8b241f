"""The updates, one chain and one step at a time, each written once: compiled in the blocks of
:mod:`sgmcmc.engine.driver`, and run as plain Python as the readable reference (the same source).

Every integrator has the signature ``step(source, parameters, options, variance, θ, r, ξ, normals, rows, ε, work,
square) -> (status, clipped)`` and updates θ (d,), r (d,) and ξ (1,) in place:

- ``source``, ``normals`` (slots, d) and ``rows``: the gradient estimate ∇Ũ = ``source[0](source, at, normals,
  rows)`` (:mod:`sgmcmc.engine.estimators`); ``normals[1]`` are the injected noise's standard normals;
- ``parameters``: the sampler's constants (SGHMC's friction C, the thermostat's diffusion A);
- ``options``: (integrator, how V̂ enters, clip) (:mod:`sgmcmc.engine.codes`, :mod:`sgmcmc.engine.injection`);
- ``variance``: V̂ (d, d), subtracted from the injected covariance (SPEC §4.3);
- ``work`` (4, d) and ``square`` (d, d): scratch.

The recipe's (H, D, Q, Γ) of each (Ma et al. 2015) is in the sampler's file; ``tests/engine/test_integrators.py``
pins each integrator to the generic recipe step (:func:`sgmcmc.recipe.recipe_step`) on the same random numbers.
"""

from __future__ import annotations

import numba

from sgmcmc.engine.injection import inject

# the order of θ's and r's moves (SPEC §4.1): r' first and θ' = θ + εr' (splitting), both from the old state (euler),
# θ first, the gradient at the moved θ (theta_first, Shang et al. 2015 Eq. 12 and 14)
SPLITTING, EULER, THETA_FIRST = 0, 1, 2


@numba.njit(cache=True)
def langevin(source, parameters, options, variance, theta, momentum, xi, normals, rows, step_size, work, square):
    """SGLD (Ma et al. 2015 Eq. 13, D = I): θ' = θ − ε∇Ũ(θ) + N(0, ε(2I − εV̂))."""
    gradient = source[0](source, theta, normals, rows)
    ones, noise = work[0], work[1]
    ones[:] = 1.0
    status, clipped = inject(step_size, ones, ones, options[1], variance, options[2], normals[1], noise, square)
    for j in range(theta.shape[0]):
        theta[j] += -step_size * gradient[j] + noise[j]
    return status, clipped


@numba.njit(cache=True)
def momentum_friction(source, parameters, options, variance, theta, momentum, xi, normals, rows, step_size, work,
                      square):
    """SGHMC (Ma et al. 2015 Eq. 12, friction C = ``parameters[0]``): r' = r − ε∇Ũ − εCr + N(0, ε(2C − εV̂)),
    θ' = θ + εr' (splitting), θ + εr (euler), or θ moved first and ∇Ũ taken there (theta_first)."""
    gradient = source[0](source, _evaluated_at(options[0], theta, momentum, step_size, work[2]), normals, rows)
    friction, noise, scale = work[0], work[1], work[3]
    friction[:] = parameters[0]
    scale[:] = 1.0
    status, clipped = inject(step_size, friction, scale, options[1], variance, options[2], normals[1], noise, square)
    _move(options[0], theta, momentum, gradient, friction, noise, step_size, work[2])
    return status, clipped


@numba.njit(cache=True)
def thermostat(source, parameters, options, variance, theta, momentum, xi, normals, rows, step_size, work, square):
    """SGNHT (Ma et al. 2015 Eq. 15, diffusion A = ``parameters[0]``): r' = r − ε∇Ũ − εξr + N(0, ε(2A − εV̂)),
    θ' as :func:`momentum_friction`'s, ξ' = ξ + ε(kᵀk/d − 1) with k = r (euler) or r'."""
    d = theta.shape[0]
    gradient = source[0](source, _evaluated_at(options[0], theta, momentum, step_size, work[2]), normals, rows)
    diffusion, noise, scale = work[0], work[1], work[3]
    diffusion[:] = parameters[0]
    scale[:] = 1.0
    status, clipped = inject(step_size, diffusion, scale, options[1], variance, options[2], normals[1], noise, square)
    heat = 0.0
    if options[0] == EULER:
        for j in range(d):
            heat += momentum[j] ** 2
    diffusion[:] = xi[0]
    _move(options[0], theta, momentum, gradient, diffusion, noise, step_size, work[2])
    if options[0] != EULER:
        for j in range(d):
            heat += momentum[j] ** 2
    xi[0] += step_size * (heat / d - 1.0)
    return status, clipped


@numba.njit(cache=True)
def _evaluated_at(integrator, theta, momentum, step_size, at):
    """Where ∇Ũ is taken: θ, or θ + εr for theta_first (written into ``at``)."""
    if integrator == THETA_FIRST:
        for j in range(theta.shape[0]):
            at[j] = theta[j] + step_size * momentum[j]
        return at
    return theta


@numba.njit(cache=True)
def _move(integrator, theta, momentum, gradient, friction, noise, step_size, at):
    """r' = r − ε∇Ũ − ε F r + noise (F = ``friction``, diagonal) and θ' per ``integrator``."""
    for j in range(theta.shape[0]):
        old = momentum[j]
        momentum[j] = old - step_size * gradient[j] - step_size * friction[j] * old + noise[j]
        if integrator == THETA_FIRST:
            theta[j] = at[j]
        elif integrator == SPLITTING:
            theta[j] += step_size * momentum[j]
        else:
            theta[j] += step_size * old
