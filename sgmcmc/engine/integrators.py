"""The updates, one chain and one step at a time, each written once: compiled in the blocks of
:mod:`sgmcmc.engine.driver`, and run as plain Python as the readable reference (the same source).

Every integrator has the signature ``step(source, parameters, options, variance, θ, r, ξ, carry, memory, rows, ε,
normals, uniform, gradient, noise, diffusion, scale, at, correction, square) -> (status, clipped, reflected,
acceptance probability)`` and updates θ (d,), r (d,), ξ (1,), ``carry`` (m,) and ``memory`` in place (and may
overwrite ``normals``, the step's scratch copy that the driver refills at every step: ou_splitting does):

- ``carry``: the vector an integrator keeps from one step to the next besides θ, r and ξ (BAOAB's last gradient,
  pSGLD's RMSProp average; empty for the others), a :class:`~sgmcmc.state.SamplerState` field the driver hands over;
  ``memory`` the gradient estimator's (its running noise estimate), which the integrator hands to the estimator;

- ``source``, ``rows`` and ``normals`` (slots, d): the gradient estimate ∇Ũ, written into ``gradient`` by
  ``call7(source[0], source, at, normals, rows, memory, gradient, variance)`` (:mod:`sgmcmc.engine.estimators`, which
  updates the chain's estimator state ``memory`` and, where it estimates its noise, writes V̂ into ``variance``; its
  V̂ alone, at a point, by ``call4(source[6], source, θ, memory, variance)``);
  ``normals[1]`` are the injected noise's standard normals (ou_splitting's are ``normals[0]``; a trajectory hands each of its gradients and injections its own slots); U, where a
  Metropolis–Hastings test needs it, by ``call3(source[5], source, θ, memory)``; ``uniform`` is the test's uniform;
- ``source[-1]``, the target's reflection into its support, ``reflect(θ, r) -> count`` (appended by the driver; see
  :class:`sgmcmc.engine.driver.Blocks`): called on θ right after each move of θ (after the move, before anything is evaluated at the new θ: theta_first reflects θ + εSr and
  flips the old r before its gradient; splitting and euler reflect θ' and flip r'; ABOBA, BAOAB and BADODAB after
  each half move); the counts of a step are summed into ``reflected``. A target on all of R^d has the driver's
  ``no_reflection``, inlined to nothing; a trajectory (HMC, SGHMC + MH) does not reflect (those samplers refuse a
  bounded target);
- ``parameters``: ``(metric, flow, the metric's parameters, constants[, curvature, its parameters, moments, their
  arguments])``.
  ``metric(θ, its parameters, root, derivative)`` writes the diagonal S = G(θ)^{-1/2} and ∂_i S_ii (SPEC §4.2), ``flow(θ, r, t, its parameters, out)``
  the position flow Φ_t of θ̇ = S(θ)r (returning the coordinates whose flow crossed the support's boundary and came
  back, their r flipped in place: counted with the reflections): the Riemannian samplers' G handed over as functions
  (:meth:`sgmcmc.geometry.DiagonalMetric.engine_function`), the identity's for the others; the constants are the
  sampler's (SGHMC's friction C, the thermostat's diffusion A); ``curvature(θ, its parameters, out)``, where a
  sampler needs it, writes the target's ∂²U/∂θ_i², and ``moments`` ∇U(θ), v(θ) and Γ's bracket (pSGLD's stationary
  preconditioner, :func:`preconditioned`);
- ``options``: (order, how V̂ enters, clip, variant) as integer literals (:data:`SPLITTING` …,
  :mod:`sgmcmc.engine.injection`, 0/1, :data:`PLAIN` …);
- ``variance``: V̂ (d, d), subtracted from the injected covariance (SPEC §4.3): constant, or the estimator's; the row
  (1, d) of its diagonal where it enters by its diagonal or not at all
  (:func:`~sgmcmc.engine.injection.variance_diagonal`);
- ``gradient``, ``noise``, ``diffusion``, ``scale``, ``at``, ``correction`` (d,) and ``square`` (d, d) where V̂ enters
  in full, else (1, d): working arrays.

The recipe's (H, D, Q, Γ) of each (Ma et al. 2015) is in the sampler's file; ``tests/engine/test_driver.py`` pins each
integrator to the generic recipe step (:func:`sgmcmc.recipe.recipe_step`) on the same random numbers.
"""

