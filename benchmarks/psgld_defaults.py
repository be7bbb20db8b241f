"""Wall time of pSGLD's default runs on the formula toy targets, on the numpy steps and on the compiled kernel
(sgmcmc/engine/preconditioned_kernels.py): the runs of tests/test_defaults.py's KL check (``python run.py
target=T sampler=psgld`` at its defaults), each once per engine in the same process, with its KL(p‖q).

    .venv/bin/python -m benchmarks.psgld_defaults [--samplers psgld ...] [--targets double_well ...]

The compiled run comes second so that it includes numba's compilation only when the on-disk cache is cold; the
printed ``compile`` column times one 2-step block before it (0 s with a warm cache).
"""

from __future__ import annotations

import argparse
import time

from pathlib import Path

import numpy as np
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from sgmcmc.engine import blocks
from sgmcmc.evaluation import Evaluator
from sgmcmc.experiment import build
from sgmcmc.runner import run_chains

CONFIG_DIR = Path(__file__).resolve().parents[1] / "configs"


def composed(*overrides: str) -> dict:
    """The resolved config of ``python run.py <overrides>`` (as tests/test_defaults.py composes it)."""
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        config = OmegaConf.to_container(compose(config_name="config", overrides=list(overrides)), resolve=True)
    config.pop("hydra", None)
    return config


def timed_run(target: str, sampler: str, compiled: bool) -> tuple[float, float, str]:
    """(seconds, KL(p‖q), status) of the default run with the engine's compiled kernels on or off."""
    config = composed(f"target={target}", f"sampler={sampler}", "run.progress=false")
    built = build(config)
    evaluator = Evaluator(built.target)
    blocks.COMPILED = compiled
    start = time.perf_counter()
    outcome = run_chains(built.sampler, built.schedule, built.settings, np.random.default_rng(config["seed"]), evaluator)
    seconds = time.perf_counter() - start
    scores = evaluator.score(outcome.samples.reshape(-1, built.target.dim))
    return seconds, float(scores["kl_pq"]), outcome.status


def warm(target: str, sampler: str) -> float:
    """Seconds to run (and, with a cold cache, compile) the kernel on a 2-step block."""
    config = composed(f"target={target}", f"sampler={sampler}", "run.progress=false")
    built = build(config)
    kernel = built.sampler.compiled_kernel()
    if kernel is None:
        return float("nan")
    rng = np.random.default_rng(0)
    state = built.sampler.init(built.target.initial_position(2, rng), rng)
    start = time.perf_counter()
    blocks.CompiledBlocks(kernel)(rng, state, np.full(2, 1e-3), 0)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samplers", nargs="+", default=["psgld"])
    parser.add_argument("--targets", nargs="+", default=["gaussian_1d", "double_well", "correlated_2d"])
    args = parser.parse_args()
    print(f"{'target':15s} {'sampler':15s} {'numpy s':>9s} {'KL':>7s} {'compile s':>9s} {'compiled s':>10s} {'KL':>7s}")
    for target in args.targets:
        for sampler in args.samplers:
            numpy_seconds, numpy_kl, numpy_status = timed_run(target, sampler, compiled=False)
            compile_seconds = warm(target, sampler)
            compiled_seconds, compiled_kl, compiled_status = timed_run(target, sampler, compiled=True)
            print(f"{target:15s} {sampler:15s} {numpy_seconds:9.1f} {numpy_kl:7.4f} {compile_seconds:9.1f} "
                  f"{compiled_seconds:10.1f} {compiled_kl:7.4f}  {numpy_status}/{compiled_status}", flush=True)


if __name__ == "__main__":
    main()
