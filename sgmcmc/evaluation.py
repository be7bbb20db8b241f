"""Metrics of samples against a target's exact density (SPEC §3, §4.4): KL both directions on the
fixed histogram grid, W1 (1D), errors of E θ and E θ², the RMSE of the marginal densities where the
target gives its exact marginals (E4), autocorrelation time and ESS.

The exact bin masses are computed once per target by Gauss–Legendre quadrature.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.diagnostics import (
    bin_masses_1d,
    bin_masses_2d,
    effective_sample_size,
    histogram_kl,
    integrated_autocorrelation_time,
    marginal_density_rmse,
    moment_errors,
    wasserstein1_to_exact_1d,
)
from sgmcmc.targets.base import Target


class Evaluator:
    """Scores pooled samples (m, dim) against ``target``; cheap enough to call along the run."""

    def __init__(self, target: Target):
        self.target = target
        self._trace_metrics = getattr(target, "trace_metrics", None)
        self._sample_metrics = getattr(target, "sample_metrics", None)
        self.enabled = target.has_exact_density and target.dim in (1, 2)
        if not self.enabled:
            return
        self.edges = target.histogram_edges()
        if target.dim == 1:
            self.masses = bin_masses_1d(target.log_density, self.edges)
        else:
            self.masses = bin_masses_2d(target.log_density, *self.edges)
        self.exact_mean, self.exact_second_moment = target.exact_moments()
        self.marginals = target.marginals() if hasattr(target, "marginals") else None

    def score(self, samples: np.ndarray) -> dict:
        """KL(p‖q), KL(q‖p), W1 (1D) and moment errors of the pooled samples (m, dim)."""
        if not self.enabled or samples.shape[0] == 0:
            return {}
        scores = dict(histogram_kl(samples, self.masses, self.edges))
        scores.update(moment_errors(samples, self.exact_mean, self.exact_second_moment))
        if self.marginals is not None:  # SPEC §3 "RMSE of distribution" (E4)
            scores.update(marginal_density_rmse(samples, self.marginals, self.edges))
        if self.target.dim == 1:
            lower = min(self.edges[0], float(samples.min())) - 1.0
            upper = max(self.edges[-1], float(samples.max())) + 1.0
            scores["w1"] = wasserstein1_to_exact_1d(samples[:, 0], self.target.log_density, lower, upper)
        return {key: float(value) for key, value in scores.items()}


    def score_mean(self, mean: np.ndarray) -> dict:
        """The target's metrics of the per-chain running posterior mean (c, dim) (e.g. test log-likelihood
        and accuracy of the mean predictor, SPEC §3 E5/E6); {} for targets without any."""
        if self._trace_metrics is None:
            return {}
        return {key: float(value) for key, value in self._trace_metrics(mean).items()}

    def score_state(self, theta: np.ndarray, rng: np.random.Generator) -> dict:
        """The target's metrics of the current state (c, dim) (e.g. LDA's held-out perplexity, SPEC §3 E3,
        which averages its predictive over the calls); {} for targets without any."""
        if self._sample_metrics is None:
            return {}
        return {key: float(value) for key, value in self._sample_metrics(theta, rng).items()}


# Above this dimension the chain diagnostics use this many evenly spaced coordinates (LDA: K·W = 385,100).
DIAGNOSTIC_MAX_COORDINATES = 10_000


def chain_diagnostics(chains: np.ndarray) -> dict:
    """Autocorrelation time (SPEC §3, in kept samples, averaged over coordinates) and ArviZ's bulk ESS
    (summed over nothing: one value per coordinate, reported as the minimum) of (n_chains, n_kept, dim)."""
    if chains.shape[1] < 4:
        return {}
    if chains.shape[2] > DIAGNOSTIC_MAX_COORDINATES:
        chains = chains[:, :, np.linspace(0, chains.shape[2] - 1, DIAGNOSTIC_MAX_COORDINATES).round().astype(int)]
    return {
        "autocorrelation_time": float(integrated_autocorrelation_time(chains)),
        "ess_bulk_min": float(np.min(effective_sample_size(chains))),
    }