from __future__ import annotations

import math

import numba

from sgmcmc.engine.injection import NO_ESTIMATE, OK, inject
from sgmcmc.engine.static import call2, call3, call4, call5, call7, call9

# the order of θ's and r's moves (SPEC §4.1): r' first and θ' = θ + εSr' (splitting), both from the old state (euler),
# θ first, the gradient at the moved θ (theta_first, Shang et al. 2015 Eq. 12 and 14), the ABOBA splitting (aboba);
# a resampled trajectory's: leapfrog (HMC, naive SGHMC), Chen et al. 2014 Algorithm 2 (SGHMC + MH)
SPLITTING, EULER, THETA_FIRST, ABOBA, LEAPFROG, ALGORITHM_2 = 0, 1, 2, 3, 4, 5
# the Leimkuhler–Matthews splittings with one gradient per step (ou_splitting): BAOAB, BADODAB
BAOAB, BADODAB = 6, 7
# options[3], the integrator's variant: the sampler as its recipe says (PLAIN), or naive SGRHMC's dropped correction γ
# (momentum_friction and aboba; Ma et al. 2015 Eq. 16: not stationary where G depends on θ), or CCAdL's
# covariance-controlled friction (thermostat; Shang et al. 2015 Eq. 12), or the Metropolis–Hastings test after a
# trajectory (trajectory)
PLAIN, WITHOUT_CORRECTION, COVARIANCE_FRICTION, METROPOLIS = 0, 1, 1, 1
# pSGLD's preconditioner (preconditioned): the stationary one with Γ (PLAIN), without it (WITHOUT_CORRECTION, Li et
# al.'s published step), or Li et al.'s running average (RUNNING, Γ = 0); the stationary one from a moments function of
# the model's (a data model's, or a density model's without its own ∂²U/∂θ_i²), with Γ (MOMENTS) or without it
# (MOMENTS_WITHOUT_CORRECTION)
RUNNING, MOMENTS, MOMENTS_WITHOUT_CORRECTION = 2, 3, 4
# the carried vector's first pass (ou_splitting): a state without the kept ∇Ũ(θ_n) (a run's first step) takes it at θ_n
# in a pass of its own that moves nothing, its random numbers drawn as a step's (sgmcmc.engine.driver.Blocks.first_carry)
FIRST_CARRY = 5


@numba.njit(cache=True)
def langevin(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals, uniform,
             gradient, noise, diffusion, scale, at, correction, square):
    """SGLD and SGRLD (Ma et al. 2015 Eq. 13 and 14 with +Γ, SPEC §0 K1): θ' = θ + ε(−G⁻¹∇Ũ + Γ) +
    N(0, ε(2G⁻¹ − εG⁻¹V̂G⁻¹)), G⁻¹ = S², Γ_i = ∂_i(G⁻¹)_ii = 2 S_ii ∂_i S_ii; SGLD's G = I gives
    θ' = θ − ε∇Ũ + N(0, ε(2I − εV̂)) to the bit."""
    call7(source[0], source, _evaluated_at(options[0], theta, momentum, step_size, at, scale), normals, rows, memory,
          gradient, variance)
    call4(parameters[0], theta, parameters[2], scale, correction)
    for j in range(theta.shape[0]):
        diffusion[j] = scale[j] * scale[j]
        correction[j] = 2.0 * scale[j] * correction[j]
    status, clipped = inject(step_size, diffusion, diffusion, options[1], variance, options[2], normals, noise, square)
    for j in range(theta.shape[0]):
        theta[j] = theta[j] + step_size * (-diffusion[j] * gradient[j] + correction[j]) + noise[j]
    return status, clipped, call2(source[-1], theta, momentum), 1.0


