"""Running sums over a block's path, one step at a time in time order per chain (numba), so that the result does
not depend on how a run is cut into blocks: a resumed run, or one cut into other blocks, gets the same bits.

- :func:`welford`: per-chain running mean and scatter of θ (Welford's update, as ``RunningMoments.update``);
- :func:`power_sums`: per-chain Σθ and Σθ² of kept samples (the trace's moment errors).
"""

from __future__ import annotations

import numba


@numba.njit(cache=True)
def welford(mean, scatter, count, path, with_scatter):
    """Fold the path (c, m, d) into ``mean`` (c, d) and, if ``with_scatter``, ``scatter`` (c, d, d) after ``count``
    earlier steps: per step δ = θ − mean, mean += δ/n, scatter += δ (θ − mean)ᵀ. Returns the new count."""
    n_chains, n_steps, d = path.shape
    delta = mean[0].copy()
    for i in range(n_chains):
        for k in range(n_steps):
            n = count + k + 1
            for a in range(d):
                delta[a] = path[i, k, a] - mean[i, a]
                mean[i, a] += delta[a] / n
            if with_scatter:
                for a in range(d):
                    for b in range(d):
                        scatter[i, a, b] += delta[a] * (path[i, k, b] - mean[i, b])
    return count + n_steps


@numba.njit(cache=True)
def power_sums(sums, squares, samples):
    """Add the kept samples (c, m, d) to the per-chain Σθ and Σθ² (c, d), in time order."""
    n_chains, n_steps, d = samples.shape
    for i in range(n_chains):
        for k in range(n_steps):
            for a in range(d):
                value = samples[i, k, a]
                sums[i, a] += value
                squares[i, a] += value * value
