"""Distances and moment errors against an exact target (SPEC §4.4: W1 in 1D and the errors of E θ, E θ²)."""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import integrate

__all__ = ["wasserstein1_to_exact_1d", "moment_errors"]


def wasserstein1_to_exact_1d(
    samples: np.ndarray,
    log_density: Callable[[np.ndarray], np.ndarray],
    lower: float,
    upper: float,
    n_grid: int = 20001,
) -> float:
    """1-Wasserstein distance between the empirical distribution of ``samples`` and an exact 1D density.

    ``W1 = ∫_lower^upper |F_n(x) − F(x)| dx`` (SPEC §4.4), where ``F_n`` is the empirical CDF of all samples and
    ``F(x) = ∫_lower^x exp(log_density)`` is the exact CDF by cumulative trapezoidal integration on ``n_grid``
    equispaced points (``F(lower) = 0``, no renormalisation). The range ``[lower, upper]`` must therefore hold all but
    negligible exact mass; samples outside it enter only through ``F_n`` (e.g. ``F_n(lower) > 0``).

    ``F`` is linear between grid points; the grid is merged with the samples inside the range so that ``F_n`` is
    constant on every sub-interval and ``|F_n − F|`` is integrated exactly there (no step-function discretisation
    error).

    Parameters
    ----------
    samples : ndarray, shape (m,) or (m, 1)
        Samples pooled across chains.
    log_density : callable
        Normalised log density; maps ``(k, 1)`` to ``(k,)``.
    lower, upper : float
        Finite integration range.
    n_grid : int, default 20001
        Grid points for the exact CDF.

    Returns
    -------
    float
    """
    x = np.sort(np.asarray(samples, dtype=float).reshape(-1))
    if x.size == 0:
        raise ValueError("no samples")
    if not (np.isfinite(lower) and np.isfinite(upper) and upper > lower):
        raise ValueError("need finite lower < upper")
    grid = np.linspace(lower, upper, int(n_grid))
    dens = np.exp(np.asarray(log_density(grid[:, None]), dtype=float).reshape(-1))
    cdf_grid = integrate.cumulative_trapezoid(dens, grid, initial=0.0)

    below, end = np.searchsorted(x, lower, side="right"), np.searchsorted(x, upper, side="left")
    inside = x[below:end]  # x sorted: the samples in (lower, upper) are a slice, ``below`` of them at or below lower
    # grid and samples merged in linear time, each grid point before the samples equal to it; a point that repeats
    # gives an interval of width 0, which adds nothing, so F_n at a point is the samples below the range plus those
    # merged up to and including it (measured on 5·10⁶ samples: 0.2 s against 1.8 s for a union and a search)
    at_grid = np.searchsorted(inside, grid, side="left") + np.arange(grid.size)
    is_sample = np.ones(grid.size + inside.size, dtype=bool)
    is_sample[at_grid] = False
    pts = np.empty(is_sample.size)
    pts[at_grid], pts[is_sample] = grid, inside
    f_exact = np.interp(pts, grid, cdf_grid)
    f_emp = (below + np.cumsum(is_sample)[:-1]) / x.size  # constant on [pts_k, pts_{k+1})
    a = f_exact[:-1] - f_emp
    b = f_exact[1:] - f_emp
    h = np.diff(pts)
    same_sign = a * b >= 0
    abs_sum = np.abs(a) + np.abs(b)
    crossing = np.divide(a * a + b * b, 2.0 * abs_sum, out=np.zeros_like(a), where=abs_sum > 0)
    return float(np.sum(h * np.where(same_sign, 0.5 * abs_sum, crossing)))


def moment_errors(samples: np.ndarray, exact_mean, exact_second_moment) -> dict:
    """Largest coordinate-wise errors of the first and second moments (SPEC §4.4).

    ``mean_error = max_j |mean_m θ_j − E θ_j|`` and ``second_moment_error = max_j |mean_m θ_j² − E θ_j²|``.

    Parameters
    ----------
    samples : ndarray, shape (m, d) or (m,)
        Samples pooled across chains.
    exact_mean, exact_second_moment : array_like, broadcastable to (d,)
        Exact E θ and E θ² (raw, not central, second moment).

    Returns
    -------
    dict
        ``{"mean_error": float, "second_moment_error": float}``.
    """
    s = np.asarray(samples, dtype=float)
    if s.ndim == 1:
        s = s[:, None]
    mean = s.mean(axis=0)
    second = np.mean(s * s, axis=0)
    return {
        "mean_error": float(np.max(np.abs(mean - np.asarray(exact_mean, dtype=float)))),
        "second_moment_error": float(np.max(np.abs(second - np.asarray(exact_second_moment, dtype=float)))),
    }
