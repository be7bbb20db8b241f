"""Can many short chains replace tests/samplers/test_ccadl.py's long path (issue 32)? CCAdL on Normal-Gamma at
h = 0.001, A = 1 from 2,000 exact posterior draws (``NormalGamma.exact_sample``), keeping each chain's last state
(2,000 independent draws): the posterior check's numbers (mean error in sds, relative variance error; tolerances 0.15
and 12%) after K steps, for the correct sampler and for the variant whose thermostat aims at twice the temperature.

A short run answers the test's question only if the correct sampler stays within the tolerances while the broken one
leaves them; the thermostat ξ relaxes far more slowly than θ, so neither holds at the K that would be cheaper.

    python -m scripts.ccadl_short_runs                 # K = 200, 400, 800, compiled, the broken variant too
"""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from tests.deliberate_bugs import change_the_blocks, with_the_hotter_thermostat


def last_states(n_chains: int, n_steps: int, seed: int = 0) -> dict:
    """Each chain's state after ``n_steps`` from exact posterior draws, scored against the exact marginals."""
    target = make_target("normal_gamma", data_seed=seed)
    sampler = make_sampler("ccadl", target)
    rng = np.random.default_rng(seed)
    theta0 = target.exact_sample(n_chains, rng)
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps - 1, eval_every=n_steps, progress=False)
    outcome = run_chains(sampler, Constant(0.001), settings, rng, theta0=theta0)
    samples = outcome.samples.reshape(-1, 2)
    row = {"steps": n_steps, "status": outcome.status, "xi_mean": round(float(outcome.thermostat_mean), 4)}
    for j, (name, exact) in enumerate(zip(("mu", "gamma"), target.marginals())):
        row[f"{name}_mean_error_sd"] = round(float((samples[:, j].mean() - exact.mean()) / exact.std()), 4)
        row[f"{name}_variance_error"] = round(float(samples[:, j].var() / exact.var() - 1), 4)
    return row


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=2000)
    parser.add_argument("--steps", default="200,400,800", help="comma-separated K")
    args = parser.parse_args(argv)
    rows = []
    for n_steps in map(int, args.steps.split(",")):
        rows.append({"variant": "correct", **last_states(args.chains, n_steps)})
    with pytest.MonkeyPatch.context() as patch:  # the engine's thermostat step with Γ_ξ doubled (tests/deliberate_bugs.py)
        change_the_blocks(patch, with_the_hotter_thermostat)
        for n_steps in map(int, args.steps.split(",")):
            rows.append({"variant": "twice the temperature", **last_states(args.chains, n_steps)})
    for row in rows:
        print(row)
    return rows


if __name__ == "__main__":
    main()
