"""What a chain-step of a data model costs in the engine's blocks, and where it goes (make validate's time: its
default runs of Normal-Gamma, 41,000 steps × 1,000 chains each, are almost all ``run_block``).

For each sampler on Normal-Gamma (N = 100, minibatches of 10) at its noise estimate, in a child process per kind of
block (the suite's generic blocks, ``SGMCMC_SPECIALISE_KERNELS=0``, and the blocks runs compile, ``=1``):

- nanoseconds a chain-step of a block of 256 steps × 1,000 chains (its draws included), and of its draws alone;
- numba's reference-count operations (NRT_Incref and NRT_Decref) a chain-step, counted with ``NUMBA_DEBUG_NRT=1``
  (which prints one line per operation) as the difference between a block of 20 steps and one of 10, at 1 chain.

    python scripts/data_step_cost.py [--output results/bench/data-step-cost-<date>.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sgmcmc.engine.driver import block_draws
from sgmcmc.results import provenance, write_json
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target

CHAINS, STEPS, REPEATS = 1000, 256, 5
# (sampler, noise estimate, clip): Normal-Gamma's default runs use the running estimate, clipped (configs/by_target)
CASES = (("sgld", "zero", False), ("sgld", "running", True), ("sghmc", "running", True), ("sgnht", "running", True))
COUNT_STEPS = (10, 20)


def _blocks(sampler: str, noise: str, clip: bool, chains: int):
    """The sampler's blocks on Normal-Gamma and a state of ``chains`` chains at θ₀ = (0, 1)."""
    target = make_target("normal_gamma")
    options = {"noise_estimate": noise, **({"noise_clip": True} if clip else {})}
    built = make_sampler(sampler, target, **options)
    return built.engine_blocks(), built.init(np.tile([0.0, 1.0], (chains, 1)), np.random.default_rng(1))


def _timed(sampler: str, noise: str, clip: bool) -> dict:
    blocks, state = _blocks(sampler, noise, clip, CHAINS)
    rng, step_sizes = np.random.default_rng(0), np.full(STEPS, 5e-4)
    blocks(rng, state, step_sizes, 0)
    start = time.perf_counter()
    for _ in range(REPEATS):
        blocks(rng, state, step_sizes, 0)
    block = (time.perf_counter() - start) / REPEATS / (CHAINS * STEPS) * 1e9
    start = time.perf_counter()
    for _ in range(REPEATS):
        block_draws(rng, STEPS, CHAINS, 2, blocks.slots, blocks.uniforms, 100, 10)
    draws = (time.perf_counter() - start) / REPEATS / (CHAINS * STEPS) * 1e9
    return {"block_ns": round(block, 1), "draws_ns": round(draws, 1)}


def _counted(sampler: str, noise: str, clip: bool, steps: int) -> None:
    blocks, state = _blocks(sampler, noise, clip, 1)
    blocks(np.random.default_rng(0), state, np.full(1, 5e-4), 0)  # compiled (or loaded) before the count starts
    print("BEGIN", flush=True)
    blocks(np.random.default_rng(0), state, np.full(steps, 5e-4), 0)
    print("END", flush=True)


def _child(kind: str, specialise: str, *arguments: str, debug: bool = False, cache: str = "") -> str:
    environment = {**os.environ, "SGMCMC_SPECIALISE_KERNELS": specialise, "OPENBLAS_NUM_THREADS": "1"}
    if debug:  # NRT's debug build of its reference counting: a cache of its own, not mixed with the normal blocks'
        environment.update(NUMBA_DEBUG_NRT="1", NUMBA_CACHE_DIR=cache)
    command = [sys.executable, __file__, "--child", kind, *arguments]
    return subprocess.run(command, env=environment, capture_output=True, text=True, check=True).stdout


def _operations(output: str) -> int:
    inside = output.split("BEGIN", 1)[1].split("END", 1)[0]
    return sum(line.startswith("*** NRT_Incref") or line.startswith("*** NRT_Decref") for line in inside.splitlines())


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=None, help="a JSON file for the rows and the provenance")
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        kind, sampler, noise, clip, *rest = args.child
        if kind == "time":
            print(json.dumps(_timed(sampler, noise, clip == "1")))
        else:
            _counted(sampler, noise, clip == "1", int(rest[0]))
        return {}
    rows = []
    with tempfile.TemporaryDirectory(prefix="sgmcmc-nrt-") as cache:
        for specialise in ("0", "1"):
            for sampler, noise, clip in CASES:
                case = (sampler, noise, "1" if clip else "0")
                row = {"sampler": sampler, "noise_estimate": noise, "noise_clip": clip,
                       "specialised": specialise == "1",
                       **json.loads(_child("time", specialise, *case).strip().splitlines()[-1])}
                counts = [_operations(_child("count", specialise, *case, str(steps), debug=True,
                                             cache=f"{cache}/{specialise}")) for steps in COUNT_STEPS]
                row["refcount_operations_per_step"] = (counts[1] - counts[0]) / (COUNT_STEPS[1] - COUNT_STEPS[0])
                rows.append(row)
                print(row, flush=True)
    report = {"target": "normal_gamma", "chains": CHAINS, "steps_per_block": STEPS, "repeats": REPEATS,
              "provenance": provenance(seed=0, argv=None), "rows": rows}
    if args.output:
        write_json(Path(args.output), report)
    return report


if __name__ == "__main__":
    main()
