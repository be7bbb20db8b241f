"""The momentum samplers' step linearised around a quadratic U: the exact stationary covariance of the
discretised chain (a discrete Lyapunov equation), and from it where a Nosé–Hoover thermostat settles at a
finite step size (SGNHT, CCAdL; [C] Prop. 1 made exact for the linearised step).

At fixed ξ and around a position where U is locally quadratic with Hessian H, one step of the momentum
samplers is the linear recursion x' = Mx + e on x = (θ, p), with friction G = I − ε(ξI + F) on p and
momentum noise of covariance Q. Its stationary covariance X solves the discrete Lyapunov equation
X = MXMᵀ + Cov e, and the thermostat's update ξ' = ξ + ε(pᵀp/d − 1) is stationary where tr X_pp/d = 1.
Solving that for ξ gives the thermostat's mean for a Gaussian target up to the effect of ξ's own
fluctuations (sd ≈ 1/√d about its mean), which the fixed-ξ linearisation leaves out; it captures what the
first-order A + ε·tr V/(2d) misses (the explicit friction alone gives ξ ≈ A + εA²/2). Measured
(tests/diagnostics/test_linearised.py, d = 2): within 1.5 standard errors (≈ 0.01) at ε = 0.02, A = 10,
where first order is off by 1.3; at ε = 0.1, A = 2 (εξ ≈ 0.25–0.3) off by 0.015 (θ-first) to 0.09 (Euler).
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import LinAlgWarning, solve_discrete_lyapunov
from scipy.optimize import brentq

UNSTABLE = 1e12  # stands for +∞ (no stationary covariance) inside the root search


def mean_hessian(target, theta: np.ndarray, relative_step: float = 1e-5) -> np.ndarray:
    """E ∇²U(θ) over positions θ (m, d), by central differences of the full gradient, symmetrised."""
    d = theta.shape[1]
    hessian = np.empty((d, d))
    for j in range(d):
        step = relative_step * max(1.0, float(np.mean(np.abs(theta[:, j]))))
        shift = np.zeros(d)
        shift[j] = step
        hessian[:, j] = np.mean(target.gradient(theta + shift) - target.gradient(theta - shift), axis=0) / (2 * step)
    return 0.5 * (hessian + hessian.T)


def linear_step(step_size: float, damping: np.ndarray, hessian: np.ndarray, noise: np.ndarray, integrator: str):
    """(M, Cov e) of one step on x = (θ, p) for a quadratic U with Hessian ``hessian``, momentum damping
    G and momentum noise ``noise``: ``theta_first`` θ' = θ + εp, p' = Gp − εHθ' + e; ``splitting``
    p' = Gp − εHθ + e, θ' = θ + εp'; ``euler``/``generic`` everything at the old state."""
    d, h = hessian.shape[0], step_size
    eye, zero = np.eye(d), np.zeros((d, d))
    if integrator == "theta_first":
        transition = np.block([[eye, h * eye], [-h * hessian, damping - h * h * hessian]])
        covariance = np.block([[zero, zero], [zero, noise]])
    elif integrator == "splitting":
        transition = np.block([[eye - h * h * hessian, h * damping], [-h * hessian, damping]])
        covariance = np.block([[h * h * noise, h * noise], [h * noise, noise]])
    elif integrator in ("euler", "generic"):
        transition = np.block([[eye, h * eye], [-h * hessian, damping]])
        covariance = np.block([[zero, zero], [zero, noise]])
    else:
        raise ValueError(f"no linearised step for integrator {integrator!r}")
    return transition, covariance


