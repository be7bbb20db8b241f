"""Whether two runs of a reference posterior (``reference.npz`` of :mod:`sgmcmc.reference`) agree within their Monte
Carlo error: per coordinate, the difference of the means in units of its standard error, sd·√(1/ESS₁ + 1/ESS₂) with
each run's bulk ESS, and the ratio of the standard deviations.

    python scripts/compare_references.py OLD_FOLDER NEW_FOLDER [--output report.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def compare(old: Path, new: Path) -> dict:
    first, second = np.load(old / "reference.npz"), np.load(new / "reference.npz")
    sd = np.sqrt(0.5 * (np.diag(first["covariance"]) + np.diag(second["covariance"])))
    error = sd * np.sqrt(1.0 / first["ess"] + 1.0 / second["ess"])
    z = (second["mean"] - first["mean"]) / error
    ratio = np.sqrt(np.diag(second["covariance"]) / np.diag(first["covariance"]))
    return {"old": str(old), "new": str(new), "coordinates": int(z.size),
            "largest_mean_difference_in_standard_errors": float(np.max(np.abs(z))),
            "coordinates_beyond_3_standard_errors": int(np.sum(np.abs(z) > 3.0)),
            "sd_ratio_range": [float(ratio.min()), float(ratio.max())],
            "largest_rhat": [float(first["rhat"].max()), float(second["rhat"].max())],
            "smallest_ess": [float(first["ess"].min()), float(second["ess"].min())]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("old", type=Path)
    parser.add_argument("new", type=Path)
    parser.add_argument("--output", type=Path)
    args = parser.parse_args()
    report = compare(args.old, args.new)
    text = json.dumps(report, indent=2)
    print(text)
    if args.output:
        args.output.write_text(text + "\n")


if __name__ == "__main__":
    main()
