"""The kernel Stein discrepancy (KSD) with the inverse multiquadric (IMQ) kernel: a sample-quality measure that needs
only the target's score ∇log p = −∇U, not its normalising constant nor exact draws (Gorham & Mackey 2017,
"Measuring sample quality with kernels", ICML).

For a kernel k and a target p with score b = ∇log p, the Langevin Stein kernel (Liu, Lee & Jordan 2016, "A kernelized
Stein discrepancy for goodness-of-fit tests", Theorem 3.6; Gorham & Mackey 2017, Proposition 2, summed over the d
coordinates k0 = Σ_j k0^j) is

    k0(x, y) = b(x)·b(y) k(x, y) + b(x)·∇_y k(x, y) + b(y)·∇_x k(x, y) + Σ_j ∂_{x_j} ∂_{y_j} k(x, y),

which has E_p k0(X, y) = 0 for every y; the KSD of points x_1..x_n with weights w_i is the square root of the
V-statistic Σ_ij w_i w_j k0(x_i, x_j) (Proposition 2 of Gorham & Mackey with the ℓ2 norm over the coordinates).

With the IMQ kernel k(x, y) = (c² + ‖x − y‖²)^β, c > 0, β ∈ (−1, 0) (Gorham & Mackey 2017 §3.3, Theorem 8: the IMQ KSD
detects non-convergence for distantly dissipative targets, where Gaussian and Matérn kernels fail in d ≥ 3; their
experiments use c = 1, β = −1/2), writing r = x − y and s = c² + ‖r‖²:

    ∇_x k = 2β s^(β−1) r,   ∇_y k = −2β s^(β−1) r,
    Σ_j ∂_{x_j} ∂_{y_j} k = −2βd s^(β−1) − 4β(β−1) s^(β−2) ‖r‖²,

so  k0(x, y) = s^β b(x)·b(y) + 2β s^(β−1) (b(y) − b(x))·r − 2βd s^(β−1) − 4β(β−1) s^(β−2) ‖r‖²   (Eq. K0)

and on the diagonal k0(x, x) = c^(2β) ‖b(x)‖² − 2βd c^(2β−2). For n independent exact draws E[KSD²] = E_p k0(X, X)/n
(the off-diagonal terms have mean 0): the KSD of an exact sample falls as n^(−1/2).

:func:`imq_ksd` computes it from points and scores; :func:`target_ksd` from a run's kept samples and a target's
full-data gradient (an evenly spaced, deterministic subsample: no random numbers, so a run's random stream does not
change); :func:`final_ksd_metrics` is what a run writes into metrics.json.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple, Optional

import numba
import numpy as np

__all__ = ["imq_ksd", "imq_stein_kernel", "imq_stein_kernel_diagonal", "evenly_spaced_samples", "target_ksd",
           "TargetKSD", "final_ksd_metrics", "DATA_TARGET_MAX_POINTS"]

# A data target's full-data gradient is a pass over its N data per point: its KSD is computed once, at the end, on at
# most this many points (SPEC-free choice; a toy target's uses run.ksd_points).
DATA_TARGET_MAX_POINTS = 100


def _checked(samples, scores, weights, c: float, beta: float):
    x = np.asarray(samples, dtype=float)
    b = np.asarray(scores, dtype=float)
    if x.ndim != 2 or x.shape[0] < 1:
        raise ValueError(f"samples must have shape (n >= 1, d); got {np.shape(samples)}")
    if b.shape != x.shape:
        raise ValueError(f"scores must have the samples' shape {x.shape}; got {np.shape(scores)}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(b))):
        raise ValueError("samples and scores must be finite")
    if not (np.isfinite(c) and c > 0 and np.isfinite(beta) and -1 < beta < 0):
        raise ValueError(f"the IMQ kernel needs c > 0 and -1 < beta < 0; got c={c}, beta={beta}")
    if weights is None:
        w = np.full(x.shape[0], 1.0 / x.shape[0])
    else:
        w = np.asarray(weights, dtype=float)
        if w.shape != (x.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError(f"weights must be {x.shape[0]} finite non-negative numbers with a positive sum")
        w = w / w.sum()
    return x, b, w


def imq_stein_kernel(x_rows, b_rows, x, b, c: float = 1.0, beta: float = -0.5) -> np.ndarray:
    """The Stein kernel k0(x_i, y_j) of the IMQ kernel, Eq. K0 of this module, between rows (m, d) with scores
    b_rows and points (n, d) with scores b: shape (m, n). Built from inner products (matrix products), so its memory is
    O(m·n); the caller centres the points (k0 depends on differences only) to keep ‖x − y‖² accurate."""
    d = x.shape[1]
    squared_distance = (np.einsum("ij,ij->i", x_rows, x_rows)[:, None] + np.einsum("ij,ij->i", x, x)[None, :]
                        - 2.0 * x_rows @ x.T)
    np.maximum(squared_distance, 0.0, out=squared_distance)
    s = c * c + squared_distance
    # (b(y) − b(x))·(x − y) = x·b(y) − y·b(y) − x·b(x) + y·b(x)
    score_difference_dot_r = (x_rows @ b.T - np.einsum("ij,ij->i", x, b)[None, :]
                              - np.einsum("ij,ij->i", x_rows, b_rows)[:, None] + b_rows @ x.T)
    s_beta_minus_1 = s ** (beta - 1.0)
    return (s * s_beta_minus_1 * (b_rows @ b.T)
            + 2.0 * beta * s_beta_minus_1 * (score_difference_dot_r - d)
            - 4.0 * beta * (beta - 1.0) * s_beta_minus_1 / s * squared_distance)


def imq_stein_kernel_diagonal(scores, c: float = 1.0, beta: float = -0.5) -> np.ndarray:
    """k0(x, x) = c^(2β) ‖b(x)‖² − 2βd c^(2β−2) (Eq. K0 at r = 0), shape (n,): E_p of it over n is E[KSD²] of n exact
    draws."""
    b = np.atleast_2d(np.asarray(scores, dtype=float))
    return c ** (2 * beta) * np.einsum("ij,ij->i", b, b) - 2.0 * beta * b.shape[1] * c ** (2 * beta - 2)


def imq_ksd(samples, scores, c: float = 1.0, beta: float = -0.5, weights=None) -> float:
    """The IMQ kernel Stein discrepancy of weighted points: sqrt(Σ_ij w_i w_j k0(x_i, x_j)) with k0 of Eq. K0 (module
    docstring; Gorham & Mackey 2017 Proposition 2, Liu, Lee & Jordan 2016 Theorem 3.6), the V-statistic.

    Parameters
    ----------
    samples : ndarray, shape (n, d)
    scores : ndarray, shape (n, d)
        ∇log p at the samples (= −∇U).
    c, beta : float
        The IMQ kernel (c² + ‖x − y‖²)^β; c > 0, −1 < β < 0 (default c = 1, β = −1/2 as Gorham & Mackey).
    weights : ndarray, shape (n,), optional
        Non-negative weights, normalised to sum 1; default 1/n each.

    Returns
    -------
    float
        The KSD (≥ 0; a round-off negative square is read as 0). Summed over the pairs i ≤ j (k0 is symmetric) in a
        fixed order (the same bits for the same input), in memory O(n·d).
    """
    x, b, w = _checked(samples, scores, weights, c, beta)
    x = x - x.mean(axis=0)  # k0 depends on differences only; centring keeps ‖x − y‖² accurate
    return float(np.sqrt(max(_weighted_stein_sum(x, b, w, float(c), float(beta)), 0.0)))


@numba.njit(cache=True)
def _weighted_stein_sum(x, b, w, c, beta):
    """Σ_ij w_i w_j k0(x_i, x_j) of Eq. K0, one pass over the pairs i ≤ j (each off-diagonal pair twice), with none
    of the (n × n) temporaries of :func:`imq_stein_kernel` (a run's trace computes it at every row of W1)."""
    n, d = x.shape
    total = 0.0
    for i in range(n):
        row = 0.0
        for j in range(i, n):
            squared, scores, difference = 0.0, 0.0, 0.0
            for k in range(d):
                r = x[i, k] - x[j, k]
                squared += r * r
                scores += b[i, k] * b[j, k]
                difference += (b[j, k] - b[i, k]) * r
            s = c * c + squared
            power = 1.0 / math.sqrt(s) if beta == -0.5 else s ** beta  # the default β: no pow
            value = power * scores + 2.0 * beta * power / s * (difference - d) - 4.0 * beta * (beta - 1.0) * power / (s * s) * squared
            row += w[j] * value * (1.0 if j == i else 2.0)
        total += w[i] * row
    return total


def evenly_spaced_samples(samples, max_points: int) -> np.ndarray:
    """At most ``max_points`` of the kept samples (c, m, d) (or pooled (n, d), read as one chain), deterministic: the
    j-th point is at kept step ⌊j·m/k⌋, k = min(max_points, c·m), of chain j mod c, or of chain ⌊j·c/k⌋ when there are
    more chains than points — evenly spaced in time, and over every chain (taken in turn, or evenly spaced, each point
    from a different chain). All of them, pooled, when c·m ≤ max_points. Shape (k, d)."""
    array = np.asarray(samples, dtype=float)
    if array.ndim == 2:
        array = array[None]
    if array.ndim != 3:
        raise ValueError(f"samples must have shape (n_chains, n_kept, d) or (n, d); got {np.shape(samples)}")
    n_chains, n_kept, dim = array.shape
    if max_points < 1:
        raise ValueError(f"max_points must be >= 1; got {max_points}")
    if n_chains * n_kept <= max_points:
        return array.reshape(-1, dim)
    j = np.arange(max_points)
    chains = (j * n_chains) // max_points if n_chains > max_points else j % n_chains
    return array[chains, (j * n_kept) // max_points]


class TargetKSD(NamedTuple):
    """A KSD of a run's samples and its cost."""

    value: float
    points: int  # the points it used
    seconds: float  # wall time of the subsample, the gradients and the kernel sums
    gradient_evaluations: int  # full-data gradients ∇U(θ), one per point


def target_ksd(target, samples, max_points: int, c: float = 1.0, beta: float = -0.5) -> Optional[TargetKSD]:
    """The IMQ KSD (:func:`imq_ksd`) of at most ``max_points`` of ``samples`` ((c, m, d) kept samples, or (n, d)),
    taken by :func:`evenly_spaced_samples`, with scores −``target.gradient(θ)`` (the exact, full-data gradient; for
    kept samples evaluated c points at a time, the run's own batch of chains).

    None when it is not defined or not computable: the target has no exact gradient (``has_exact_gradient`` False, e.g.
    LDA), its θ is sampled with Gibbs-updated hyperparameters (``gibbs_every`` > 0: the BNN's and BPMF's precisions,
    one per chain; ∇U(θ) given the current ones is not the score of θ's posterior), fewer than 2 samples,
    ``max_points`` < 2, or a point, its score or the sum is not finite (a diverged run; the kernel sums of points
    near overflow)."""
    if not target.has_exact_gradient or target.gibbs_every or max_points < 2:
        return None
    array = np.asarray(samples, dtype=float)
    if array.ndim not in (2, 3) or array.size // array.shape[-1] < 2:
        return None
    started = time.perf_counter()
    points = evenly_spaced_samples(array, max_points)
    if not np.all(np.isfinite(points)):
        return None
    per_call = array.shape[0] if array.ndim == 3 else points.shape[0]
    scores = np.concatenate([-np.asarray(target.gradient(points[start:start + per_call]), dtype=float)
                             for start in range(0, points.shape[0], per_call)])
    if not np.all(np.isfinite(scores)):
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        value = imq_ksd(points, scores, c, beta)
    if not np.isfinite(value):
        return None
    return TargetKSD(value, int(points.shape[0]), time.perf_counter() - started, int(points.shape[0]))


def final_ksd_metrics(target, samples, ksd_points: int) -> dict:
    """metrics.json's ``final`` KSD of a run's kept samples (c, m, d): ``ksd`` and its cost ``ksd_points``,
    ``ksd_seconds``, ``ksd_gradient_evaluations``; {} when ``ksd_points`` is 0 or :func:`target_ksd` gives None (no
    samples: an optimiser; no exact gradient: LDA). A data target (``n_data`` set) uses at most
    :data:`DATA_TARGET_MAX_POINTS` points (a full-data gradient each), a toy target ``ksd_points``."""
    if not ksd_points:
        return {}
    points = ksd_points if target.n_data is None else min(ksd_points, DATA_TARGET_MAX_POINTS)
    result = target_ksd(target, samples, points)
    if result is None:
        return {}
    return {"ksd": result.value, "ksd_points": result.points, "ksd_seconds": result.seconds,
            "ksd_gradient_evaluations": result.gradient_evaluations}
