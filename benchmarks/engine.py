"""The engine's speed (``make bench``; issue 17's goals), in one JSON report:

1. ``normals_per_second``: numpy's standard-normal draws per second (the random-number limit);
2. ``chain_steps``: chain-steps per second of SGLD, SGHMC and SGNHT, and of issue 21's pSGLD (its stationary
   preconditioner, with Γ), BAOAB and BADODAB, on the double well with V = 4 through :func:`sgmcmc.runner.run_chains`
   (the run loop itself, samples kept after half the steps, no trace rows; the least of 3 runs), at 1 and 1,000
   chains, as a fraction of the normal draws (each step draws 2 normals per chain and dimension) and as the ratio of
   SGLD's rate at the same chains in the same run to the sampler's (``cost_vs_sgld``: the cost per chain step against
   plain SGLD);
3. ``linear_cost``: wall time of ``run.py`` at its default settings (trace rows every 100 steps) for 10⁴ and 10⁵
   steps, 1 and 1,000 chains, minus the start-up (a 1-step run): the ratio should be about 10 (goal ≤ 10.5);
4. ``startup``: wall time of ``python run.py run.n_steps=100 run.burn_in=0 run.n_chains=10`` (median of 5, kernels
   cached by a first run; goal < 1.5 s).

    python -m benchmarks.engine [--quick] [--output results/bench/engine-<run-id>.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from sgmcmc.results import provenance
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

ROOT = Path(__file__).resolve().parent.parent
SAMPLERS = ("sgld", "sghmc", "sgnht", "psgld", "baoab", "badodab")  # sgld first: the others' cost_vs_sgld
STEP_SIZE = 0.01


def normals_per_second(size: int = 2**24, repeats: int = 3) -> float:
    rng = np.random.default_rng(0)
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        rng.standard_normal(size)
        best = min(best, time.perf_counter() - start)
    return size / best


def chain_steps_per_second(name: str, n_chains: int, n_steps: int, repeats: int = 1) -> dict:
    """The least time of ``repeats`` runs of ``n_steps`` after a short warm-up (compilation), through the run loop
    (the least: the first of several identical runs measured up to 25% slower than the others on a quiet machine)."""
    target = make_target("double_well", noise_variance=4.0)
    sampler = make_sampler(name, target, noise_estimate="zero")
    warm = RunOptions(n_steps=100, n_chains=n_chains, burn_in=0, eval_every=10**9, progress=False)
    run_chains(sampler, Constant(STEP_SIZE), warm, np.random.default_rng(1))
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 2, eval_every=10**9, progress=False)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        outcome = run_chains(sampler, Constant(STEP_SIZE), settings, np.random.default_rng(0))
        times.append(time.perf_counter() - start)
    elapsed = min(times)
    return {"sampler": name, "target": "double_well", "noise_variance": 4.0, "n_chains": n_chains, "n_steps": n_steps,
            "status": outcome.status, "seconds": elapsed, "repeat_seconds": times,
            "chain_steps_per_second": n_steps * n_chains / elapsed}


def _run_py(overrides: list[str], results: Path) -> float:
    command = [sys.executable, "run.py", *overrides, "run.progress=false", f"run.results_dir={results}"]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def linear_cost(n_chains: int, short: int, long: int, results: Path) -> dict:
    """run.py at its defaults (sgrhmc on the double well, trace every 100 steps) for ``short`` and ``long`` steps."""
    base = [f"run.n_chains={n_chains}", "run.burn_in=0"]
    _run_py([*base, "run.n_steps=1"], results)  # compiles and caches this run's kernels: start-up is measured warm
    # the least of three one-step runs: a single one, on a loaded machine, came out above the 10^4-step run
    startup = min(_run_py([*base, "run.n_steps=1"], results) for _ in range(3))
    times = {steps: _run_py([*base, f"run.n_steps={steps}"], results) for steps in (short, long)}
    ratio = (times[long] - startup) / max(times[short] - startup, 1e-9)
    return {"n_chains": n_chains, "short_steps": short, "long_steps": long, "startup_seconds": startup,
            "short_seconds": times[short], "long_seconds": times[long], "ratio_after_startup": ratio,
            "steps_ratio": long / short}


def startup_seconds(results: Path, repeats: int = 5) -> dict:
    overrides = ["run.n_steps=100", "run.burn_in=0", "run.n_chains=10"]
    _run_py(overrides, results)  # compiles and caches the kernels
    times = [_run_py(overrides, results) for _ in range(repeats)]
    return {"command": "python run.py " + " ".join(overrides), "median_seconds": statistics.median(times), "seconds": times}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (a smoke test of the benchmark itself)")
    parser.add_argument("--output", default=None, help="report path (default results/bench/engine-<run-id>.json)")
    args = parser.parse_args(argv)
    one_chain_steps, many_chain_steps = (20_000, 200) if args.quick else (4_000_000, 20_000)
    short, long = (100, 1_000) if args.quick else (10_000, 100_000)
    normals = normals_per_second(2**20 if args.quick else 2**24)
    report = {"benchmark": "engine", "provenance": provenance(seed=0, argv=None), "normals_per_second": normals,
              "chain_steps": [], "linear_cost": []}
    print(f"numpy standard normals: {normals / 1e6:.1f} M/s", flush=True)
    for name in SAMPLERS:
        for n_chains, n_steps in ((1, one_chain_steps), (1000, many_chain_steps)):
            row = chain_steps_per_second(name, n_chains, n_steps, 1 if args.quick else 3)
            row["fraction_of_normal_draws"] = row["chain_steps_per_second"] * 2 / normals
            sgld = next(r for r in report["chain_steps"] + [row] if r["sampler"] == "sgld" and r["n_chains"] == n_chains)
            row["cost_vs_sgld"] = sgld["chain_steps_per_second"] / row["chain_steps_per_second"]
            report["chain_steps"].append(row)
            print(f"{name:7s} {n_chains:5d} chains: {row['chain_steps_per_second'] / 1e6:7.2f} M chain-steps/s "
                  f"({row['fraction_of_normal_draws']:.2f} of the normal draws, {row['cost_vs_sgld']:.2f}x SGLD's cost)",
                  flush=True)
    with tempfile.TemporaryDirectory() as folder:
        for n_chains in (1, 1000):
            row = linear_cost(n_chains, short, long, Path(folder))
            report["linear_cost"].append(row)
            print(f"run.py {n_chains} chains: {long} steps take {row['ratio_after_startup']:.2f}x the time of {short} "
                  f"(after {row['startup_seconds']:.2f} s start-up)", flush=True)
        report["startup"] = startup_seconds(Path(folder), 2 if args.quick else 5)
    print(f"start-up: {report['startup']['median_seconds']:.2f} s ({report['startup']['command']})")
    path = Path(args.output) if args.output else _report_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(path)


def _report_path() -> Path:
    from benchmarks.run import new_report_path

    path = new_report_path(Path("results/bench"))
    return path.with_name("engine-" + path.name)


if __name__ == "__main__":
    main()