def stationary_covariance(transition: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    """X = MXMᵀ + Cov e for the chain x' = Mx + e (needs every eigenvalue of M inside the unit circle). Near the
    circle the system I − M⊗M is near singular and X huge, as it is at the ends of :func:`thermostat_fixed_point`'s
    search, which reads only its sign there: scipy's warning of an ill-conditioned solve is not the run's news."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LinAlgWarning)
        return solve_discrete_lyapunov(transition, covariance)


def thermostat_fixed_point(step_size: float, diffusion: float, noise: np.ndarray, friction: np.ndarray,
                           subtracted: np.ndarray, hessian: np.ndarray, integrator: str = "theta_first") -> float:
    """ξ at which the linearised step (friction ξI + ``friction``, momentum noise
    2εA·I + ε²(``noise`` − ``subtracted``)) has tr X_pp/d = 1; nan when no ξ on the stable branch
    (ε·ξ below 1) cools the momentum to that temperature. Where U is not locally convex (``hessian`` not
    positive definite) the force is left out and only the momentum recursion is solved."""
    d = noise.shape[0]
    coupled = np.linalg.eigvalsh(hessian).min() > 0
    eye = np.eye(d)
    momentum_noise = 2 * step_size * diffusion * eye + step_size**2 * (noise - subtracted)
    eigenvalues = np.linalg.eigvalsh(0.5 * (friction + friction.T))
    low, high = -eigenvalues.min(), 1.0 / step_size - eigenvalues.max()
    if not high > low:
        return float("nan")

    def excess(xi):
        damping = eye - step_size * (xi * eye + friction)
        if coupled:
            transition, covariance = linear_step(step_size, damping, hessian, momentum_noise, integrator)
        else:
            transition, covariance = damping, momentum_noise
        if np.max(np.abs(np.linalg.eigvals(transition))) >= 1.0:
            return UNSTABLE
        return np.trace(stationary_covariance(transition, covariance)[-d:, -d:]) / d - 1.0

    margin = 1e-9 * (high - low)
    low, high = low + margin, high - margin
    if excess(high) > 0 or not excess(low) > 0:
        return float("nan")
    return float(brentq(excess, low, high, xtol=1e-12))


def ou_splitting_step(step_size: float, xi: float, diffusion: float, noise: np.ndarray, subtracted: np.ndarray,
                      hessian: np.ndarray):
    """BADODAB's step at fixed ξ for a quadratic U with Hessian H, on x = (θ, r, F) with F the kept force
    −Hθ + η (η ~ N(0, V), V = ``noise``, drawn once and used by the B half-kicks either side of a step's end):
    B r₁ = r + (h/2)F; A θ₁ = θ + (h/2)r₁; O r₂ = a·r₁ + w with a = e^{−ξh}, Cov w = W = A(1 − a²)/ξ·I − h²S
    (S = ``subtracted``); A θ' = θ₁ + (h/2)r₂; F' = −Hθ' + η'; B r' = r₂ + (h/2)F'
    (``sgmcmc/samplers/baoab.py``). Returns (M, Cov e, R₁, W, a): x' = Mx + e, r₁ = R₁x."""
    d, h = hessian.shape[0], step_size
    eye, zero = np.eye(d), np.zeros((d, d))
    decay = np.exp(-xi * h)
    ou_fraction = -np.expm1(-2.0 * xi * h) / xi if xi != 0 else 2.0 * h
    ou_noise = diffusion * ou_fraction * eye - h * h * subtracted
    # the extended vector (θ, r, F, w, η'): each operation one block matrix, composed in the order of the step
    blocks = 5

    def operation(row: int, terms: dict) -> np.ndarray:
        matrix = np.eye(blocks * d)
        matrix[row * d:(row + 1) * d, :] = 0.0
        for column, factor in terms.items():
            matrix[row * d:(row + 1) * d, column * d:(column + 1) * d] = factor
        return matrix

    theta, momentum, force, ou, gradient = range(blocks)
    kick = operation(momentum, {momentum: eye, force: 0.5 * h * eye})
    drift = operation(theta, {theta: eye, momentum: 0.5 * h * eye})
    relax = operation(momentum, {momentum: decay * eye, ou: eye})
    new_force = operation(force, {theta: -hessian, gradient: eye})
    step = kick @ new_force @ drift @ relax @ drift @ kick
    transition, loading = step[:3 * d, :3 * d], step[:3 * d, 3 * d:]
    covariance = loading @ np.block([[ou_noise, zero], [zero, noise]]) @ loading.T
    first_half = np.hstack([zero, eye, 0.5 * h * eye])
    return transition, covariance, first_half, ou_noise, decay


def ou_splitting_thermostat_fixed_point(step_size: float, diffusion: float, noise: np.ndarray,
                                        subtracted: np.ndarray, hessian: np.ndarray) -> float:
    """ξ at which BADODAB's step linearised at fixed ξ (:func:`ou_splitting_step`) is stationary for its thermostat.
    Its two D half-steps add (h/2)(r₁ᵀr₁/d − 1) and (h/2)(r₂ᵀr₂/d − 1), so ξ holds where
    E r₁ᵀr₁ + E r₂ᵀr₂ = 2d, with r₁ the momentum before the O step and r₂ = a·r₁ + w after it: the balance of
    both half-steps, not of r₁ alone (which at h = 0.3, V = 4 overshoots ξ by a quarter). That ξ is the O step's
    rate ξ₁; the state's ξ_n, which the run averages, is lower by the first half-step's mean increment
    (h/2)(E r₁ᵀr₁/d − 1). Where U is not locally convex (``hessian`` not positive definite) the force is left out (F = η). nan when no ξ > 0 brings the
    momentum to that temperature."""
    d = noise.shape[0]
    coupled = np.linalg.eigvalsh(hessian).min() > 0
    kept = slice(0, 3 * d) if coupled else slice(d, 3 * d)
    curvature = hessian if coupled else np.zeros_like(hessian)

    def temperatures(xi):
        """(E r₁ᵀr₁/d, E r₂ᵀr₂/d) with the O step at rate ξ; +∞ where the step is unstable."""
        transition, covariance, first_half, ou_noise, decay = ou_splitting_step(
            step_size, xi, diffusion, noise, subtracted, curvature)
        transition, covariance, first_half = transition[kept, kept], covariance[kept, kept], first_half[:, kept]
        if np.max(np.abs(np.linalg.eigvals(transition))) >= 1.0:
            return UNSTABLE, UNSTABLE
        before = np.trace(first_half @ stationary_covariance(transition, covariance) @ first_half.T)
        return before / d, (decay**2 * before + np.trace(ou_noise)) / d

    def excess(xi):
        return 0.5 * sum(temperatures(xi)) - 1.0

    low, high = 1e-9, max(2.0 * diffusion, 1.0)
    if not excess(low) > 0:
        return float("nan")
    while excess(high) > 0:
        high *= 2.0
        if high > 1e9:
            return float("nan")
    rate = brentq(excess, low, high, xtol=1e-12)
    # the O step runs at ξ₁ = ξ_n + (h/2)(r₁ᵀr₁/d − 1); the state (and the run's thermostat mean) holds ξ_n
    return float(rate - 0.5 * step_size * (temperatures(rate)[0] - 1.0))
