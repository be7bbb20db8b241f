"""The engine's block cost (issue 33's speed check, one block level, not end to end), in nanoseconds a chain-step:

- on the double well, SGLD, SGHMC and SGNHT (Euler order, no noise estimate, V = 4) at 1,000 chains, blocks of 256
  steps: the sampler's :meth:`~sgmcmc.samplers.base.Sampler.engine_blocks` (:mod:`sgmcmc.engine.integrators`, the
  double well's gradient handed over as a function that writes it, :func:`sgmcmc.engine.estimators.formula_gradient`);
- on a user's data model (``examples/robust_regression.py``: N = 20,000, d = 20, minibatches of 100), SGLD at 1 chain,
  blocks of 8,192 steps (:func:`sgmcmc.engine.estimators.minibatch_gradient` on the model's row functions).

The old kernels it was first measured against are gone (results/bench/engine-step-cost-*.json keep their numbers).

    python scripts/engine_step_cost.py [--repeats 20] [--output results/bench/engine-step-cost-<date>.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sgmcmc.results import provenance, write_json
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target
from sgmcmc.targets.user import load_model_class, user_target

CHAINS, STEPS, STEP_SIZE, NOISE_VARIANCE = 1000, 256, 0.01, 4.0
SAMPLERS = ("sgld", "sghmc", "sgnht")
# the user model's row: one chain, blocks of USER_STEPS steps of SGLD at USER_STEP_SIZE, minibatches of USER_BATCH
USER_STEPS, USER_STEP_SIZE, USER_BATCH = 8192, 1e-5, 100
USER_MODEL = Path(__file__).resolve().parent.parent / "examples" / "robust_regression.py"


def nanoseconds(blocks, state, repeats: int, steps: int = STEPS, step_size: float = STEP_SIZE) -> float:
    rng = np.random.default_rng(0)
    step_sizes = np.full(steps, step_size)
    blocks(rng, state, step_sizes, 0)  # compiles (or loads the cache)
    start = time.perf_counter()
    for _ in range(repeats):
        blocks(rng, state, step_sizes, 0)
    return (time.perf_counter() - start) / repeats / (state.theta.shape[0] * steps) * 1e9


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--output", default=None, help="a JSON file for the rows and the provenance")
    args = parser.parse_args(argv)
    target = make_target("double_well", noise_variance=NOISE_VARIANCE)
    rows = {}
    for name in SAMPLERS:
        sampler = make_sampler(name, target, noise_estimate="zero", integrator="euler")
        state = sampler.init(np.zeros((CHAINS, 1)), np.random.default_rng(1))
        rows[name] = {"new_ns": nanoseconds(sampler.engine_blocks(), state, args.repeats)}
        print(f"{name}: engine {rows[name]['new_ns']:.1f} ns a chain-step", flush=True)
    user = user_target(load_model_class(f"{USER_MODEL}:RobustRegression")(), "RobustRegression", batch_size=USER_BATCH)
    sampler = make_sampler("sgld", user, noise_estimate="zero")
    state = sampler.init(np.zeros((1, user.dim)), np.random.default_rng(1))
    rows["robust_regression_sgld_1_chain"] = {"new_ns": nanoseconds(sampler.engine_blocks(), state, args.repeats,
                                                                    USER_STEPS, USER_STEP_SIZE)}
    print(f"robust regression, SGLD, 1 chain: engine {rows['robust_regression_sgld_1_chain']['new_ns']:.0f} ns a step",
          flush=True)
    if args.output:
        write_json(Path(args.output), {"chains": CHAINS, "steps_per_block": STEPS, "repeats": args.repeats,
                                       "provenance": provenance(seed=0, argv=None), "rows": rows})
    return rows


if __name__ == "__main__":
    main()
