"""Where a user model's step goes on the engine at one chain: the robust-regression example
(``examples/robust_regression.py``, N = 20,000, d = 20, minibatch 100; :mod:`benchmarks.user_model`'s), SGLD, timed
by parts in one process (the least of ``--repeats`` interleaved rounds of ``--steps`` steps):

- the engine's block (:class:`sgmcmc.engine.driver.Blocks`, compiled), per step;
- its parts: the random numbers (:func:`sgmcmc.engine.driver.block_draws`: the minibatches and normals), and the
  estimator called as the block calls it (:func:`sgmcmc.engine.estimators.minibatch_gradient`);
- inside the estimator: the model's own ``row_gradients`` on rows gathered beforehand, and the gather
  ``data[rows]`` alone;
- a floor no engine reaches: the whole SGLD step written by hand for this one model in one compiled loop
  (:func:`_fused_sgld`: the minibatch by Floyd's algorithm from numba's uniforms, the rows read in place, the
  gradient and the update fused, no array made), with no run around it (no trace, no final metrics).

With ``--blackjax``, blackjax's SGLD on the same model (:func:`benchmarks.user_model.blackjax_chains`, jitted once,
its calls timed in the same interleaved rounds) gives the budget that "5× blackjax at 1 chain" leaves, and blackjax's
time over the fused floor's: below 5, no engine in numba meets that bound on this machine. ``--output`` writes the JSON.

    python scripts/user_model_cost.py [--steps 2000] [--repeats 30] [--blackjax] [--output results/bench/….json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numba
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from robust_regression import NU, PRIOR_VARIANCE, SIGMA, RobustRegression  # noqa: E402
from benchmarks.peers import load_jax  # noqa: E402
from benchmarks.user_model import blackjax_chains  # noqa: E402
from sgmcmc.engine.driver import block_draws  # noqa: E402
from sgmcmc.engine.static import call7  # noqa: E402
from sgmcmc.results import provenance, write_json  # noqa: E402
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


@numba.njit(fastmath=True)  # the floor: the compiler free to reorder the sums
def _fused_sgld(data, theta, n_steps, batch, step_size, chosen, picked, gradient):
    """SGLD on the robust regression (``examples/robust_regression.py``), every step fused by hand: θ' = θ −
    ε∇Ũ(θ) + N(0, 2ε), ∇Ũ = −(N/n) Σ_{i∈S} (ν + 1) r_i x_i / (νσ² + r_i²) + θ/s², r_i = y_i − x_iᵀθ."""
    n_data, d = data.shape[0], theta.shape[0]
    for _ in range(n_steps):
        for m in range(batch):  # Floyd's algorithm, as sgmcmc.engine.estimators.choose_rows
            limit = n_data - batch + m
            pick = min(int(np.random.random() * (limit + 1)), limit)
            if chosen[pick]:
                pick = limit
            chosen[pick] = True
            picked[m] = pick
        gradient[:] = 0.0
        for m in range(batch):
            i = picked[m]
            chosen[i] = False
            residual = data[i, d]
            for j in range(d):
                residual -= data[i, j] * theta[j]
            weight = (NU + 1.0) * residual / (NU * SIGMA**2 + residual * residual)
            for j in range(d):
                gradient[j] += weight * data[i, j]
        for j in range(d):
            theta[j] += (step_size * (n_data / batch * gradient[j] - theta[j] / PRIOR_VARIANCE)
                         + math.sqrt(2.0 * step_size) * np.random.standard_normal())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--blackjax", action="store_true", help="time blackjax's SGLD in the same rounds")
    parser.add_argument("--output", default=None, help="write the result here (JSON)")
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
        "fused_sgld_floor": lambda: _fused_sgld(model.data, theta, steps, BATCH, 1e-5, np.zeros(model.n_data, bool),
                                                np.zeros(BATCH, np.int64), out),
    }
    if arguments.blackjax:
        jax, _ = load_jax()
        chains = blackjax_chains("sgld", model.data, steps)
        positions, keys = jax.numpy.zeros((1, model.dim)), jax.random.split(jax.random.PRNGKey(0), 1)
        parts["blackjax_sgld"] = lambda: chains(positions, keys).block_until_ready()
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
    if arguments.blackjax:
        result["five_times_budget_microseconds"] = microseconds["blackjax_sgld"] / 5
        result["blackjax_over_fused_floor"] = microseconds["blackjax_sgld"] / microseconds["fused_sgld_floor"]
        result["blackjax_over_block"] = microseconds["blackjax_sgld"] / microseconds["block"]
    result["provenance"] = provenance(seed=0, argv=None)
    if arguments.output:
        write_json(Path(arguments.output), result)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