@numba.njit(cache=True)
def momentum_friction(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals,
                      uniform, gradient, noise, diffusion, scale, at, correction, square):
    """SGHMC (Ma et al. 2015 Eq. 12: S = I, F = C·I, γ = 0), gSGRHMC (Algorithm 1 with SPEC §0 K2's signs:
    S = G^{-1/2}, F = G⁻¹, γ_i = ∂_i S_ii) and naive SGRHMC (Eq. 16: γ dropped), with F = C·S², C = ``constants[0]``
    (1 for the Riemannian two): r' = r − εS∇Ũ − εFr + εγ + N(0, ε(2F − εSV̂S)); θ' = θ + εSr' (splitting), θ + εSr
    (euler), or θ moved first to θ + εS(θ)r with S, F, γ and ∇Ũ taken there (theta_first)."""
    call4(parameters[0], theta, parameters[2], scale, correction)
    point = _evaluated_at(options[0], theta, momentum, step_size, at, scale)
    reflected = 0
    if options[0] == THETA_FIRST:  # θ + εS(θ)r reflected (r flipped) before anything is taken there
        reflected = call2(source[-1], point, momentum)
    call7(source[0], source, point, normals, rows, memory, gradient, variance)
    if options[0] == THETA_FIRST:
        call4(parameters[0], point, parameters[2], scale, correction)
    for j in range(theta.shape[0]):
        diffusion[j] = parameters[3][0] * scale[j] * scale[j]
        if options[3] == WITHOUT_CORRECTION:
            correction[j] = 0.0
    status, clipped = inject(step_size, diffusion, scale, options[1], variance, options[2], normals, noise, square)
    _move(options[0], theta, momentum, gradient, scale, diffusion, correction, noise, step_size, at)
    if options[0] != THETA_FIRST:
        reflected = call2(source[-1], theta, momentum)
    return status, clipped, reflected, 1.0


@numba.njit(cache=True)
def aboba(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals, uniform,
          gradient, noise, diffusion, scale, at, correction, square):
    """:func:`momentum_friction`'s recipe in Leimkuhler & Matthews' ABOBA order (``sgmcmc/samplers/momentum_recipe.py``):
    θ_h = Φ_{ε/2}(θ, r); f = −S∇Ũ(θ_h) + γ with S, F, γ at θ_h; r₁ = r + (ε/2)f; the friction and noise solved
    exactly, r₂ = e^{−εF} r₁ + √(1 − e^{−2εF}) ξ; r' = r₂ + (ε/2)f; θ' = Φ_{ε/2}(θ_h, r'). No V̂ correction."""
    half = 0.5 * step_size
    reflected = call5(parameters[1], theta, momentum, half, parameters[2], at)
    reflected += call2(source[-1], at, momentum)
    call7(source[0], source, at, normals, rows, memory, gradient, variance)
    call4(parameters[0], at, parameters[2], scale, correction)
    for j in range(theta.shape[0]):
        if options[3] == WITHOUT_CORRECTION:
            correction[j] = 0.0
        force = -scale[j] * gradient[j] + correction[j]
        value = momentum[j] + half * force
        decay = step_size * (parameters[3][0] * scale[j] * scale[j])
        value = math.exp(-decay) * value + math.sqrt(-math.expm1(-2.0 * decay)) * normals[1, j]
        momentum[j] = value + half * force
    reflected += call5(parameters[1], at, momentum, half, parameters[2], theta)
    reflected += call2(source[-1], theta, momentum)
    return OK, 0, reflected, 1.0


