"""End to end through ``run.py`` against blackjax (``make bench-peers``'s second report): where a run's time goes.

Three workloads, float64 on both sides, one thread each (``OPENBLAS_NUM_THREADS`` = 1, XLA as :data:`XLA_FLAGS`):

- ``user_model``: a user's own model, ``examples/robust_regression.py`` (Student-t regression, N = 20,000, d = 20,
  minibatches of 100; a plain class with numpy functions on rows, no formula the engine knows), SGLD and Euler SGHMC
  at 1 and 100 chains; blackjax as :mod:`benchmarks.user_model` builds it (jax's gradient of one row's log-likelihood,
  vmapped over the minibatch).
- ``jax_model``: the same model written in JAX, in blackjax's form (``examples/jax_models.py:RobustRegression``: the
  log-likelihood of one row and the log prior, blackjax's own functions of :mod:`benchmarks.user_model`), its
  gradients formed by JAX in one jitted call for all the chains a step (:mod:`sgmcmc.targets.jax_model`; SGLD with no
  noise estimate takes the minibatch's summed gradient, ∇ Σ_i log p(x_i | θ), one backward pass a chain); SGLD at 1
  and 100 chains, against the same blackjax run.
- ``double_well``: the double well with gradient noise V = 4, SGLD, SGHMC and SGNHT at 1,000 chains with blackjax's
  dynamics (:data:`benchmarks.peers.OUR_SAMPLERS`: Euler, no noise estimate) and step sizes; blackjax as
  :func:`benchmarks.peers.blackjax_cell` runs it.

**Ours** is ``python run.py …`` as a user types it (the second half of the steps kept; trace rows, final metrics,
figures and the run folder as every run writes them), timed for n steps and for 2n steps after a short run that
fills numba's cache; the cost of a chain-step is the difference over n × chains, so the start-up (imports, loading
the compiled block, the model's checks) is left out. Each length runs ``--repeats`` times and the least is kept.
From the two runs' ``metrics.json`` the same difference is split into the sampling (``wall_time_s`` less
``evaluation_time_s``: the blocks, their random numbers, the observers), the trace rows' scoring
(``evaluation_time_s``), the final metrics (``final_metrics_time_s``: ESS, autocorrelation time, KSD, …), the figures
(``figures_time_s``) and the rest (the process: writing samples, Python's exit).

**blackjax** is its sampler in ``jax.jit`` + ``jax.lax.scan`` over steps + ``jax.vmap`` over chains, returning every
kept position, compile time excluded; it computes no diagnostics.

For ``jax_model`` the report also times the model's own JAX calls of a step alone (:func:`jax_calls`: the minibatch's
summed gradient and the prior's gradient for all the chains, numpy in and out, as the engine's replay calls them each
step), the floor under any run that calls the model once a step from outside XLA: ``ratio_jax_calls_only`` is
blackjax's whole step over those calls alone.

The ratio is blackjax's seconds per chain-step over ours: above 1, ours is faster. One report,
``results/bench/end-to-end-<UTC time>-<hex>.json``.

    python -m benchmarks.end_to_end [--quick] [--repeats 2] [--workloads user_model double_well] [--output results/bench]
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

from benchmarks import peers, user_model
from benchmarks.run import new_report_path
from examples.robust_regression import RobustRegression
from sgmcmc.results import provenance, write_json
from sgmcmc.targets.user import make_user_target

ROOT = Path(__file__).resolve().parent.parent
JAX_MODEL = "examples/jax_models.py:RobustRegression"
XLA_FLAGS = peers.XLA_FLAGS
# the phases of a run, from its metrics.json: name -> seconds of one run
PHASES = {
    "sampling": lambda metrics: metrics["wall_time_s"] - metrics["evaluation_time_s"],
    "trace_scoring": lambda metrics: metrics["evaluation_time_s"],
    "final_metrics": lambda metrics: metrics["final_metrics_time_s"],
    "figures": lambda metrics: metrics["figures_time_s"],
}


def user_model_arguments(sampler: str) -> list[str]:
    """blackjax's sampler settings on the user model; ``tune=off``: its step size as given (a custom target is tuned
    first by default, and then runs at the tuned step)."""
    arguments = ["target=custom", f"target.model={user_model.MODEL}", f"target.batch_size={user_model.BATCH}",
                 f"sampler={sampler}", f"sampler.step_size={user_model.STEP_SIZES[sampler]}", "sampler.noise_estimate=zero",
                 "tune=off"]
    if sampler == "sghmc":
        arguments += ["sampler.integrator=euler", f"sampler.friction={user_model.FRICTION}"]
    return arguments


def jax_model_arguments(sampler: str) -> list[str]:
    return [argument.replace(user_model.MODEL, JAX_MODEL) for argument in user_model_arguments(sampler)]


def double_well_arguments(sampler: str) -> list[str]:
    arguments = ["target=double_well", f"target.noise_variance={peers.NOISE_VARIANCE}", f"sampler={sampler}",
                 f"sampler.step_size={peers.STEP_SIZES[sampler]}"]
    return arguments + [f"sampler.{key}={value}" for key, value in peers.OUR_SAMPLERS[sampler].items()]


def blackjax_user_model(sampler: str, n_chains: int, n_steps: int, repeats: int) -> float:
    """blackjax's seconds per chain-step on the user model (:func:`benchmarks.user_model.theirs`)."""
    return user_model.theirs(sampler, n_chains, n_steps, repeats, RobustRegression().data)["seconds_per_chain_step"]


