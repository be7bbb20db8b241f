"""Seconds per step of logistic regression on MNIST 7 vs 9 (Shang et al. 2015 Fig. 2 samplers, h = 1e-4, 4 chains,
:data:`benchmarks.run.TABLE1_SAMPLERS`) on the data kernels (:mod:`sgmcmc.engine.data_kernels`, the old path, built
here by hand: the target no longer declares it) and on the engine's blocks (the rows door), in one process, the two
paths' rounds alternating; the best of the rounds of each. Delete with ``sgmcmc/engine/data_blocks.py``.

    python -m benchmarks.logistic_paths [--steps 300] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from benchmarks.run import TABLE1_SAMPLERS
from benchmarks.timing import timed
from sgmcmc.engine import codes
from sgmcmc.engine.data_blocks import LOGISTIC, MOMENTUM, THERMOSTAT, DataKernel, compiled_data
from sgmcmc.noise import clip_counters
from sgmcmc.samplers import make_sampler
from sgmcmc.targets.logistic_regression import logistic_mnist79


def data_kernel(sampler) -> DataKernel:
    """The data kernel ``sgmcmc.engine.data_blocks.data_kernel`` made for the sampler when logistic regression had
    ``compiled_data`` (theta_first)."""
    target = sampler.target
    running = sampler.noise_estimate == "running"
    if sampler.name == "sghmc":
        family, coefficient, friction, subtract = MOMENTUM, sampler.friction_coefficient, False, True
    else:  # SGNHT subtracts the estimate from its noise, CCAdL puts it in its friction
        ccadl = sampler.name == "ccadl"
        family, coefficient, friction, subtract = THERMOSTAT, sampler.diffusion, ccadl, not ccadl
    data = compiled_data(LOGISTIC, target, target._signed, prior=(target.prior_variance,))
    return DataKernel(data, family, codes.THETA_FIRST, coefficient, friction and running, subtract and running, running,
                      sampler.running_scale() if running else 0.0, sampler.noise_clip)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    target = logistic_mnist79()
    theta = target.initial_position(4, np.random.default_rng(0))
    rows = []
    for name, params in TABLE1_SAMPLERS.items():
        sampler = make_sampler(name, target, **params)
        paths = {"data_kernels": data_kernel(sampler), "engine": sampler.engine_blocks()}
        assert paths["engine"] is not None
        states = {path: sampler.init(theta, np.random.default_rng(1)) for path in paths}
        rngs = {path: np.random.default_rng(2) for path in paths}
        best = {path: (np.inf, np.inf) for path in paths}
        counts = {path: np.zeros(2, dtype=int) for path in paths}  # full clipped draws and their eigendecompositions
        for path, kernel in paths.items():  # compiled (or loaded) and warmed up
            states[path] = kernel(rngs[path], states[path], np.full(20, 1e-4), 0).state
        for _ in range(args.rounds):
            for path, kernel in paths.items():
                def run():
                    block = kernel(rngs[path], states[path], np.full(args.steps, 1e-4), 0)
                    assert block.status is None, block.error
                    states[path] = block.state

                before = clip_counters.snapshot()
                best[path] = tuple(min(old, new) for old, new in zip(best[path], timed(run, args.steps)))
                counts[path] += np.subtract(clip_counters.snapshot(), before)
        row = {"sampler": name, "n_chains": 4, "steps_per_round": args.steps, "rounds": args.rounds,
               **{f"{path}_seconds_per_step": best[path][0] for path in paths},
               **{f"{path}_cpu_seconds_per_step": best[path][1] for path in paths},
               **{f"{path}_clipped_draws_and_eigendecompositions": counts[path].tolist() for path in paths},
               "engine_over_data_kernels": best["engine"][0] / best["data_kernels"][0],
               "engine_over_data_kernels_cpu": best["engine"][1] / best["data_kernels"][1]}
        rows.append(row)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