@numba.njit(cache=True)
def thermostat(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals, uniform,
               gradient, noise, diffusion, scale, at, correction, square):
    """SGNHT (Ma et al. 2015 Eq. 15, diffusion A = ``constants[0]``): r' = r − ε∇Ũ − εξr + N(0, ε(2A − εV̂)),
    θ' as :func:`momentum_friction`'s with S = I, ξ' = ξ + ε(kᵀk/d − 1) with k = r (euler) or r'. CCAdL (variant
    :data:`COVARIANCE_FRICTION`, Shang et al. 2015 Eq. 12 and Algorithm 1 with Σ̂ = ``variance``): r' also loses
    ε(ε/2)Σ̂r, and the injected noise is N(0, 2εA) (nothing subtracted)."""
    d = theta.shape[0]
    for j in range(d):
        scale[j], correction[j] = 1.0, 0.0
    point = _evaluated_at(options[0], theta, momentum, step_size, at, scale)
    reflected = 0
    if options[0] == THETA_FIRST:  # θ + εr reflected (r flipped) before its gradient
        reflected = call2(source[-1], point, momentum)
    call7(source[0], source, point, normals, rows, memory, gradient, variance)
    if options[3] == COVARIANCE_FRICTION:  # −(ε/2)Σ̂r of the old r, in the place of γ, with this step's Σ̂
        for j in range(d):
            total = 0.0
            if variance.shape[0] == 1:  # Σ̂ diagonal (its row), or none (zeros)
                total = 0.5 * step_size * variance[0, j] * momentum[j]
            else:
                for m in range(d):
                    total += 0.5 * step_size * variance[j, m] * momentum[m]
            correction[j] = -total
    for j in range(d):
        diffusion[j] = parameters[3][0]
    mode = NO_ESTIMATE if options[3] == COVARIANCE_FRICTION else options[1]  # CCAdL subtracts nothing
    status, clipped = inject(step_size, diffusion, scale, mode, variance, options[2], normals, noise, square)
    heat = 0.0
    if options[0] == EULER:
        for j in range(d):
            heat += momentum[j] * momentum[j]
    for j in range(d):  # the thermostat's friction ξ, in D's array (its A is no longer needed)
        diffusion[j] = xi[0]
    # r'ᵀr' summed in _move's loop, before the reflection (which only negates entries of r: the same sum): measured on
    # the double well (1 chain), SGNHT took 155 ns a step with a loop of its own here, 53-58 ns so
    kinetic = _move(options[0], theta, momentum, gradient, scale, diffusion, correction, noise, step_size, at)
    if options[0] != THETA_FIRST:
        reflected = call2(source[-1], theta, momentum)
    if options[0] != EULER:
        heat = kinetic
    xi[0] += step_size * (heat / d - 1.0)
    return status, clipped, reflected, 1.0


