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
