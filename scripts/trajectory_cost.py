"""Exact HMC (with its Metropolis–Hastings test) on data models, on the engine's blocks, in seconds a step of all chains
(results/bench/trajectory-cost-20261129.json, made at 775b011 while the numpy steps existed, also timed those):

- Welling and Teh's mixture (N = 100, d = 2), 1,000 chains, m = 10 leapfrog steps: every gradient and U over all N
  rows, one chain at a time;
- logistic regression on MNIST 7 vs 9 (N = 12,000, d = 100), 10 chains, m = 60 (``make reference-logistic``'s
  setting): the gradient sums are two BLAS products a chain.

    SGMCMC_DATA=../shared/data python scripts/trajectory_cost.py [--steps 5] [--output results/bench/trajectory-cost-<date>.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sgmcmc.results import provenance, write_json
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target

CASES = {  # name: (target, its parameters, chains, leapfrog steps, step size)
    "welling_teh_mixture": ("welling_teh_mixture", {"data_seed": 3}, 1000, 10, 0.01),
    "logistic_mnist79": ("logistic_mnist79", {}, 10, 60, 0.0085),
}


def seconds_a_step(case: str, steps: int) -> dict:
    target_name, params, chains, leapfrog, step_size = CASES[case]
    target = make_target(target_name, **params)
    sampler = make_sampler("hmc", target, n_leapfrog=leapfrog, metropolis=True)
    theta = target.initial_position(chains, np.random.default_rng(0))
    blocks = sampler.engine_blocks()
    state = sampler.init(theta, None)
    blocks(np.random.default_rng(1), state, np.full(1, step_size), 0)  # compiles (or loads the cache)
    start = time.perf_counter()
    blocks(np.random.default_rng(1), state, np.full(steps, step_size), 0)
    engine = (time.perf_counter() - start) / steps
    return {"chains": chains, "n_leapfrog": leapfrog, "steps": steps, "engine_seconds_a_step": engine}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    report = {"provenance": provenance(seed=0, argv=None), "cases": {}}
    for case in args.cases:
        report["cases"][case] = seconds_a_step(case, args.steps)
        print(case, report["cases"][case], flush=True)
    if args.output:
        write_json(args.output, report)


if __name__ == "__main__":
    main()