@numba.njit(cache=True)
def trajectory(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals, uniform,
               gradient, noise, diffusion, scale, at, correction, square):
    """HMC and naive SGHMC (Ma et al. 2015 Eq. 10-11, ``sgmcmc/samplers/hmc.py``: options[0] = :data:`LEAPFROG`) and
    SGHMC + MH (Chen et al. 2014 Algorithm 2, ``sghmc_mh.py``: :data:`ALGORITHM_2`, friction C = ``constants[0]``):
    r ~ N(0, I) from ``normals[0]``, a trajectory of m = ``constants[1]`` steps, each gradient and injection reading
    its own normal slots (leapfrog: half kick, m × (drift, kick), the last kick a half; Algorithm 2: m × (θ += εr,
    r += −ε∇Ũ − εCr + N(0, ε(2C − εV̂)))), then, with the variant :data:`METROPOLIS`, the Metropolis–Hastings test on
    the exact H = U + ½rᵀr with ``uniform`` (SPEC §0 K4). Each gradient takes its equal share of the step's ``rows``
    (a data model's minibatch of its own; all N rows for HMC's exact ∇U). Steps of one normal slot have gradients
    that read no noise of their own: HMC's exact one (a density model's source with no gradient noise, L = 0: slot
    0, times 0) and a data model's minibatch gradients."""
    d = theta.shape[0]
    steps = int(parameters[3][1])
    leapfrog, shared = options[0] == LEAPFROG, normals.shape[0] == 1
    share = rows.shape[0] // (steps + 1 if leapfrog else steps)
    for j in range(d):  # (θ₀, r₀) kept in ``at`` and ``correction`` for the test
        at[j] = theta[j]
        momentum[j] = normals[0, j]
        correction[j] = momentum[j]
    diffusion[:] = parameters[3][0]
    scale[:] = 1.0
    # one gradient per pass, written once (each call of the inlined estimator is typed again where it is compiled):
    # leapfrog's m + 1 passes are its half kick, then m × (drift, kick), the last kick a half; Algorithm 2's m passes
    # are (drift, gradient, injected noise, kick with friction)
    for inner in range(steps + 1 if leapfrog else steps):
        if inner > 0 or not leapfrog:
            for j in range(d):
                theta[j] = theta[j] + step_size * momentum[j]
        slots = normals[(0 if shared else 1 + inner) if leapfrog else 1 + 2 * inner:]
        # a density model has no rows: no view made at each pass (it costs more than a small model's gradient)
        part = rows if share == 0 else rows[inner * share:(inner + 1) * share]
        call7(source[0], source, theta, slots, part, memory, gradient, variance)
        if leapfrog:
            kick = 0.5 if inner == 0 or inner == steps else 1.0
            for j in range(d):
                momentum[j] = momentum[j] - kick * step_size * gradient[j]
        else:
            status, _ = inject(step_size, diffusion, scale, options[1], variance, 0, slots, noise, square)
            if status != OK:
                return status, 0, 0, 1.0
            for j in range(d):
                momentum[j] = momentum[j] - step_size * gradient[j] - step_size * diffusion[j] * momentum[j] + noise[j]
    accept = 1.0
    if options[3] == METROPOLIS:
        old, new = 0.0, 0.0
        for side in range(2):  # H(θ₀, r₀), then H(θ, r): U written once
            point, kinetic = (at, correction) if side == 0 else (theta, momentum)
            total = 0.0
            for j in range(d):
                total += kinetic[j] * kinetic[j]
            energy = call3(source[5], source, point, memory) + 0.5 * total
            if side == 0:
                old = energy
            else:
                new = energy
        accept = math.exp(min(old - new if math.isfinite(new) else -math.inf, 0.0))
        if not uniform < accept:
            for j in range(d):
                theta[j] = at[j]
                momentum[j] = correction[j]
    return OK, 0, 0, accept


