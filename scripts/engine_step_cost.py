"""The engine's blocks against the old specialised kernels on the double well (issue 33's speed check, one block
level, not end to end): nanoseconds a chain-step of SGLD, SGHMC and SGNHT (Euler order, no noise estimate, V = 4)
at 1,000 chains, blocks of 256 steps, the same normals drawn on both sides.

- new: :class:`sgmcmc.engine.driver.Blocks` with the integrators of :mod:`sgmcmc.engine.integrators` and the
  double well's gradient handed over as a function that writes it (:func:`sgmcmc.engine.estimators.formula_gradient`);
- old: :class:`sgmcmc.engine.blocks.CompiledBlocks` of the sampler's kernel (:mod:`sgmcmc.engine.kernels`).

    python scripts/engine_step_cost.py [--repeats 20] [--output results/bench/engine-step-cost-<date>.json]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from sgmcmc.engine import estimators, integrators
from sgmcmc.engine.blocks import CompiledBlocks
from sgmcmc.engine.driver import Blocks
from sgmcmc.engine.static import static
from sgmcmc.results import provenance, write_json
from sgmcmc.samplers import make_sampler
from sgmcmc.state import SamplerState
from sgmcmc.targets import make_target

CHAINS, STEPS, STEP_SIZE, NOISE_VARIANCE = 1000, 256, 0.01, 4.0
SAMPLERS = {"sgld": ("langevin", False, False), "sghmc": ("momentum_friction", True, False),
            "sgnht": ("thermostat", True, True)}


def double_well_gradient(theta, parameters, out):
    """∇U of U = Σ θ⁴ − 2θ² (products, not powers: numba computes an inlined x**3 through pow)."""
    for j in range(theta.shape[0]):
        x = theta[j]
        out[j] = 4.0 * x * x * x - 4.0 * x


def no_prior(theta):
    return np.zeros_like(theta)


def nanoseconds(blocks, state, repeats: int) -> float:
    rng = np.random.default_rng(0)
    step_sizes = np.full(STEPS, STEP_SIZE)
    blocks(rng, state, step_sizes, 0)  # compiles (or loads the cache)
    start = time.perf_counter()
    for _ in range(repeats):
        blocks(rng, state, step_sizes, 0)
    return (time.perf_counter() - start) / repeats / (CHAINS * STEPS) * 1e9


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--output", default=None, help="a JSON file for the rows and the provenance")
    args = parser.parse_args(argv)
    source = (static(estimators.formula_gradient), static(double_well_gradient), static(no_prior), np.zeros(1),
              np.array([1.0, np.sqrt(NOISE_VARIANCE)]))
    target = make_target("double_well", noise_variance=NOISE_VARIANCE)
    rows = {}
    for name, (integrator, momentum, xi) in SAMPLERS.items():
        parameter = 1.0
        new = Blocks(static(getattr(integrators, integrator)), source, np.array([parameter]),
                     (integrators.EULER, 0, 0), np.zeros((1, 1)), momentum=momentum, xi=xi)
        sampler = make_sampler(name, target, noise_estimate="zero", integrator="euler")
        state = sampler.init(np.zeros((CHAINS, 1)), np.random.default_rng(1))
        rows[name] = {"new_ns": nanoseconds(new, SamplerState(theta=state.theta, momentum=state.momentum, xi=state.xi),
                                            args.repeats),
                      "old_ns": nanoseconds(CompiledBlocks(sampler.compiled_kernel()), state, args.repeats)}
        rows[name]["new_over_old"] = rows[name]["new_ns"] / rows[name]["old_ns"]
        print(f"{name}: engine {rows[name]['new_ns']:.1f} ns, old kernel {rows[name]['old_ns']:.1f} ns a chain-step "
              f"({rows[name]['new_over_old']:.2f}x)", flush=True)
    if args.output:
        write_json(Path(args.output), {"chains": CHAINS, "steps_per_block": STEPS, "repeats": args.repeats,
                                       "provenance": provenance(seed=0, argv=None), "rows": rows})
    return rows


if __name__ == "__main__":
    main()
