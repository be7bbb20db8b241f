"""E θ of gSGRHMC/aboba on Gamma(20, 1) with G⁻¹(θ) = 10θ (exact gradients, overdamped: εF = 10θε), for the
position half-steps Φ_t: the exact flow, and the explicit Euler step used before issue 16.
Prints a markdown table (mean ± s.e. over independent chains); the exact value is 20.

    python -m scripts.aboba_metric_bias [--chains 2000]     (from the repository root; the target lives in the tests)
"""

from __future__ import annotations

import argparse

import numpy as np

from sgmcmc.geometry import ExpandedMeanMetric
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from tests.samplers.test_aboba_integrator import Gamma1D, euler_engine_function


def mean_and_error(metric, step_size, n_chains, engine_function=None):
    """E θ and its standard error; ``engine_function`` replaces the metric's engine function (the Euler flow)."""
    target = Gamma1D(20.0)
    if engine_function is not None:
        metric.engine_function = engine_function.__get__(metric)
    sampler = make_sampler("sgrhmc", target, integrator="aboba", noise_estimate="zero", metric=metric)
    n_steps = int(round(1000 / step_size))  # 100 / ε²-scaled relaxation times at every ε
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 5, eval_every=n_steps, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(11))
    means = outcome.samples[:, :, 0].mean(axis=1)
    return means.mean(), means.std(ddof=1) / np.sqrt(n_chains)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=2000)
    args = parser.parse_args()
    flows = {"exact flow": (ExpandedMeanMetric(10.0), None), "explicit Euler (before)": (ExpandedMeanMetric(10.0), euler_engine_function)}
    print("| ε | " + " | ".join(flows) + " |")
    print("|---|" + "---|" * len(flows))
    for step_size in (0.1, 0.05, 0.025):
        cells = [f"{m:.3f} ± {e:.3f}" for m, e in (mean_and_error(metric, step_size, args.chains, flow) for metric, flow in flows.values())]
        print(f"| {step_size} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
