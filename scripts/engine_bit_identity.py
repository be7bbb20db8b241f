"""Whether the engine's blocks give the old kernels' samples bit for bit on the formula targets (issue 33: a run that
moved from an old kernel to the engine must give the same numbers, so the committed paper results stand).

For every formula target, SGLD and SGRLD (euler), SGHMC, naive SGRHMC, gSGRHMC and SGNHT (splitting, euler,
theta_first), noise estimate zero and known: 5 chains, 300 steps, the same state and seed, through the old kernel (:class:`sgmcmc.engine.blocks.CompiledBlocks`
of ``sampler.compiled_kernel()``) and the engine (``sampler.engine_blocks()``); θ, r and ξ compared with
``numpy.array_equal``.

    python scripts/engine_bit_identity.py [--targets double_well …] [--output results/bench/engine-bit-identity-<date>.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from sgmcmc.engine.blocks import CompiledBlocks
from sgmcmc.results import provenance, write_json
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target

TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec")
ORDERS = ("splitting", "euler", "theta_first")
SAMPLERS = {"sgld": ("euler",), "sgrld": ("euler",), "sghmc": ORDERS, "naive_sgrhmc": ORDERS, "sgrhmc": ORDERS,
            "sgnht": ORDERS}


def compare(target_name: str, name: str, integrator: str, noise: str) -> dict:
    target = make_target(target_name, noise_variance=[[1.0, 0.3], [0.3, 0.5]] if target_name.startswith("gaussian_2d")
                         else 1.0)
    sampler = make_sampler(name, target, integrator=integrator, noise_estimate=noise)
    rng = np.random.default_rng(3)
    state = sampler.init(target.initial_position(5, rng), rng)
    steps = np.linspace(0.02, 0.005, 300)
    old = CompiledBlocks(sampler.compiled_kernel())(np.random.default_rng(9), state, steps, 0)
    new = sampler.engine_blocks()(np.random.default_rng(9), state, steps, 0)
    fields = [(old.theta, new.theta), (old.momentum, new.momentum), (old.xi, new.xi)]
    identical = all(a is None and b is None or np.array_equal(a, b) for a, b in fields)
    return {"target": target_name, "sampler": name, "integrator": integrator, "noise_estimate": noise,
            "identical": bool(identical), "max_theta_difference": float(np.max(np.abs(old.theta - new.theta)))}


def main(argv=None) -> list:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=None, help="a JSON file for the rows and the provenance")
    parser.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS, help="the formula targets")
    args = parser.parse_args(argv)
    rows = []
    for target_name in args.targets:
        for name, integrators in SAMPLERS.items():
            for integrator in integrators:
                for noise in ("zero", "known"):
                    rows.append(compare(target_name, name, integrator, noise))
                    row = rows[-1]
                    print(f"{target_name} {name} {integrator} {noise}: "
                          f"{'identical' if row['identical'] else 'differs by %.2e' % row['max_theta_difference']}",
                          flush=True)
    print(f"{sum(row['identical'] for row in rows)} of {len(rows)} identical")
    if args.output:
        write_json(Path(args.output), {"provenance": provenance(seed=9, argv=None), "rows": rows})
    return rows


if __name__ == "__main__":
    main()
