"""BAOAB's and BADODAB's compiled kernel against their numpy steps: seconds of :func:`sgmcmc.runner.run_chains` on the
double well (V = 4 known, h = 0.01, samples kept after half the steps, no trace rows), at 1 and 1,000 chains, each
after a warm-up run (compilation), the better of two timed runs; plus the default runs of tests/test_defaults.py
(gaussian_1d and double_well, their configs' 1,000 chains × 2,000 steps, observers and all).

    python -m benchmarks.splitting_kernels [--quick]

Prints one JSON line per measurement (nothing is written: the numbers are for reading beside the code).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import sgmcmc.engine.blocks as blocks
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target


def _seconds(run, repeats=2):
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def engine_rows(n_steps: int):
    for name in ("baoab", "badodab"):
        sampler = make_sampler(name, make_target("double_well", noise_variance=4.0))
        assert sampler.compiled_kernel() is not None
        for n_chains in (1, 1000):
            settings = RunSettings(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 2, eval_every=10**9, progress=False)
            row = {"what": "run_chains", "sampler": name, "target": "double_well", "n_chains": n_chains, "n_steps": n_steps}
            for compiled in (False, True):
                blocks.COMPILED = compiled
                warm = RunSettings(n_steps=100, n_chains=n_chains, burn_in=0, eval_every=10**9, progress=False)
                run_chains(sampler, Constant(0.01), warm, np.random.default_rng(1))
                row["compiled_s" if compiled else "numpy_s"] = _seconds(
                    lambda: run_chains(sampler, Constant(0.01), settings, np.random.default_rng(0)))
            blocks.COMPILED = True
            yield row


def default_rows():
    """The default runs of tests/test_defaults.py::test_default_run_of_every_correct_sampler_passes_the_kl_check."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from sgmcmc.experiment import build

    def compose_config(overrides):  # as tests/test_defaults.py's composed()
        with initialize_config_dir(config_dir=str(Path(__file__).resolve().parent.parent / "configs"), version_base="1.3"):
            config = OmegaConf.to_container(compose(config_name="config", overrides=overrides), resolve=True)
        config.pop("hydra", None)
        return config

    for target in ("gaussian_1d", "double_well"):
        for name in ("baoab", "badodab"):
            row = {"what": "default run", "sampler": name, "target": target}
            for compiled in (False, True):
                blocks.COMPILED = compiled
                config = compose_config([f"target={target}", f"sampler={name}", "run.progress=false"])
                built = build(config)
                row["n_chains"], row["n_steps"] = built.settings.n_chains, built.settings.n_steps
                row["compiled_s" if compiled else "numpy_s"] = _seconds(
                    lambda: run_chains(built.sampler, built.schedule, built.settings, np.random.default_rng(config["seed"])))
            blocks.COMPILED = True
            yield row


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2,000 steps instead of 20,000 in the engine rows")
    args = parser.parse_args(argv)
    for row in engine_rows(2000 if args.quick else 20000):
        print(json.dumps(row), flush=True)
    for row in default_rows():
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
