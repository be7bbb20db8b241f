"""Whether two runs of one paper figure give the same numbers: the rows of two ``summary.csv`` files matched on their
settings, and per column how many values are equal and the largest difference (issue 33: a paper result whose runs
moved to the engine's blocks and came out the same needs no new verdict).

    python scripts/compare_paper_summaries.py OLD/summary.csv NEW/summary.csv --keys dataset method h A seed
        --columns test_error noise_clips passes path_length [--output results/bench/<name>.json]
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from sgmcmc.results import write_json


def compare(old: pd.DataFrame, new: pd.DataFrame, keys: list[str], columns: list[str]) -> dict:
    """{"rows": (old, new, matched), column: {"equal": count, "largest_difference": float}}."""
    matched = old.merge(new, on=keys, suffixes=("_old", "_new"))
    out = {"rows": {"old": len(old), "new": len(new), "matched": len(matched)}}
    for column in columns:
        a, b = matched[f"{column}_old"].astype(float), matched[f"{column}_new"].astype(float)
        out[column] = {"equal": int((a == b).sum()), "largest_difference": float(np.max(np.abs(a - b)))}
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--keys", nargs="+", required=True)
    parser.add_argument("--columns", nargs="+", required=True)
    parser.add_argument("--output")
    args = parser.parse_args(argv)
    report = {"old": args.old, "new": args.new,
              **compare(pd.read_csv(args.old), pd.read_csv(args.new), args.keys, args.columns)}
    for name, value in report.items():
        print(f"{name}: {value}")
    if args.output:
        write_json(args.output, report)


if __name__ == "__main__":
    main()
