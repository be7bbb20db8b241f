"""Where a user model's step goes on the engine at one chain: the robust-regression example
(``examples/robust_regression.py``, N = 20,000, d = 20, minibatch 100; :mod:`benchmarks.user_model`'s), SGLD, timed
by parts in one process (the least of ``--repeats`` interleaved rounds of ``--steps`` steps):

- the engine's block (:class:`sgmcmc.engine.driver.Blocks`, compiled), per step;
- its parts: the random numbers (:func:`sgmcmc.engine.driver.block_draws`: the minibatches and normals), and the
  estimator called as the block calls it (:func:`sgmcmc.engine.estimators.minibatch_gradient`);
- inside the estimator: the model's own ``row_gradients`` on rows gathered beforehand, and the gather
  ``data[rows]`` alone.

Against blackjax's seconds per chain-step from a committed end-to-end report (``--report``), it prints the budget
that "5× blackjax at 1 chain" leaves and what of it the model's own function takes.

    python scripts/user_model_cost.py [--steps 2000] [--repeats 30] [--report results/bench/end-to-end-….json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from robust_regression import RobustRegression  # noqa: E402
from sgmcmc.engine.driver import block_draws  # noqa: E402
from sgmcmc.engine.static import call7  # noqa: E402
from sgmcmc.samplers import make_sampler  # noqa: E402
from sgmcmc.state import SamplerState  # noqa: E402
from sgmcmc.targets.user import user_target  # noqa: E402

BATCH = 100


@numba.njit
def _estimates(source, theta, rows, out, normals, memory, variance):
    for k in range(rows.shape[0]):
        call7(source[0], source, theta, normals, rows[k, 0], memory, out, variance)


def _model_function(function):
    @numba.njit
    def run(theta, batches, out):
        for k in range(batches.shape[0]):
            out[0] += function(theta, batches[k])[0, 0]
    return run


@numba.njit
def _gathers(rows, data, out):
    for k in range(rows.shape[0]):
        out[0] += data[rows[k, 0]][0, 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--report", default=None, help="an end-to-end report (benchmarks/end_to_end.py's JSON)")
    arguments = parser.parse_args()
    model = RobustRegression()
    target = user_target(model, batch_size=BATCH)
    blocks = make_sampler("sgld", target, noise_estimate="zero").engine_blocks()
    rng, state, steps = np.random.default_rng(0), SamplerState(theta=np.zeros((1, model.dim))), arguments.steps
    theta, out = np.zeros(model.dim), np.zeros(model.dim)
    normals, memory, variance = np.zeros((2, model.dim)), np.zeros(0), np.zeros((model.dim, model.dim))
    rows = block_draws(rng, steps, 1, model.dim, n_data=model.n_data, batch_size=BATCH)[0]
    batches = np.ascontiguousarray(model.data[rows[:, 0]])
    function = _model_function(numba.njit(model.row_gradients))
    parts = {
        "block": lambda: blocks(rng, state, np.full(steps, 1e-5), 0),
        "estimator": lambda: _estimates(blocks.source, theta, rows, out, normals, memory, variance),
        "draws": lambda: block_draws(rng, steps, 1, model.dim, n_data=model.n_data, batch_size=BATCH),
        "model_row_gradients": lambda: function(theta, batches, out),
        "gather_rows": lambda: _gathers(rows, model.data, out),
    }
    for part in parts.values():  # compiled, and the caches warm
        part()
    times = {name: [] for name in parts}
    for _ in range(arguments.repeats):
        for name, part in parts.items():
            started = time.perf_counter()
            part()
            times[name].append(time.perf_counter() - started)
    microseconds = {name: min(values) / steps * 1e6 for name, values in times.items()}
    result = {"microseconds_per_step": microseconds, "steps": steps, "repeats": arguments.repeats}
    if arguments.report:
        rows_of_report = json.loads(Path(arguments.report).read_text())["results"]
        blackjax = next(row["blackjax_float64_seconds_per_chain_step"] for row in rows_of_report
                        if row["workload"] == "user_model" and row["sampler"] == "sgld" and row["n_chains"] == 1)
        result["blackjax_microseconds_per_chain_step"] = blackjax * 1e6
        result["five_times_budget_microseconds"] = blackjax * 1e6 / 5
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
