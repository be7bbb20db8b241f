"""Fixed-grid histogram divergences between samples and an exact density (SPEC §3 "Metric definitions": KL, E4 RMSE)."""

from __future__ import annotations

from typing import Callable

import numpy as np

__all__ = ["histogram_kl", "histogram_kl_from_fractions", "histogram_density_rmse"]


def _sample_fractions(samples: np.ndarray, edges) -> np.ndarray:
    """q_i = (samples in bin i) / (all samples, including those outside the grid)."""
    samples = np.asarray(samples, dtype=float)
    if samples.ndim == 1 or (samples.ndim == 2 and samples.shape[1] == 1):
        x = samples.reshape(-1)
        counts, _ = np.histogram(x, bins=np.asarray(edges, dtype=float))
    elif samples.ndim == 2 and samples.shape[1] == 2:
        edges_x, edges_y = edges
        x = samples
        counts, _, _ = np.histogram2d(
            samples[:, 0], samples[:, 1], bins=[np.asarray(edges_x, float), np.asarray(edges_y, float)]
        )
    else:
        raise ValueError(f"samples must have shape (m,), (m, 1) or (m, 2); got {samples.shape}")
    if x.shape[0] == 0:
        raise ValueError("no samples")
    return counts / x.shape[0]


def _kl_term(a: np.ndarray, b: np.ndarray, floor: float) -> float:
    """Σ a_i log(max(a_i, floor) / max(b_i, floor)), with 0·log(·) = 0 where a_i = 0."""
    log_ratio = np.log(np.maximum(a, floor)) - np.log(np.maximum(b, floor))
    return float(np.sum(np.where(a > 0, a * log_ratio, 0.0)))


def histogram_kl(samples: np.ndarray, exact_masses: np.ndarray, edges, floor: float = 1e-10) -> dict:
    """Histogram KL divergences in both directions (SPEC §3, KL for E1/E2; SPEC §4.4).

    ``p_i`` is the exact mass of bin ``i`` (see :func:`sgmcmc.diagnostics.quadrature.bin_masses_1d` / ``_2d``) and
    ``q_i`` the fraction of *all* samples (those outside the grid count in the denominator) that fall in bin ``i``.
    One more cell, "outside the grid", gets the rest of each (1 − Σp and 1 − Σq), so p and q are both
    distributions on the same k + 1 cells and both divergences are ≥ 0 (up to the floor). Both are floored at ``floor`` inside the logarithms; the leading factor is not floored, so a bin whose leading
    value is 0 contributes 0 (convention 0·log 0 = 0)::

        kl_pq = Σ_i p_i log(p_i / q_i),    kl_qp = Σ_i q_i log(q_i / p_i).

    Bins are those of ``np.histogram`` / ``np.histogram2d`` (half-open, the last bin closed).

    Parameters
    ----------
    samples : ndarray, shape (m,), (m, 1) or (m, 2)
        Samples pooled across chains (after burn-in).
    exact_masses : ndarray, shape (k,) or (kx, ky)
        Exact bin masses p.
    edges : ndarray or tuple of ndarray
        1D: bin edges, shape (k + 1,). 2D: ``(edges_x, edges_y)``.
    floor : float, default 1e-10
        Floor applied to p and q inside the logarithms.

    Returns
    -------
    dict
        ``{"kl_pq": float, "kl_qp": float}``.
    """
    return histogram_kl_from_fractions(_sample_fractions(samples, edges), exact_masses, floor)


def histogram_kl_from_fractions(q: np.ndarray, exact_masses: np.ndarray, floor: float = 1e-10) -> dict:
    """:func:`histogram_kl` from the sample fractions q of the bins (counts / all samples), e.g. running counts."""
    p = np.asarray(exact_masses, dtype=float)
    if p.shape != q.shape:
        raise ValueError(f"exact_masses has shape {p.shape}, the grid has {q.shape} bins")
    p = np.append(p.reshape(-1), max(0.0, 1.0 - float(p.sum())))
    q = np.append(q.reshape(-1), max(0.0, 1.0 - float(q.sum())))
    return {"kl_pq": _kl_term(p, q, floor), "kl_qp": _kl_term(q, p, floor)}


def histogram_density_rmse(
    samples_1d: np.ndarray, exact_density_fn: Callable[[np.ndarray], np.ndarray], edges: np.ndarray
) -> float:
    """RMSE between the normalised histogram density and the exact density at bin centres (SPEC §3, E4).

    ``h_i = c_i / (m · w_i)`` with ``c_i`` the count in bin ``i``, ``m`` the number of *all* samples and ``w_i`` the
    bin width; ``RMSE = sqrt(mean_i (h_i − f(x_i))²)`` with ``x_i`` the bin centres. SPEC §3 uses 100 bins on the
    marginal's range and reports the mean over the two marginals (done by the caller).

    Parameters
    ----------
    samples_1d : ndarray, shape (m,) or (m, 1)
        Samples of one marginal, pooled across chains.
    exact_density_fn : callable
        Exact marginal density; maps centres ``(k,)`` to densities ``(k,)``.
    edges : ndarray, shape (k + 1,)
        Bin edges.

    Returns
    -------
    float
    """
    edges = np.asarray(edges, dtype=float)
    x = np.asarray(samples_1d, dtype=float).reshape(-1)
    counts, _ = np.histogram(x, bins=edges)
    hist_density = counts / (x.size * np.diff(edges))
    centres = 0.5 * (edges[1:] + edges[:-1])
    exact = np.asarray(exact_density_fn(centres), dtype=float).reshape(-1)
    return float(np.sqrt(np.mean((hist_density - exact) ** 2)))
