"""Shang et al. (2015) Table 1's cells (``benchmarks/run.py``'s table1 part) on the two compiled paths in one process:
the old data kernel (:class:`sgmcmc.engine.data_blocks.DataKernel`, built here as ``NormalGamma.compiled_data`` built
it) and the engine's blocks (``NormalGamma.engine_functions``, what the runner now takes). Seconds per 10⁶ steps
through :func:`sgmcmc.runner.run_chains` (the same run loop, observers and block sizes; only the block runner
differs), alternating the two paths ``--repeats`` times and keeping each one's best.

SGHMC's Table 1 setting (the full running estimate with ``noise_clip``) is not on the engine yet (its clipped
full-covariance draw), so SGHMC is timed both as configured (old kernel against the numpy steps the runner then
takes) and without the clip at A = 10 (both compiled; at A = 1 a first minibatch's Σ̂ makes ε(2C − εΣ̂) indefinite
without the clip). To be deleted with ``data_blocks.py`` and ``data_kernels.py``.

    python -m benchmarks.normal_gamma_paths [--steps 20000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import time
from unittest import mock

import numpy as np

from benchmarks.run import STEP_SIZE, TABLE1_SAMPLERS
from sgmcmc.engine import codes, data_blocks
from sgmcmc.engine.blocks import kernel_of
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

FAMILIES = {"sghmc": data_blocks.MOMENTUM, "sgnht": data_blocks.THERMOSTAT, "ccadl": data_blocks.THERMOSTAT}


def old_kernel(sampler) -> data_blocks.DataKernel:
    """The data kernel ``kernel_of`` took before Normal-Gamma moved to the engine (``data_blocks.data_kernel``)."""
    target = sampler.target
    data = data_blocks.compiled_data(data_blocks.NORMAL_GAMMA, target, target.data, reflected=1)
    coefficient = sampler.friction_coefficient if sampler.name == "sghmc" else sampler.diffusion
    running = sampler.noise_estimate == "running"
    return data_blocks.DataKernel(data, FAMILIES[sampler.name], codes.THETA_FIRST, coefficient,
                                  sampler.name == "ccadl" and running, sampler.name != "ccadl" and running, running,
                                  sampler.running_scale() if running else 0.0, sampler.noise_clip)


def seconds_per_million_steps(sampler, advance, n_chains: int, n_steps: int) -> float:
    """One timed run_chains of ``n_steps`` with the runner's block runner ``advance`` (after a warm-up)."""
    settings = RunSettings(n_steps=n_steps, n_chains=n_chains, burn_in=0, eval_every=n_steps + 1, progress=False)
    with mock.patch("sgmcmc.runner.kernel_of", lambda _: advance):
        run_chains(sampler, Constant(STEP_SIZE), RunSettings(n_steps=200, n_chains=n_chains, burn_in=0, progress=False),
                   np.random.default_rng(1))
        start = time.perf_counter()
        outcome = run_chains(sampler, Constant(STEP_SIZE), settings, np.random.default_rng(0))
    assert outcome.status == "completed", outcome.status
    return (time.perf_counter() - start) * 1e6 / n_steps


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    settings = {**TABLE1_SAMPLERS,
                "sghmc A=10 no clip": {**TABLE1_SAMPLERS["sghmc"], "noise_clip": False, "friction": 10.0}}
    for label, params in settings.items():
        for n_chains in (1, 10):
            sampler = make_sampler(label.split()[0], make_target("normal_gamma", data_seed=0), **params)
            paths = {"data kernel": old_kernel(sampler), "runner now": kernel_of(sampler)}
            best = dict.fromkeys(paths, np.inf)
            for _ in range(args.repeats):  # alternating, so that a busy spell of the machine slows both
                for name, advance in paths.items():
                    best[name] = min(best[name], seconds_per_million_steps(sampler, advance, n_chains, args.steps))
            now = type(paths["runner now"]).__name__ if paths["runner now"] is not None else "numpy steps"
            print(f"{label:18s} {n_chains:2d} chains: data kernel {best['data kernel']:6.2f} s, now ({now}) "
                  f"{best['runner now']:6.2f} s per 10^6 steps: ratio {best['runner now'] / best['data kernel']:.2f}",
                  flush=True)


if __name__ == "__main__":
    main()
