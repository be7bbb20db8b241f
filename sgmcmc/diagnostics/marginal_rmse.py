"""RMSE of sample histograms against exact marginals (SPEC §3 "RMSE of distribution"; E4, Shang et al. 2015 Table 1)."""

from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["marginal_density_rmse"]


def marginal_density_rmse(samples: np.ndarray, marginals: Sequence, edges: Sequence[np.ndarray]) -> dict:
    """Per-marginal RMSE of a fixed-grid histogram against the exact marginal, as densities and as bin masses.

    For every coordinate j, with c_i the count of ``samples[:, j]`` in bin i of ``edges[j]`` (``np.histogram``
    bins: half-open, the last closed), m the number of *all* samples (those outside the range count in m but
    in no bin), w_i the bin width and x_i the bin centre:

    - density (SPEC §3): RMSE_j = sqrt(mean_i (c_i/(m w_i) − f_j(x_i))²), f_j the exact marginal density
      (``marginals[j].pdf``);
    - mass: RMSE_j = sqrt(mean_i (c_i/m − P_j(bin i))²), P_j(bin i) = F_j(e_{i+1}) − F_j(e_i) from the exact
      ``marginals[j].cdf``.

    SPEC §3 defines the density version, but the published numbers (Shang et al. Table 1, ~0.003 for 10⁶
    correlated samples with τ ≈ 30–400) are closer to the magnitude of the bin-mass RMSE (the mass RMSE is the
    density RMSE times the bin width, 0.01 here; independent exact draws of T7 give a density RMSE of about
    0.01 at m = 10⁶ already), which is why both are reported.

    Parameters
    ----------
    samples : ndarray, shape (m, d)
        Samples pooled across chains (after burn-in).
    marginals : sequence of d scipy frozen distributions
        The exact marginals (anything with vectorised ``pdf`` and ``cdf``).
    edges : sequence of d 1D arrays
        Strictly increasing bin edges of each coordinate.

    Returns
    -------
    dict
        ``{"rmse_density": mean over j, "rmse_density_<j>": per coordinate, "rmse_mass": mean,
        "rmse_mass_<j>": per coordinate}`` (floats; j = 0..d−1).
    """
    samples = np.asarray(samples, dtype=float)
    if samples.ndim != 2 or samples.shape[0] == 0:
        raise ValueError(f"samples must have shape (m, d) with m >= 1; got {samples.shape}")
    dim = samples.shape[1]
    if len(marginals) != dim or len(edges) != dim:
        raise ValueError(f"need one marginal and one edge array per coordinate ({dim}); "
                         f"got {len(marginals)} marginals and {len(edges)} edge arrays")
    counts = []
    for j in range(dim):
        grid = np.asarray(edges[j], dtype=float)
        if grid.ndim != 1 or grid.size < 2 or np.any(np.diff(grid) <= 0):
            raise ValueError(f"edges[{j}] must be a strictly increasing 1D array with at least two entries")
        counts.append(np.histogram(samples[:, j], bins=grid)[0])
    return marginal_density_rmse_from_counts(counts, samples.shape[0], marginals, edges)


def marginal_density_rmse_from_counts(counts: Sequence[np.ndarray], m: int, marginals: Sequence, edges: Sequence) -> dict:
    """:func:`marginal_density_rmse` from each coordinate's bin counts c_i and the number m of all samples."""
    dim = len(counts)
    out: dict = {}
    for j in range(dim):
        grid = np.asarray(edges[j], dtype=float)
        fractions = counts[j] / m
        centres = 0.5 * (grid[1:] + grid[:-1])
        density_error = fractions / np.diff(grid) - np.asarray(marginals[j].pdf(centres), dtype=float)
        mass_error = fractions - np.diff(np.asarray(marginals[j].cdf(grid), dtype=float))
        out[f"rmse_density_{j}"] = float(np.sqrt(np.mean(density_error**2)))
        out[f"rmse_mass_{j}"] = float(np.sqrt(np.mean(mass_error**2)))
    out["rmse_density"] = float(np.mean([out[f"rmse_density_{j}"] for j in range(dim)]))
    out["rmse_mass"] = float(np.mean([out[f"rmse_mass_{j}"] for j in range(dim)]))
    return {key: out[key] for key in ["rmse_density", *[f"rmse_density_{j}" for j in range(dim)],
                                      "rmse_mass", *[f"rmse_mass_{j}" for j in range(dim)]]}
