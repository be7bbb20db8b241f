"""Two engine reports (``make bench``'s ``results/bench/engine-<run-id>.json``) cell by cell: for every sampler and
number of chains in both, the cost per chain-step of the new report over the old one's (above 1: slower), and
whether it is more than ``--tolerance`` above (issue 33: no cell more than 10% above the report of 2026-11-26).

    python scripts/compare_engine_reports.py results/bench/engine-20261126-155840-9aad5fbc.json NEW.json [--tolerance 0.10]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def cells(report: dict) -> dict:
    """(sampler, chains) → seconds per chain-step of a report's ``chain_steps`` rows."""
    return {(row["sampler"], row["n_chains"]): 1.0 / row["chain_steps_per_second"] for row in report["chain_steps"]
            if row.get("chain_steps_per_second")}


def compare(old: dict, new: dict, tolerance: float) -> list[dict]:
    before, after = cells(old), cells(new)
    return [{"sampler": sampler, "n_chains": chains, "old_ns": before[sampler, chains] * 1e9,
             "new_ns": after[sampler, chains] * 1e9, "ratio": after[sampler, chains] / before[sampler, chains],
             "above_tolerance": after[sampler, chains] > (1.0 + tolerance) * before[sampler, chains]}
            for sampler, chains in before if (sampler, chains) in after]


def main(argv=None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--tolerance", type=float, default=0.10)
    args = parser.parse_args(argv)
    rows = compare(json.loads(Path(args.old).read_text()), json.loads(Path(args.new).read_text()), args.tolerance)
    print("| sampler | chains | old ns/chain-step | new ns/chain-step | new / old | more than "
          f"{args.tolerance:.0%} above? |")
    print("|---|---:|---:|---:|---:|---|")
    for row in rows:
        print(f"| {row['sampler']} | {row['n_chains']:,} | {row['old_ns']:.1f} | {row['new_ns']:.1f} | "
              f"{row['ratio']:.2f} | {'yes' if row['above_tolerance'] else 'no'} |")
    return rows


if __name__ == "__main__":
    main()