@numba.njit(cache=True)
def ou_splitting(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals, uniform,
                 gradient, noise, diffusion, scale, at, correction, square):
    """BAOAB (options[0] = :data:`BAOAB`; Leimkuhler & Matthews 2013 §2, friction C = ``constants[0]``) and BADODAB
    (:data:`BADODAB`; Leimkuhler & Shang 2016 §5, A = ``constants[0]``) with h = ε and ``carry`` the ∇Ũ(θ_n) kept
    from the previous step (``sgmcmc/samplers/baoab.py``): B r₁ = r − (h/2)∇Ũ(θ_n); A θ₁ = θ + (h/2)r₁;
    [D ξ₁ = ξ + (h/2)(r₁ᵀr₁/d − 1)]; O r₂ = e^{−hc} r₁ + N(0, 2hD' − h²V̂) with c = C (ξ₁) and
    D' = D(1 − e^{−2hc})/(2hc), D = C (A): the exact Ornstein–Uhlenbeck variance less the recipe's ε²B̂; [D ξ' = ξ₁ + (h/2)(r₂ᵀr₂/d − 1)];
    A θ' = θ₁ + (h/2)r₂; B r' = r₂ − (h/2)∇Ũ(θ'), ∇Ũ(θ') kept in ``carry``. V̂ is the source's at θ₁ (a data
    model's V(θ₁), or the running estimate after the kept gradient's minibatch; a density model's constant V). The O
    step's normals are ``normals[0]`` and the gradient's ``normals[1]``, copied into slot 0
    for the estimator once the O step has read it. With options[3] = :data:`FIRST_CARRY` the step only takes ∇Ũ(θ_n)
    into ``carry`` (the run's first F(θ₀)), from ``normals[1]`` and the step's minibatch."""
    d = theta.shape[0]
    half = 0.5 * step_size
    thermostat = options[0] == BADODAB
    heat = 0.0
    if options[3] == FIRST_CARRY:  # ∇Ũ(θ_n) alone, from the gradient's normals and the step's minibatch
        for j in range(d):
            normals[0, j] = normals[1, j]
        call7(source[0], source, theta, normals, rows, memory, carry, variance)
        return OK, 0, 0, 1.0
    for j in range(d):
        momentum[j] = momentum[j] - half * carry[j]                                               # B
        theta[j] = theta[j] + half * momentum[j]                                                  # A
        heat += momentum[j] * momentum[j]
    reflected = call2(source[-1], theta, momentum)
    rate = parameters[3][0]
    if thermostat:
        xi[0] = xi[0] + half * (heat / d - 1.0)                                                   # D
        rate = xi[0]
    for j in range(d):
        diffusion[j] = parameters[3][0] * _ou_fraction(rate, step_size)  # C or A times the OU fraction at c
        scale[j] = 1.0
    call4(source[6], source, theta, memory, variance)  # a data model's V̂ at θ₁, or its running estimate's
    status, clipped = inject(step_size, diffusion, scale, options[1], variance, options[2], normals, noise, square,
                             slot=0)
    if status != OK:
        return status, 0, reflected, 1.0
    heat = 0.0
    decay = math.exp(-step_size * rate)
    # O, A and the gradient's normals moved into slot 0 (where the estimator reads them) in one loop, D after it
    # (it reads r₂ᵀr₂ only): measured on the double well (1 chain), BAOAB took 180-200 ns a step with them in three
    # loops and a view of the slots, 70 ns so
    for j in range(d):
        momentum[j] = decay * momentum[j] + noise[j]                                              # O
        heat += momentum[j] * momentum[j]
        theta[j] = theta[j] + half * momentum[j]                                                  # A
        normals[0, j] = normals[1, j]
    if thermostat:
        xi[0] = xi[0] + half * (heat / d - 1.0)                                                   # D
    reflected += call2(source[-1], theta, momentum)
    call7(source[0], source, theta, normals, rows, memory, carry, variance)
    for j in range(d):
        momentum[j] = momentum[j] - half * carry[j]                                               # B
    return OK, clipped, reflected, 1.0


