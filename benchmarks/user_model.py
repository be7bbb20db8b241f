"""A user's own model, end to end, against blackjax on the same model (``make bench-peers``'s user-model row).

The model is ``examples/robust_regression.py``: Student-t regression (ν = 4) on N = 20,000 rows, d = 20, written as
a plain class with numpy functions on rows, a model the engine has no formula for. Minibatches of n = 100, float64 on
both sides, SGLD and SGHMC with the same dynamics as ``benchmarks.peers`` (Euler SGHMC, friction 1, no noise
estimate), at 1 and 100 chains.

- **Ours, end to end**: ``python run.py target=custom …`` as a user types it (the second half of the steps kept as samples, trace rows,
  final diagnostics, figures, the run folder), timed for n steps and for 2n steps; the cost of a chain-step is the
  difference over n × chains, so the start-up (imports, the model's checks, loading the compiled block) is left out.
  Each run is timed ``--repeats`` times and the least is kept.
- **blackjax**: ``blackjax.sgld`` and ``diffusions.sghmc`` with ``blackjax.sgmcmc.gradients.grad_estimator`` (the
  log-likelihood of one row, vmapped over the minibatch, differentiated by jax), the minibatch drawn by
  ``jax.random.randint`` (with replacement: the cheapest draw jax has; a draw without replacement sorts N keys),
  ``jax.lax.scan`` over steps returning every position, ``jax.vmap`` over chains, ``jax.jit``; the least of
  ``--repeats`` warm calls (compilation excluded, reported apart). XLA on one thread, as ours.

The ratio is blackjax's seconds per chain-step over ours: above 1, ours is faster. One report,
``results/bench/user-model-<UTC time>-<hex>.json``.

    python -m benchmarks.user_model [--quick] [--repeats 2] [--output results/bench]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.peers import FRICTION, XLA_FLAGS, load_jax
from benchmarks.run import new_report_path
from examples.robust_regression import NU, PRIOR_VARIANCE, SIGMA, RobustRegression
from sgmcmc.results import provenance, write_json

ROOT = Path(__file__).resolve().parent.parent
MODEL = "examples/robust_regression.py:RobustRegression"
BATCH = 100
STEP_SIZES = {"sgld": 1e-5, "sghmc": 1e-3}
CHAINS = (1, 100)
STEPS = {1: 100_000, 100: 2_000}  # n: the runs take n and 2n steps
QUICK_STEPS = {1: 5_000, 100: 200}


def run_py_seconds(sampler: str, n_chains: int, n_steps: int, results: Path) -> float:
    """Wall time of ``run.py`` on the model (see the module docstring)."""
    command = [sys.executable, "run.py", "target=custom", f"target.model={MODEL}", f"target.batch_size={BATCH}",
               f"sampler={sampler}", f"sampler.step_size={STEP_SIZES[sampler]}", "sampler.noise_estimate=zero",
               f"run.n_chains={n_chains}", f"run.n_steps={n_steps}", f"run.burn_in={n_steps // 2}", "run.progress=false", f"run.results_dir={results}"]
    if sampler == "sghmc":
        command += ["sampler.integrator=euler", f"sampler.friction={FRICTION}"]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    return time.perf_counter() - start


def ours(sampler: str, n_chains: int, n_steps: int, repeats: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        run_py_seconds(sampler, n_chains, 10, Path(folder))  # compiles the block into numba's cache
        short = min(run_py_seconds(sampler, n_chains, n_steps, Path(folder)) for _ in range(repeats))
        long = min(run_py_seconds(sampler, n_chains, 2 * n_steps, Path(folder)) for _ in range(repeats))
    return {"n_steps": n_steps, "short_seconds": short, "long_seconds": long,
            "seconds_per_chain_step": (long - short) / (n_steps * n_chains)}


def blackjax_model(data: np.ndarray) -> tuple:
    """(log prior, log-likelihood of one row, N): the model of ``examples/robust_regression.py`` in jax, as blackjax's
    ``grad_estimator`` takes it."""
    jax, _ = load_jax()
    jnp = jax.numpy

    def log_likelihood(theta, row):
        residual = row[-1] - row[:-1] @ theta
        return -0.5 * (NU + 1.0) * jnp.log1p(residual * residual / (NU * SIGMA**2))

    def log_prior(theta):
        return -0.5 * jnp.sum(theta * theta) / PRIOR_VARIANCE

    return log_prior, log_likelihood, data.shape[0]


def blackjax_chains(sampler: str, data: np.ndarray, n_steps: int):
    """A jitted f(theta0 (c, d), keys (c, 2)) → positions (c, n_steps, d) of blackjax's sampler on the model."""
    jax, blackjax = load_jax()
    diffusions = blackjax.sgmcmc.diffusions
    rows, n_data = jax.numpy.asarray(data), data.shape[0]
    gradient = blackjax.sgmcmc.gradients.grad_estimator(*blackjax_model(data))
    step_size = STEP_SIZES[sampler]
    if sampler == "sgld":
        algorithm = blackjax.sgld(gradient)

        def step(key, state, batch):
            return algorithm.step(key, state, batch, step_size)

        def init(position, key):
            return position

        def position_of(state):
            return state
    else:
        integrator = diffusions.sghmc(alpha=FRICTION, beta=0.0)

        def step(key, state, batch):
            position, momentum = state
            return integrator(key, position, momentum, gradient(position, batch), step_size)

        def init(position, key):
            return position, jax.random.normal(key, position.shape, position.dtype)

        def position_of(state):
            return state[0]

    def one_step(state, key):
        batch_key, step_key = jax.random.split(key)
        state = step(step_key, state, rows[jax.random.randint(batch_key, (BATCH,), 0, n_data)])
        return state, position_of(state)

    def chain(position, key):
        init_key, steps_key = jax.random.split(key)
        _, positions = jax.lax.scan(one_step, init(position, init_key), jax.random.split(steps_key, n_steps))
        return positions

    return jax.jit(jax.vmap(chain))


