"""Whether runs that moved from an old kernel to the engine's blocks give the same samples, across two checkouts (issue
33: the committed paper results stand where the samples are the same bit for bit).

The old kernels of the moved samplers are gone from the new checkout, so the comparison is between two processes:
``save`` runs every case with the checkout on the import path (``PYTHONPATH=<checkout>``) and writes the kept samples
and the acceptance rates to an ``.npz``; ``compare`` reads two of them and reports, per case, whether the samples are
identical, or their largest difference. A case: a formula target, a sampler with an integrator and a noise estimate,
run through :func:`sgmcmc.runner.run_chains` (what a run runs, whatever kernel that is) for 300 steps of 6 chains.

    PYTHONPATH=<old checkout> python scripts/engine_run_identity.py save old.npz
    python scripts/engine_run_identity.py save new.npz
    python scripts/engine_run_identity.py compare old.npz new.npz [--labels <old commit> <new commit>]
        [--output results/bench/engine-run-identity-<date>.json]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

import sgmcmc
from sgmcmc.results import provenance, write_json
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

TARGETS = ("double_well", "correlated_2d", "gaussian_2d_cov")
# the samplers and integrators moved onto the engine's blocks in this change, with their noise estimates and options
CASES = [("sgrld", "euler", "known", {}), ("sgrld", "euler", "zero", {}),
         ("sgrhmc", "splitting", "known", {}), ("naive_sgrhmc", "theta_first", "zero", {}),
         ("sghmc", "aboba", "zero", {}), ("sgrhmc", "aboba", "zero", {}), ("naive_sgrhmc", "aboba", "zero", {}),
         ("ccadl", "theta_first", "known", {}), ("ccadl", "euler", "zero", {}),
         ("hmc", "leapfrog", "known", {"n_leapfrog": 4}), ("hmc", "leapfrog", "known", {"n_leapfrog": 3, "metropolis": False}),
         ("naive_sghmc", "leapfrog", "known", {"n_leapfrog": 4, "metropolis": True}),
         ("sghmc_mh", "trajectory", "known", {"n_leapfrog": 3}), ("sghmc_mh", "trajectory", "zero", {"n_leapfrog": 3})]
STEP_SIZES = {"hmc": 0.1, "naive_sghmc": 0.1, "sghmc_mh": 0.1}


def case_name(target: str, sampler: str, integrator: str, noise: str, options: dict) -> str:
    extra = ",".join(f"{key}={value}" for key, value in sorted(options.items()))
    return f"{target}/{sampler}/{integrator}/{noise}" + (f"/{extra}" if extra else "")


def save(path: str) -> None:
    """Run every case with the sgmcmc on the import path; write the samples and acceptance rates."""
    arrays = {}
    for target_name in TARGETS:
        for name, integrator, noise, options in CASES:
            target = make_target(target_name, noise_variance=[[1.0, 0.3], [0.3, 0.5]] if target_name.startswith(
                "gaussian_2d") else 1.0)
            sampler = make_sampler(name, target, integrator=integrator, noise_estimate=noise, **options)
            settings = RunOptions(n_steps=300, n_chains=6, burn_in=0, eval_every=300, progress=False)
            outcome = run_chains(sampler, Constant(STEP_SIZES.get(name, 0.02)), settings, np.random.default_rng(11))
            key = case_name(target_name, name, integrator, noise, options)
            arrays[key] = outcome.samples
            arrays[key + "#accept"] = np.array([np.nan if outcome.acceptance_rate is None else outcome.acceptance_rate])
            print(f"{key}: {outcome.status}", flush=True)
    np.savez(path, **arrays)
    print(f"{len(arrays) // 2} cases with {sgmcmc.__file__}")


def compare(old_path: str, new_path: str, output: str | None, labels: tuple = ("old", "new")) -> list:
    """Per case: identical samples (and acceptance rate), or the largest difference."""
    old, new = np.load(old_path), np.load(new_path)
    rows = []
    for key in old.files:
        if key.endswith("#accept"):
            continue
        a, b = old[key], new[key]
        same_shape = a.shape == b.shape
        identical = same_shape and np.array_equal(a, b) and np.array_equal(old[key + "#accept"], new[key + "#accept"],
                                                                               equal_nan=True)
        difference = float(np.max(np.abs(a - b))) if same_shape else float("inf")
        rows.append({"case": key, "identical": bool(identical), "max_sample_difference": difference})
        print(f"{key}: {'identical' if identical else 'differs by %.3g' % difference}")
    print(f"{sum(row['identical'] for row in rows)} of {len(rows)} identical")
    if output:
        write_json(Path(output), {"provenance": provenance(seed=11, argv=None), "old": old_path, "new": new_path,
                                  "old_checkout": labels[0], "new_checkout": labels[1], "rows": rows})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    saving = commands.add_parser("save", help="run the cases, write an .npz")
    saving.add_argument("path")
    comparing = commands.add_parser("compare", help="compare two .npz files")
    comparing.add_argument("old")
    comparing.add_argument("new")
    comparing.add_argument("--output", default=None, help="a JSON file for the rows and the provenance")
    comparing.add_argument("--labels", nargs=2, default=("old", "new"), help="what the two checkouts were (commits)")
    args = parser.parse_args(argv)
    if args.command == "save":
        save(args.path)
    else:
        compare(args.old, args.new, args.output, tuple(args.labels))


if __name__ == "__main__":
    main()
