"""What a model the compiler cannot take costs a chain-step, on the compiled blocks that call its functions in Python
(numba's object mode, one chain at a time: :func:`sgmcmc.engine.static.callback`) against the samplers' numpy steps,
which call the model once a step for every chain at once (:func:`sgmcmc.engine.blocks.numpy_block`, the path such a
model took before). The model is ``examples/breast_cancer_logistic.py`` (vectorised methods; N = 569, d = 31),
SGLD with minibatches of 32, no noise estimate; the least of ``--repeats`` interleaved rounds of ``--steps`` steps
(the blocks compiled first, and outside the rounds).

    python scripts/callback_cost.py [--steps 400] [--repeats 5] [--chains 1 10 100] [--output results/bench/….json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

from breast_cancer_logistic import BreastCancerLogistic  # noqa: E402
from sgmcmc.engine.blocks import numpy_block  # noqa: E402
from sgmcmc.results import provenance, write_json  # noqa: E402
from sgmcmc.samplers import make_sampler  # noqa: E402
from sgmcmc.targets.user import user_target  # noqa: E402

STEP_SIZE, BATCH = 1e-3, 32


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--chains", type=int, nargs="+", default=[1, 10, 100])
    parser.add_argument("--output", default=None, help="write the result here (JSON)")
    arguments = parser.parse_args()
    sampler = make_sampler("sgld", user_target(BreastCancerLogistic(), batch_size=BATCH), noise_estimate="zero")
    blocks = sampler.engine_blocks()
    steps = np.full(arguments.steps, STEP_SIZE)
    rows = []
    for n_chains in arguments.chains:
        state = sampler.init(np.zeros((n_chains, sampler.target.dim)), np.random.default_rng(0))
        paths = {"compiled_blocks_calling_python": lambda: blocks(np.random.default_rng(1), state, steps, 0),
                 "numpy_steps": lambda: numpy_block(sampler, np.random.default_rng(1), state, steps, 0)}
        times = {name: [] for name in paths}
        for _ in range(arguments.repeats):
            for name, path in paths.items():
                started = time.perf_counter()
                path()
                times[name].append(time.perf_counter() - started)
        row = {"n_chains": n_chains, **{f"{name}_microseconds_per_chain_step":
                                        min(values) / (arguments.steps * n_chains) * 1e6 for name, values in times.items()}}
        row["numpy_over_compiled"] = (row["numpy_steps_microseconds_per_chain_step"]
                                      / row["compiled_blocks_calling_python_microseconds_per_chain_step"])
        rows.append(row)
    result = {"model": "examples/breast_cancer_logistic.py", "sampler": "sgld", "batch_size": BATCH,
              "steps": arguments.steps, "repeats": arguments.repeats, "backend": blocks.backend, "rows": rows,
              "provenance": provenance(seed=0, argv=None)}
    if arguments.output:
        write_json(Path(arguments.output), result)
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
