"""Metrics of samples against a target's exact density (SPEC §3, §4.4): KL both directions on the
fixed histogram grid, W1 (1D), errors of E θ and E θ², the RMSE of the marginal densities where the
target gives its exact marginals (E4), autocorrelation time and ESS.

The exact bin masses are computed once per target by Gauss–Legendre quadrature.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.diagnostics import (
    bin_masses,
    histogram_kl,
    integrated_autocorrelation_time,
    marginal_density_rmse,
    moment_errors,
    wasserstein1_to_exact_1d,
)
from sgmcmc.diagnostics.autocorrelation import rank_diagnostics
from sgmcmc.diagnostics.histogram_divergence import histogram_kl_from_fractions
from sgmcmc.diagnostics.marginal_rmse import marginal_density_rmse_from_counts
from sgmcmc.targets.base import Target


class Evaluator:
    """Scores pooled samples (m, dim) against ``target``; cheap enough to call along the run."""

    def __init__(self, target: Target):
        self.target = target
        self.enabled = target.has_exact_density and target.dim in (1, 2)
        # the moment errors only: exact moments without a density on a KL grid (a user model, any dimension)
        self.moments_only = not self.enabled and target.has_exact_moments
        if self.moments_only:
            self.exact_mean, self.exact_second_moment = target.exact_moments()
        if not self.enabled:
            return
        self.edges = target.histogram_edges()
        self.masses = bin_masses(target.log_density, self.edges, target.dim)
        self.exact_mean, self.exact_second_moment = target.exact_moments()
        self.marginals = target.marginals()

    def score(self, samples: np.ndarray) -> dict:
        """KL(p‖q), KL(q‖p), W1 (1D) and moment errors of the pooled samples (m, dim); the moment errors only for a
        target with exact moments but no density on a grid."""
        if self.moments_only and samples.shape[0]:
            return {key: float(value) for key, value in
                    moment_errors(samples, self.exact_mean, self.exact_second_moment).items()}
        if not self.enabled or samples.shape[0] == 0:
            return {}
        scores = dict(histogram_kl(samples, self.masses, self.edges))
        scores.update(moment_errors(samples, self.exact_mean, self.exact_second_moment))
        if self.marginals is not None:  # SPEC §3 "RMSE of distribution" (E4)
            scores.update(marginal_density_rmse(samples, self.marginals, self.edges))
        if self.target.dim == 1:
            scores["w1"] = self.wasserstein(samples)
        return {key: float(value) for key, value in scores.items()}

    def wasserstein(self, samples: np.ndarray) -> float:
        """W1 of 1D samples, pooled (m, 1) or per chain (c, k, 1), to the exact density
        (:func:`~sgmcmc.diagnostics.wasserstein1_to_exact_1d`: a linear pass over the samples)."""
        lower = min(self.edges[0], float(samples.min())) - 1.0
        upper = max(self.edges[-1], float(samples.max())) + 1.0
        return wasserstein1_to_exact_1d(samples, self.target.log_density, lower, upper)


    def score_mean(self, mean: np.ndarray) -> dict:
        """The target's metrics of the per-chain running posterior mean (c, dim) (e.g. test log-likelihood
        and accuracy of the mean predictor, SPEC §3 E5/E6); {} for targets without any."""
        return {key: float(value) for key, value in self.target.trace_metrics(mean).items()}

    def score_state(self, theta: np.ndarray, rng: np.random.Generator) -> dict:
        """The target's metrics of the current state (c, dim) (e.g. LDA's held-out perplexity, SPEC §3 E3,
        which averages its predictive over the calls); {} for targets without any."""
        return {key: float(value) for key, value in self.target.sample_metrics(theta, rng).items()}


class RunningScore:
    """:meth:`Evaluator.score` kept up to date as kept samples arrive, at a cost linear in the samples: running bin
    counts of the KL grid and of each marginal, per-chain Σθ and Σθ² (:func:`sgmcmc.engine.accumulate.power_sums`,
    in time order, so the result does not depend on how the run is cut into blocks). W1, which needs every sample
    again, is computed only when :meth:`score` is given the samples (the runner does it at log-spaced rows).
    The same numbers as :meth:`Evaluator.score` on all kept samples, up to the rounding of the moment sums."""

    def __init__(self, evaluator: Evaluator, n_chains: int):
        self.evaluator = evaluator
        self.count = 0
        dim = evaluator.target.dim
        if evaluator.moments_only:
            self.sums, self.squares = np.zeros((n_chains, dim)), np.zeros((n_chains, dim))
        if not evaluator.enabled:
            return
        self.grid_counts = np.zeros(evaluator.masses.shape, dtype=np.int64)
        marginal_edges = evaluator.edges if evaluator.marginals is not None else ()
        self.marginal_counts = [np.zeros(len(edges) - 1, dtype=np.int64) for edges in marginal_edges]
        self.sums, self.squares = np.zeros((n_chains, dim)), np.zeros((n_chains, dim))

    def update(self, samples: np.ndarray) -> None:
        """Add newly kept samples (c, m, d)."""
        if not (self.evaluator.enabled or self.evaluator.moments_only) or samples.shape[1] == 0:
            return
        from sgmcmc.engine.accumulate import power_sums

        if self.evaluator.moments_only:
            power_sums(self.sums, self.squares, np.ascontiguousarray(samples))
            self.count += samples.shape[0] * samples.shape[1]
            return
        pooled = samples.reshape(-1, samples.shape[2])
        edges = self.evaluator.edges
        if pooled.shape[1] == 1:
            self.grid_counts += np.histogram(pooled[:, 0], bins=edges)[0]
        else:
            self.grid_counts += np.histogram2d(pooled[:, 0], pooled[:, 1], bins=list(edges))[0].astype(np.int64)
        for j, counts in enumerate(self.marginal_counts):
            counts += np.histogram(pooled[:, j], bins=edges[j])[0]
        power_sums(self.sums, self.squares, np.ascontiguousarray(samples))
        self.count += pooled.shape[0]

    def score(self, all_samples: np.ndarray | None = None) -> dict:
        """The metrics of every sample added so far; W1 too when ``all_samples`` (m, 1) or (c, k, 1) is given."""
        evaluator = self.evaluator
        if not (evaluator.enabled or evaluator.moments_only) or self.count == 0:
            return {}
        mean, second = self.sums.sum(axis=0) / self.count, self.squares.sum(axis=0) / self.count
        if evaluator.moments_only:
            return {"mean_error": float(np.max(np.abs(mean - evaluator.exact_mean))),
                    "second_moment_error": float(np.max(np.abs(second - evaluator.exact_second_moment)))}
        scores = histogram_kl_from_fractions(self.grid_counts / self.count, evaluator.masses)
        scores["mean_error"] = np.max(np.abs(mean - evaluator.exact_mean))
        scores["second_moment_error"] = np.max(np.abs(second - evaluator.exact_second_moment))
        if self.marginal_counts:
            scores.update(marginal_density_rmse_from_counts(self.marginal_counts, self.count, evaluator.marginals, evaluator.edges))
        if all_samples is not None and evaluator.target.dim == 1:
            scores["w1"] = evaluator.wasserstein(all_samples)
        return {key: float(value) for key, value in scores.items()}

    def state_dict(self) -> dict:
        if self.evaluator.moments_only:
            return {"sums": self.sums, "squares": self.squares, "count": self.count}
        if not self.evaluator.enabled:
            return {}
        state = {"grid_counts": self.grid_counts, "sums": self.sums, "squares": self.squares, "count": self.count}
        state.update({f"marginal_counts_{j}": counts for j, counts in enumerate(self.marginal_counts)})
        return state

    def load_state_dict(self, state: dict) -> None:
        if self.evaluator.moments_only:
            self.sums, self.squares, self.count = np.array(state["sums"]), np.array(state["squares"]), int(state["count"])
            return
        if not self.evaluator.enabled:
            return
        self.grid_counts, self.sums, self.squares = (np.array(state[key]) for key in ("grid_counts", "sums", "squares"))
        self.count = int(state["count"])
        self.marginal_counts = [np.array(state[f"marginal_counts_{j}"]) for j in range(len(self.marginal_counts))]


# Above this dimension the chain diagnostics use this many evenly spaced coordinates (LDA: K·W = 385,100).
DIAGNOSTIC_MAX_COORDINATES = 10_000


def chain_diagnostics(chains: np.ndarray) -> dict:
    """Of (n_chains, n_kept, dim): the autocorrelation time (SPEC §3, in kept samples, averaged over coordinates), the
    rank diagnostics of Vehtari et al. (2021) as ArviZ computes them (:func:`~sgmcmc.diagnostics.autocorrelation.
    rank_diagnostics`, numpy: no ArviZ import), the largest split R-hat over the coordinates (``rhat_max``; NaN for
    one chain) and the largest ratio of it to what stationary chains of this length give (``rhat_excess_max``,
    :func:`~sgmcmc.diagnostics.autocorrelation.stationary_split_rhat`; NaN where a coordinate's chains are too short to
    judge), and the least bulk and tail ESS (``ess_bulk_min``, ``ess_tail_min``), and ``chains_stuck``, the chains
    whose draws never changed. A coordinate that no chain ever moved has ESS 0, not ArviZ's count of every draw:
    its draws say nothing of its spread."""
    if chains.shape[1] < 4:
        return {}
    stuck = int(np.sum(np.all(chains == chains[:, :1], axis=(1, 2))))
    if chains.shape[2] > DIAGNOSTIC_MAX_COORDINATES:
        chains = chains[:, :, np.linspace(0, chains.shape[2] - 1, DIAGNOSTIC_MAX_COORDINATES).round().astype(int)]
    ranks = rank_diagnostics(chains)
    frozen = np.all(chains == chains[:1, :1], axis=(0, 1))
    bulk, tail, rhat = ranks["ess_bulk"], ranks["ess_tail"], ranks["rhat"]
    bulk[frozen], tail[frozen] = 0.0, 0.0
    measured = ~np.isnan(rhat)
    excess = ranks["rhat_excess"][measured]
    return {
        "autocorrelation_time": float(integrated_autocorrelation_time(chains)),
        "ess_bulk_min": float(np.min(bulk)),
        "ess_tail_min": float(np.min(tail)),
        "rhat_max": float(rhat[measured].max()) if measured.any() else float("nan"),
        "rhat_excess_max": float(excess.max()) if excess.size and not np.isnan(excess).any() else float("nan"),
        "chains_stuck": stuck,
    }
