"""What a full-data gradient costs on the engine against the numpy steps, for HMC on a data model: logistic regression
on MNIST 7 vs 9 (``target=logistic_mnist79``, N = 12,214, d = 100; ``make reference-logistic`` runs HMC on it with 10
chains), ∇U of every chain at once.

- numpy steps: the target's vectorised ``gradient(θ)`` (c, d), two BLAS products over the data for all chains;
- engine: its minibatch estimator (:func:`sgmcmc.engine.estimators.minibatch_gradient`) on all N rows, chain after
  chain, as a block would call it for an exact gradient (n = N: the rows gathered, the per-example gradients made,
  summed).

Each the least of ``--repeats`` timings of ``--calls`` calls, one BLAS thread. Needs the data folder (``SGMCMC_DATA``).

    OPENBLAS_NUM_THREADS=1 python scripts/full_gradient_cost.py [--chains 10] [--calls 20] [--repeats 5] [--output F]
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

from sgmcmc.engine.estimators import source_of  # noqa: E402
from sgmcmc.engine.static import call7  # noqa: E402
from sgmcmc.targets import make_target  # noqa: E402


@numba.njit
def _engine_gradients(source, theta, rows, out, calls):
    """``calls`` times: ∇U of each chain θ[c] on all ``rows``, into out[c]."""
    normals, memory, variance = np.zeros((1, theta.shape[1])), np.zeros(0), np.zeros((1, theta.shape[1]))
    for _ in range(calls):
        for chain in range(theta.shape[0]):
            call7(source[0], source, theta[chain], normals, rows, memory, out[chain], variance)


def _least(function, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chains", type=int, default=10)
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--output", default=None)
    arguments = parser.parse_args()
    target = make_target("logistic_mnist79")
    theta = 0.01 * np.random.default_rng(0).standard_normal((arguments.chains, target.dim))
    source = source_of(target.engine_functions())
    rows, out = np.arange(target.n_data), np.empty_like(theta)
    _engine_gradients(source, theta, rows, out, 1)  # compiled before timing
    np.testing.assert_allclose(out, target.gradient(theta), rtol=1e-9, atol=1e-9)  # the same ∇U
    numpy_seconds = _least(lambda: [target.gradient(theta) for _ in range(arguments.calls)], arguments.repeats)
    engine_seconds = _least(lambda: _engine_gradients(source, theta, rows, out, arguments.calls), arguments.repeats)
    report = {"target": "logistic_mnist79", "n_data": int(target.n_data), "dim": int(target.dim),
              "chains": arguments.chains, "calls": arguments.calls, "repeats": arguments.repeats,
              "numpy_milliseconds_per_gradient_of_all_chains": 1e3 * numpy_seconds / arguments.calls,
              "engine_milliseconds_per_gradient_of_all_chains": 1e3 * engine_seconds / arguments.calls,
              "engine_over_numpy": engine_seconds / numpy_seconds}
    text = json.dumps(report, indent=1)
    print(text)
    if arguments.output:
        Path(arguments.output).write_text(text + "\n")


if __name__ == "__main__":
    main()