@numba.njit(cache=True)
def preconditioned(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows, step_size, normals,
                   uniform, gradient, noise, diffusion, scale, at, correction, square):
    """pSGLD (Li et al. 2016 Algorithm 1 as the recipe's z = θ, H = U, Q = 0 step, Ma et al. 2015 Eq. 9 with +εΓ;
    ``sgmcmc/samplers/psgld.py``): θ' = θ − εD∇Ũ + εΓ + N(0, ε(2D − εDV̂D)), D diagonal, (α, λ) = ``constants[:2]``.
    :data:`RUNNING`: V_t = αV_{t−1} + (1 − α)∇Ũ ⊙ ∇Ũ carried in ``carry``, D = 1 ⊘ (λ + √V_t), Γ = 0. Else the
    stationary D(θ) = 1 ⊘ (λ + √v), v = ∇U² + diag V(θ), with Γ_i = ∂_i D_ii = −D_ii² (∂_iU ∂²_iiU + ½∂_iV_ii) / √v_i
    (0 where v_i = 0), or Γ = 0: on a density model with its constant diag V = ``constants[2:]`` and ∂²U/∂θ_i² from
    ``curvature`` = ``parameters[4]`` (:data:`PLAIN`; :data:`WITHOUT_CORRECTION` reads none), or ∇U, v and the bracket
    from the moments function ``parameters[6]`` with its arguments ``parameters[7]`` (:data:`MOMENTS`,
    :data:`MOMENTS_WITHOUT_CORRECTION`: :func:`~sgmcmc.engine.estimators.rows_stationary`,
    :func:`~sgmcmc.engine.estimators.differenced_stationary`)."""
    d = theta.shape[0]
    alpha, damping = parameters[3][0], parameters[3][1]
    call7(source[0], source, theta, normals, rows, memory, gradient, variance)
    if options[3] == RUNNING:
        for j in range(d):
            carry[j] = alpha * carry[j] + (1.0 - alpha) * gradient[j] * gradient[j]
            diffusion[j] = 1.0 / (damping + math.sqrt(carry[j]))
            correction[j] = 0.0
    else:  # ∇U(θ) into ``at``, v(θ) into ``diffusion``, ∂_iU ∂²_iiU + ½∂_iV_ii into ``scale`` (``square`` is scratch)
        with_correction = options[3] == PLAIN or options[3] == MOMENTS
        if options[3] >= MOMENTS:
            call9(parameters[6], parameters[7], source, theta, rows, memory, square, at, diffusion, scale)
        else:
            square[0, :] = 0.0  # ∇U: the estimator with its noise's normals all 0
            call7(source[0], source, theta, square, rows, memory, at, variance)
            if with_correction:
                call3(parameters[4], theta, parameters[5], scale)
            for j in range(d):
                diffusion[j] = at[j] * at[j] + parameters[3][2 + j]
                scale[j] = at[j] * scale[j] + 0.0
        for j in range(d):
            root = math.sqrt(diffusion[j])
            diffusion[j] = 1.0 / (damping + root)
            correction[j] = 0.0
            if with_correction:
                slope = scale[j] / root if root > 0 else 0.0
                correction[j] = -diffusion[j] * diffusion[j] * slope
    status, clipped = inject(step_size, diffusion, diffusion, options[1], variance, options[2], normals, noise, square)
    if status != OK:
        return status, 0, 0, 1.0
    for j in range(d):
        theta[j] = theta[j] + step_size * (-diffusion[j] * gradient[j] + correction[j]) + noise[j]
    return OK, clipped, call2(source[-1], theta, momentum), 1.0


@numba.njit(cache=True, inline="always")
def _ou_fraction(rate, step_size):
    """(1 − e^{−2hc})/(2hc), 1 where |2hc| < 10⁻¹²."""
    u = 2.0 * step_size * rate
    if abs(u) < 1e-12:
        return 1.0
    return -math.expm1(-u) / u


@numba.njit(cache=True, inline="always")
def _evaluated_at(integrator, theta, momentum, step_size, at, root):
    """Where ∇Ũ is taken: θ, or θ + εS(θ)r for theta_first (written into ``at``; ``root`` holds S(θ) then). Every
    integrator passes θ to its gradient through this: measured on the double well (SGLD, 1,000 chains), handing the
    inlined estimator θ itself cost 57 ns a chain-step against 22 ns through this function, the same source otherwise."""
    if integrator == THETA_FIRST:
        for j in range(theta.shape[0]):
            at[j] = theta[j] + step_size * root[j] * momentum[j]
        return at
    return theta


@numba.njit(cache=True, inline="always")
def _move(integrator, theta, momentum, gradient, transform, friction, correction, noise, step_size, at):
    """r' = r − εS∇Ũ − εFr + εγ + noise (S = ``transform``, F = ``friction``, diagonal) and θ' per ``integrator``;
    returns r'ᵀr' (the thermostat's)."""
    kinetic = 0.0
    for j in range(theta.shape[0]):
        old = momentum[j]
        momentum[j] = (old - step_size * transform[j] * gradient[j] - step_size * friction[j] * old
                       + step_size * correction[j] + noise[j])
        if integrator == THETA_FIRST:
            theta[j] = at[j]
        elif integrator == SPLITTING:
            theta[j] += step_size * transform[j] * momentum[j]
        else:
            theta[j] += step_size * transform[j] * old
        kinetic += momentum[j] * momentum[j]
    return kinetic
