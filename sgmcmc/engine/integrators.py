"""The updates, one chain and one step at a time, each written once: compiled in the blocks of
:mod:`sgmcmc.engine.driver`, and run as plain Python as the readable reference (the same source).

Every integrator has the signature ``step(source, parameters, options, variance, θ, r, ξ, rows, ε, normals,
gradient, noise, diffusion, scale, at, square) -> (status, clipped)`` and updates θ (d,), r (d,) and ξ (1,) in place:

- ``source``, ``rows`` and ``normals`` (slots, d): the gradient estimate ∇Ũ, written into ``gradient`` by
  ``call5(source[0], source, at, normals, rows, gradient)`` (:mod:`sgmcmc.engine.estimators`); ``normals[1]`` are the
  injected noise's standard normals;
- ``parameters``: the sampler's constants (SGHMC's friction C, the thermostat's diffusion A);
- ``options``: (integrator, how V̂ enters, clip) (:mod:`sgmcmc.engine.codes`, :mod:`sgmcmc.engine.injection`);
- ``variance``: V̂ (d, d), subtracted from the injected covariance (SPEC §4.3);
- ``gradient``, ``noise``, ``diffusion``, ``scale``, ``at`` (d,) and ``square`` (d, d): working arrays.

The recipe's (H, D, Q, Γ) of each (Ma et al. 2015) is in the sampler's file; ``tests/engine/test_integrators.py``
pins each integrator to the generic recipe step (:func:`sgmcmc.recipe.recipe_step`) on the same random numbers.
"""

from __future__ import annotations

import numba

from sgmcmc.engine.injection import inject
from sgmcmc.engine.static import call5

# the order of θ's and r's moves (SPEC §4.1): r' first and θ' = θ + εr' (splitting), both from the old state (euler),
# θ first, the gradient at the moved θ (theta_first, Shang et al. 2015 Eq. 12 and 14)
SPLITTING, EULER, THETA_FIRST = 0, 1, 2


@numba.njit(cache=True)
def langevin(source, parameters, options, variance, theta, momentum, xi, rows, step_size, normals, gradient, noise,
             diffusion, scale, at, square):
    """SGLD (Ma et al. 2015 Eq. 13, D = I): θ' = θ − ε∇Ũ(θ) + N(0, ε(2I − εV̂))."""
    call5(source[0], source, _evaluated_at(options[0], theta, momentum, step_size, at), normals, rows, gradient)
    diffusion[:] = 1.0
    status, clipped = inject(step_size, diffusion, diffusion, options[1], variance, options[2], normals, noise, square)
    for j in range(theta.shape[0]):
        theta[j] = theta[j] - step_size * gradient[j] + noise[j]  # (θ − ε∇Ũ) + noise: the numpy step's rounding
    return status, clipped


@numba.njit(cache=True)
def momentum_friction(source, parameters, options, variance, theta, momentum, xi, rows, step_size, normals, gradient,
                      noise, diffusion, scale, at, square):
    """SGHMC (Ma et al. 2015 Eq. 12, friction C = ``parameters[0]``): r' = r − ε∇Ũ − εCr + N(0, ε(2C − εV̂)),
    θ' = θ + εr' (splitting), θ + εr (euler), or θ moved first and ∇Ũ taken there (theta_first)."""
    call5(source[0], source, _evaluated_at(options[0], theta, momentum, step_size, at), normals, rows, gradient)
    diffusion[:] = parameters[0]  # D's r block: the friction C
    scale[:] = 1.0
    status, clipped = inject(step_size, diffusion, scale, options[1], variance, options[2], normals, noise, square)
    _move(options[0], theta, momentum, gradient, diffusion, noise, step_size, at)
    return status, clipped


@numba.njit(cache=True)
def thermostat(source, parameters, options, variance, theta, momentum, xi, rows, step_size, normals, gradient, noise,
               diffusion, scale, at, square):
    """SGNHT (Ma et al. 2015 Eq. 15, diffusion A = ``parameters[0]``): r' = r − ε∇Ũ − εξr + N(0, ε(2A − εV̂)),
    θ' as :func:`momentum_friction`'s, ξ' = ξ + ε(kᵀk/d − 1) with k = r (euler) or r'."""
    d = theta.shape[0]
    call5(source[0], source, _evaluated_at(options[0], theta, momentum, step_size, at), normals, rows, gradient)
    diffusion[:] = parameters[0]
    scale[:] = 1.0
    status, clipped = inject(step_size, diffusion, scale, options[1], variance, options[2], normals, noise, square)
    heat = 0.0
    if options[0] == EULER:
        for j in range(d):
            heat += momentum[j] * momentum[j]
    diffusion[:] = xi[0]  # the thermostat's friction ξ, in D's array (its A is no longer needed)
    _move(options[0], theta, momentum, gradient, diffusion, noise, step_size, at)
    if options[0] != EULER:
        for j in range(d):
            heat += momentum[j] * momentum[j]
    xi[0] += step_size * (heat / d - 1.0)
    return status, clipped


@numba.njit(cache=True, inline="always")
def _evaluated_at(integrator, theta, momentum, step_size, at):
    """Where ∇Ũ is taken: θ, or θ + εr for theta_first (written into ``at``). Every integrator passes θ to its
    gradient through this: measured on the double well (SGLD, 1,000 chains), handing the inlined estimator θ itself
    cost 57 ns a chain-step against 22 ns through this function, the same source otherwise."""
    if integrator == THETA_FIRST:
        for j in range(theta.shape[0]):
            at[j] = theta[j] + step_size * momentum[j]
        return at
    return theta


@numba.njit(cache=True, inline="always")
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
