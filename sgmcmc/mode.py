"""The posterior mode θ̂ = argmin U(θ), from the exact U and ∇U: what the control variates centre on
(:class:`sgmcmc.gradient_estimators.ControlVariates`) and where tuning starts its pilots (:mod:`sgmcmc.tuning`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import minimize, root


@dataclass(frozen=True)
class Mode:
    """θ̂ (1, d), the optimiser's message, and the calls of U and ∇U it took (each over all the data)."""

    theta: np.ndarray
    message: str
    calls: int


def lbfgs_mode(potential: Callable, gradient: Callable, start: np.ndarray, gtol: float, maxiter: int = 10_000) -> Mode:
    """θ̂ by scipy's L-BFGS-B on U and ∇U (each taking θ (1, d)), from ``start`` (1, d), to the gradient tolerance
    ``gtol`` or ``maxiter`` iterations; a point where either is not finite (outside the support) counts as U = ∞, so
    the line search backs off."""
    calls = 0

    def value_and_gradient(x):
        nonlocal calls
        calls += 1
        theta = x[None, :]
        with np.errstate(all="ignore"):
            value, slope = float(potential(theta)[0]), np.asarray(gradient(theta), dtype=float)[0]
        if not np.isfinite(value) or not np.all(np.isfinite(slope)):
            return np.inf, np.zeros_like(x)
        return value, slope

    result = minimize(value_and_gradient, np.asarray(start, dtype=float)[0], jac=True, method="L-BFGS-B",
                      options={"maxiter": maxiter, "gtol": gtol, "ftol": 1e-15})
    return Mode(np.asarray(result.x, dtype=float)[None, :], str(result.message), calls)


def gradient_root(gradient: Callable, start: np.ndarray) -> Mode:
    """A zero of ∇U (taking θ (1, d)) by scipy's ``root`` (Powell's hybrid method), for a target that gives ∇U but no
    U; the caller checks that the curvature there is that of a minimum."""
    calls = 0

    def slope(x):
        nonlocal calls
        calls += 1
        with np.errstate(all="ignore"):
            return np.asarray(gradient(x[None, :]), dtype=float)[0]

    result = root(slope, np.asarray(start, dtype=float)[0], method="hybr")
    return Mode(np.asarray(result.x, dtype=float)[None, :], str(result.message), calls)
