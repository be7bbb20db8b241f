#!/usr/bin/env python
"""What one round of BPMF costs in the engine's blocks, and how much of it is the block's random numbers (issue 36,
point 3: ``make sghmc-bpmf-synthetic`` with 100 rounds of the 5 folds in at most 2 h).

A round is 2,000 steps of minibatches of 4,000 ratings on the full-size synthetic set (6,040 users × 3,706 items,
d = 204,666), one chain, each sampler at its pair defaults (``configs/by_target/bpmf_movielens/``), as
``make sghmc-bpmf-synthetic`` runs it: the round in blocks of run.py's size (:func:`sgmcmc.runner.block_steps`)
after a block of 10 steps that compiles them, the least of ``--repeats``, the observers left out; and the blocks' draws
alone for the same blocks (``Blocks.draws``: the minibatches' uniforms and the normals of every coordinate, only the
injected noise's where nothing reads the gradient-noise slot). The projection is the rounds of the experiment (4
methods × 5 folds × ``--rounds``, and the tuning's: the two optimisers × each factor × 5 folds × ``--tune-rounds``) over 2
processes, the Gibbs steps, the predictions and each run's start-up left out.

    python scripts/bpmf_round_cost.py [--rounds 100] [--tune-rounds 10] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from experiments.common import compose  # noqa: E402
from experiments.sghmc_bpmf import FACTORS, METHODS, OPTIMISERS, synthetic_file  # noqa: E402
from sgmcmc.data.folder import resolve_cache_dir  # noqa: E402
from sgmcmc.experiment import build  # noqa: E402
from sgmcmc.results import provenance, write_json  # noqa: E402
from sgmcmc.runner import block_steps  # noqa: E402

FOLDS, JOBS = 5, 2


def round_cost(name: str, ratings: Path, repeats: int) -> dict:
    """Seconds of one round's block (wall and this process's CPU time, the steadier of the two on a busy machine) and
    of its draws alone, for sampler ``name``."""
    config = compose(["target=bpmf_movielens", f"sampler={name}", f"target.ratings_file={ratings}", "run.n_chains=1",
                      "tune=off"])
    built = build(config)
    steps = built.target.gibbs_every
    rng = np.random.default_rng(0)
    state = built.sampler.init(built.target.initial_position(1, rng), rng)
    blocks = built.blocks
    state = blocks(rng, state, np.full(10, built.schedule(0)), 0).state  # compiles the block
    size = block_steps(1, built.target.dim, True)  # as run.py cuts a round into blocks
    block, cpu, draws = np.inf, np.inf, np.inf
    for _ in range(repeats):
        start, start_cpu, t, current = time.perf_counter(), time.process_time(), 10, state
        while t < 10 + steps:
            current = blocks(rng, current, np.full(min(size, 10 + steps - t), built.schedule(0)), t).state
            t += size
        block, cpu = min(block, time.perf_counter() - start), min(cpu, time.process_time() - start_cpu)
        start = time.perf_counter()
        for first in range(0, steps, size):
            blocks.draws(rng, min(size, steps - first), 1, built.target.dim)
        draws = min(draws, time.perf_counter() - start)
    return {"sampler": name, "steps_per_round": steps, "steps_per_block": size, "dim": built.target.dim,
            "first_slot": blocks.first_slot, "round_seconds": block, "round_cpu_seconds": cpu,
            "draws_seconds": draws, "draws_share": draws / block}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=100)
    parser.add_argument("--tune-rounds", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--output", default=None)
    arguments = parser.parse_args()
    ratings = synthetic_file("full", resolve_cache_dir(None))
    rows = []
    for name in METHODS:
        rows.append(round_cost(name, ratings, arguments.repeats))
        print(rows[-1], flush=True)
    # the final runs (every method, every fold) and the tuning runs (the two optimisers, each factor, every fold)
    rounds = len(METHODS) * FOLDS * arguments.rounds + len(OPTIMISERS) * len(FACTORS) * FOLDS * arguments.tune_rounds
    projections = {}
    for clock in ("round_seconds", "round_cpu_seconds"):
        mean_round = float(np.mean([row[clock] for row in rows]))
        projections[clock] = mean_round * rounds / JOBS / 3600
    record = {"what": "one BPMF round's cost in the engine's blocks (scripts/bpmf_round_cost.py)", "rows": rows,
              "rounds": arguments.rounds, "tune_rounds": arguments.tune_rounds, "all_rounds": rounds,
              "projected_hours_at_2_processes": projections["round_seconds"],
              "projected_hours_at_2_processes_by_cpu_time": projections["round_cpu_seconds"],
              "load_average_1_5_15": list(os.getloadavg()), "provenance": provenance(0, sys.argv)}
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M")
    output = Path(arguments.output or ROOT / "results" / "bench" / f"bpmf-round-cost-{stamp}.json")
    write_json(output, record)
    print(f"{rounds} rounds ({len(METHODS)} methods x {FOLDS} folds x {arguments.rounds}, and the tuning's) over "
          f"{JOBS} processes: {projections['round_seconds']:.2f} h by wall time, {projections['round_cpu_seconds']:.2f} h by "
          f"CPU time (the Gibbs steps, predictions and start-up left out)")
    print(output)


if __name__ == "__main__":
    main()