def theirs(sampler: str, n_chains: int, n_steps: int, repeats: int, data: np.ndarray) -> dict:
    jax, _ = load_jax()
    run = blackjax_chains(sampler, data, n_steps)
    positions = jax.numpy.zeros((n_chains, data.shape[1] - 1))
    keys = jax.random.split(jax.random.PRNGKey(0), n_chains)
    start = time.perf_counter()
    run(positions, keys).block_until_ready()
    compile_seconds = time.perf_counter() - start
    seconds = []
    for repeat in range(repeats):
        keys = jax.random.split(jax.random.PRNGKey(repeat + 1), n_chains)
        start = time.perf_counter()
        samples = run(positions, keys).block_until_ready()
        seconds.append(time.perf_counter() - start)
    if samples.dtype != np.float64 or not np.isfinite(np.asarray(samples)).all():
        raise RuntimeError(f"blackjax {sampler}: {samples.dtype} samples, finite: {bool(np.isfinite(samples).all())}")
    return {"n_steps": n_steps, "compile_and_first_run_seconds": compile_seconds, "seconds": min(seconds),
            "seconds_per_chain_step": min(seconds) / (n_steps * n_chains)}


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (a smoke test of the benchmark)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--samplers", nargs="+", choices=list(STEP_SIZES), default=list(STEP_SIZES))
    parser.add_argument("--chains", nargs="+", type=int, default=list(CHAINS))
    parser.add_argument("--output", default="results/bench")
    args = parser.parse_args(argv)
    os.environ.setdefault("XLA_FLAGS", XLA_FLAGS)
    data = RobustRegression().data
    steps = QUICK_STEPS if args.quick else STEPS
    rows = []
    for sampler in args.samplers:
        for n_chains in args.chains:
            n_steps = steps.get(n_chains, steps[max(steps)])
            row = {"sampler": sampler, "n_chains": n_chains, "ours_end_to_end": ours(sampler, n_chains, n_steps, args.repeats),
                   "blackjax_float64": theirs(sampler, n_chains, n_steps, args.repeats, data)}
            row["ratio_ours_to_blackjax_float64"] = (row["blackjax_float64"]["seconds_per_chain_step"]
                                                     / row["ours_end_to_end"]["seconds_per_chain_step"])
            rows.append(row)
            print(f"{sampler} {n_chains} chains: ours {row['ours_end_to_end']['seconds_per_chain_step'] * 1e6:.2f} µs, "
                  f"blackjax {row['blackjax_float64']['seconds_per_chain_step'] * 1e6:.2f} µs a chain-step: "
                  f"{row['ratio_ours_to_blackjax_float64']:.2f}x", flush=True)
    report = {"benchmark": "a user's model end to end (run.py) against blackjax: robust regression, N = 20,000, "
                           "d = 20, minibatch 100, float64", "model": MODEL, "batch_size": BATCH,
              "step_sizes": STEP_SIZES, "friction": FRICTION, "quick": args.quick, "repeats": args.repeats,
              "threads": {key: os.environ.get(key) for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "XLA_FLAGS")},
              "provenance": provenance(seed=0, argv=None), "results": rows}
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    path = new_report_path(folder)
    path = path.with_name(f"user-model-{path.name}")
    write_json(path, report)
    print(path)
    return path


if __name__ == "__main__":
    main()