def blackjax_double_well(sampler: str, n_chains: int, n_steps: int, repeats: int) -> float:
    """blackjax's seconds per chain-step on the double well (:func:`benchmarks.peers.blackjax_cell`, from N(0, 1)
    starts; at least a second of calls)."""
    theta0 = np.random.default_rng(0).standard_normal((n_chains, 1))
    cell = peers.blackjax_cell("double_well", sampler, theta0, n_steps, n_steps // 2, seed=0, min_seconds=1.0)
    return 1.0 / cell["chain_steps_per_second"]


def jax_calls(n_chains: int, repeats: int, n_calls: int = 300) -> float:
    """Seconds per chain-step of the JAX model's calls of one SGLD step with no noise estimate alone:
    ``grad_log_likelihood_sums`` over a fresh minibatch of each chain and ``grad_log_prior``, at the chains' θ (the
    least of ``repeats`` loops of ``n_calls``, after one call that compiles them)."""
    model = make_user_target(JAX_MODEL).model
    rng = np.random.default_rng(0)
    theta = 0.01 * rng.standard_normal((n_chains, model.dim))
    batches = rng.integers(0, model.n_data, (n_calls, n_chains, user_model.BATCH))
    model.grad_log_likelihood_sums(theta, batches[0], False), model.grad_log_prior(theta)
    best = np.inf
    for _ in range(repeats):
        start = time.perf_counter()
        for batch in batches:
            model.grad_log_likelihood_sums(theta, batch, False)
            model.grad_log_prior(theta)
        best = min(best, time.perf_counter() - start)
    return best / (n_calls * n_chains)


# workload -> (samplers, {chains: n steps}, quick {chains: n steps}, run.py arguments, blackjax seconds per chain-step).
# The double well's n: with 5,000 steps the difference of the two runs (about 1 s) is of the order of a process's
# start-up noise (SGLD's cell: 1.25x in results/bench/end-to-end-20261128-035425-5fb7bc66.json, 1.07x in
# end-to-end-20261128-174407-3824d78a.json, the same code but the step loop's fixes); 20,000 makes it about 4 s.
WORKLOADS = {
    "user_model": (("sgld", "sghmc"), {1: 100_000, 100: 2_000}, {1: 5_000, 100: 200}, user_model_arguments,
                   blackjax_user_model),
    # 100 chains x 1,000 steps came out negative (the difference, about 0.2 s, within the noise of each process's JAX
    # compilation): 5,000 steps
    "jax_model": (("sgld",), {1: 20_000, 100: 5_000}, {1: 500, 100: 50}, jax_model_arguments, blackjax_user_model),
    "double_well": (("sgld", "sghmc", "sgnht"), {1000: 20_000}, {1000: 500}, double_well_arguments,
                    blackjax_double_well),
}


def run_py(arguments: list[str], n_chains: int, n_steps: int, results: Path) -> tuple[float, dict]:
    """Wall time of ``run.py`` with ``arguments`` and its run folder's metrics.json."""
    folder = results / f"{n_chains}-{n_steps}-{time.monotonic_ns()}"
    command = [sys.executable, "run.py", *arguments, f"run.n_chains={n_chains}", f"run.n_steps={n_steps}",
               f"run.burn_in={n_steps // 2}", "run.progress=false", f"run.results_dir={folder}"]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    (metrics_path,) = folder.glob("*/metrics.json")
    return seconds, json.loads(metrics_path.read_text())


def ours(arguments: list[str], n_chains: int, n_steps: int, repeats: int) -> dict:
    """Our seconds per chain-step end to end and per phase (module docstring)."""
    with tempfile.TemporaryDirectory() as folder:
        run_py(arguments, n_chains, 10, Path(folder))  # fills numba's cache
        short = min((run_py(arguments, n_chains, n_steps, Path(folder)) for _ in range(repeats)), key=lambda r: r[0])
        long = min((run_py(arguments, n_chains, 2 * n_steps, Path(folder)) for _ in range(repeats)),
                   key=lambda r: r[0])
    chain_steps = n_steps * n_chains
    phases = {name: (phase(long[1]) - phase(short[1])) / chain_steps for name, phase in PHASES.items()}
    total = (long[0] - short[0]) / chain_steps
    phases["rest"] = total - sum(phases.values())
    return {"n_steps": n_steps, "short_seconds": short[0], "long_seconds": long[0], "seconds_per_chain_step": total,
            "phases_seconds_per_chain_step": phases, "status": [short[1]["status"], long[1]["status"]]}


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (a smoke test of the benchmark)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--output", default="results/bench")
    args = parser.parse_args(argv)
    os.environ.setdefault("XLA_FLAGS", XLA_FLAGS)
    rows = []
    for workload in args.workloads:
        samplers, steps, quick_steps, arguments, theirs = WORKLOADS[workload]
        for sampler in samplers:
            for n_chains, n_steps in (quick_steps if args.quick else steps).items():
                row = {"workload": workload, "sampler": sampler, "n_chains": n_chains,
                       "ours_end_to_end": ours(arguments(sampler), n_chains, n_steps, args.repeats),
                       "blackjax_float64_seconds_per_chain_step": theirs(sampler, n_chains, n_steps, args.repeats)}
                mine = row["ours_end_to_end"]
                row["ratio_ours_to_blackjax_float64"] = (row["blackjax_float64_seconds_per_chain_step"]
                                                         / mine["seconds_per_chain_step"])
                row["ratio_sampling_only"] = (row["blackjax_float64_seconds_per_chain_step"]
                                              / mine["phases_seconds_per_chain_step"]["sampling"])
                if workload == "jax_model":
                    row["jax_calls_seconds_per_chain_step"] = jax_calls(n_chains, args.repeats)
                    row["ratio_jax_calls_only"] = (row["blackjax_float64_seconds_per_chain_step"]
                                                   / row["jax_calls_seconds_per_chain_step"])
                rows.append(row)
                parts = ", ".join(f"{name} {value * 1e9:.0f}" for name, value in
                                  mine["phases_seconds_per_chain_step"].items())
                print(f"{workload} {sampler} {n_chains} chains: ours {mine['seconds_per_chain_step'] * 1e9:.0f} ns "
                      f"({parts}), blackjax {row['blackjax_float64_seconds_per_chain_step'] * 1e9:.0f} ns a "
                      f"chain-step: {row['ratio_ours_to_blackjax_float64']:.2f}x", flush=True)
    report = {"benchmark": "end to end through run.py against blackjax, float64: " + ", ".join(args.workloads),
              "quick": args.quick, "repeats": args.repeats,
              "threads": {key: os.environ.get(key) for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "XLA_FLAGS")},
              "provenance": provenance(seed=0, argv=None), "results": rows}
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    path = new_report_path(folder)
    path = path.with_name(f"end-to-end-{path.name}")
    write_json(path, report)
    print(path)
    return path


if __name__ == "__main__":
    main()
