"""What calling a vectorised model one chain at a time costs (:func:`sgmcmc.engine.replay.per_chain`): the steps the
replay's table does not serve (HMC's exact ∇U over all the rows and its U, SVRG's renewals, pSGLD's stationary V(θ)
and Γ) on the engine's compiled blocks, in microseconds a step of all chains (results/bench/per-chain-cost-20261130.json,
made while the numpy steps existed, also timed those, all the chains in one call). The model: examples/robust_regression.py's Student-t regression in the vectorised contract (N rows, d = 20,
minibatch 100), with its log-likelihood for HMC's Metropolis test. Each line: ``--steps`` steps after a warm-up block
of 2 (its compile included there), θ₀ = 0.

    python scripts/per_chain_cost.py [--n-data 2000] [--steps 10] [--chains 1 16] [--output results/bench/….json]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from robust_regression import NU, PRIOR_VARIANCE, SIGMA, RobustRegression  # noqa: E402
from sgmcmc.gradient_estimators import make_estimator  # noqa: E402
from sgmcmc.samplers import make_sampler  # noqa: E402
from sgmcmc.targets.user import user_target  # noqa: E402

# (label, sampler, its settings, gradient estimator, ε)
CASES = [("hmc (10 leapfrog steps, exact ∇U and U)", "hmc", {"n_leapfrog": 10}, "minibatch", 1e-4),
         ("sgld + svrg (known V(θ))", "sgld", {"noise_estimate": "known"}, "svrg", 1e-7),
         ("psgld stationary (zero)", "psgld", {"noise_estimate": "zero"}, "minibatch", 1e-7)]


class VectorisedRobustRegression:
    """examples/robust_regression.py's model in the vectorised contract: all the chains' rows in one call."""

    def __init__(self, n_data: int, dim: int = 20):
        self.data, self.n_data, self.dim = RobustRegression(n_data=n_data, dim=dim).data, n_data, dim

    def _residuals(self, theta, index):
        rows = self.data[index]
        return rows[..., :-1], rows[..., -1] - np.einsum("cnd,cd->cn", rows[..., :-1], theta)

    def grad_log_likelihood(self, theta, index):
        inputs, residuals = self._residuals(theta, index)
        return ((NU + 1.0) * residuals / (NU * SIGMA**2 + residuals * residuals))[..., None] * inputs

    def log_likelihood(self, theta, index):
        _, residuals = self._residuals(theta, index)
        return -0.5 * (NU + 1.0) * np.log1p(residuals * residuals / (NU * SIGMA**2))

    def grad_log_prior(self, theta):
        return -theta / PRIOR_VARIANCE

    def log_prior(self, theta):
        return -0.5 * np.sum(theta * theta, axis=1) / PRIOR_VARIANCE


def timed(label, name, settings, estimator, step_size, target, chains, steps):
    """Seconds a step on the engine's blocks (one chain at a time)."""
    sampler = make_sampler(name, make_estimator(estimator, target, seed=0), **settings)
    blocks, rng = sampler.engine_blocks(), np.random.default_rng(1)
    assert blocks is not None and blocks.replay is None, f"{label}: not called one chain at a time"
    state = sampler.init(np.zeros((chains, target.dim)), rng)
    blocks(rng, state, np.full(2, step_size), 0)
    start = time.perf_counter()
    block = blocks(rng, state, np.full(steps, step_size), 0)
    engine = (time.perf_counter() - start) / steps
    assert block.status is None, block.error
    return {"case": label, "chains": chains, "engine_us_per_step": engine * 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-data", type=int, default=2000)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--chains", type=int, nargs="+", default=[1, 16])
    parser.add_argument("--output", default=None)
    arguments = parser.parse_args()
    target = user_target(VectorisedRobustRegression(arguments.n_data), batch_size=100)
    rows = []
    for chains in arguments.chains:
        for case in CASES:
            rows.append(timed(*case, target, chains, arguments.steps))
            row = rows[-1]
            print(f"{row['case']}, chains={chains}: engine {row['engine_us_per_step']:.0f} us/step", flush=True)
    if arguments.output:
        report = {"command": "python scripts/per_chain_cost.py " + " ".join(sys.argv[1:]), "n_data": arguments.n_data,
                  "steps": arguments.steps, "load_average_after": os.getloadavg()[0], "rows": rows}
        Path(arguments.output).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
