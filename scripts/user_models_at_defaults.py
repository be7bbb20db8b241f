#!/usr/bin/env python
"""Every correct sampler at its defaults on the user models with exact answers (``examples/exact_models.py``; issue
34): ``python run.py target=custom target.model=examples/exact_models.py:M sampler=S`` with nothing else, each run's
outcome judged against the model's exact moments.

    python scripts/user_models_at_defaults.py [--models Banana ...] [--samplers sgld ...] [--jobs 2]

An outcome is ``right`` (every coordinate's mean within 4 Monte Carlo standard errors of the exact mean, ArviZ's
``mcse`` of the mean, and its sd within 10% of the exact sd), ``warned`` (not right, and the run said why on stderr
and in metrics.json's ``warnings``), ``silent`` (not right, and nothing said: the failure issue 34 forbids),
``refused`` (a one-line refusal naming a key) or ``failed``. Writes results/user-models/at-defaults-<commit>.json and
.md next to it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import arviz
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sgmcmc.results import provenance  # noqa: E402
from sgmcmc.targets.user import load_model_class  # noqa: E402

MODELS = ("SmallScaleGaussian", "Banana", "ConjugateRegression")
SAMPLERS = ("sgld", "sgrld", "psgld", "sghmc", "sghmc_mh", "sgrhmc", "sgnht", "ccadl", "baoab", "badodab", "hmc")
MCSE_BOUND, SD_BOUND = 4.0, 0.10


def judge(theta: np.ndarray, mean: np.ndarray, second: np.ndarray) -> dict:
    """Each coordinate's mean error in MCSEs and sd ratio against the exact moments; ``right`` when all hold."""
    sd = np.sqrt(second - mean**2)
    data = arviz.convert_to_dataset(theta)
    mcse = np.asarray(arviz.mcse(data, method="mean")["x"].values, dtype=float)
    sampled_mean, sampled_sd = theta.mean(axis=(0, 1)), theta.std(axis=(0, 1))
    errors = np.abs(sampled_mean - mean) / mcse
    ratios = sampled_sd / sd
    right = bool(np.all(errors <= MCSE_BOUND) and np.all(np.abs(ratios - 1) <= SD_BOUND))
    return {"right": right, "mean_error_mcse": errors.tolist(), "sd_ratio": ratios.tolist()}


def run_one(model: str, sampler: str, results: Path) -> dict:
    command = [sys.executable, str(ROOT / "run.py"), "target=custom", f"target.model=examples/exact_models.py:{model}",
               f"sampler={sampler}", f"run.results_dir={results / model / sampler}", "run.progress=false"]
    finished = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    record = {"model": model, "sampler": sampler, "command": " ".join(["python", "run.py", *command[2:-2]]),
              "exit": finished.returncode, "stderr": finished.stderr.strip().splitlines()}
    folders = sorted((results / model / sampler).glob("*"))
    if finished.returncode == 2 or not folders:
        return {**record, "outcome": "refused" if finished.returncode == 2 else "failed"}
    metrics = json.loads((folders[-1] / "metrics.json").read_text())
    record.update(status=metrics["status"], warnings=[w["check"] for w in metrics.get("warnings", [])],
                  tuning=metrics.get("tuning", {}).get("chose"), tuning_seconds=metrics.get("tuning", {}).get("cost", {}).get("seconds"),
                  wall_time_s=metrics.get("wall_time_s"))
    if metrics["status"] != "completed":
        return {**record, "outcome": "warned" if record["stderr"] else "silent"}
    theta = np.load(folders[-1] / "samples.npz")["theta"]
    exact = load_model_class(f"examples/exact_models.py:{model}")().exact_moments()
    verdict = judge(theta, *exact)
    outcome = "right" if verdict["right"] else ("warned" if record["warnings"] else "silent")
    return {**record, **verdict, "outcome": outcome}


def table(records: list[dict]) -> str:
    lines = ["| model | sampler | outcome | tuned | max mean error (MCSE) | sd ratio range | warnings |",
             "|---|---|---|---|---|---|---|"]
    for r in records:
        tuned = ", ".join(f"{k}={v:.3g}" for k, v in (r.get("tuning") or {}).items())
        errors = f"{max(r['mean_error_mcse']):.1f}" if "mean_error_mcse" in r else ""
        ratios = f"{min(r['sd_ratio']):.3f}–{max(r['sd_ratio']):.3f}" if "sd_ratio" in r else ""
        lines.append(f"| {r['model']} | {r['sampler']} | {r['outcome']} | {tuned} | {errors} | {ratios} | "
                     f"{', '.join(r.get('warnings', []))} |")
    return "\n".join(lines) + "\n"


def write_report(records: list[dict], prefix: Path, markdown: str) -> Path:
    """``records`` as <prefix>-<commit>.json and ``markdown`` beside it as .md; the .md's path."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    record = provenance(0)
    dirty = "-dirty" if record["git_dirty"] else ""  # code that no commit holds: its numbers cannot be repeated
    stem = prefix.parent / f"{prefix.name}-{(record['git_commit'] or 'unknown')[:8]}{dirty}"
    stem.with_suffix(".json").write_text(json.dumps(records, indent=1) + "\n")
    stem.with_suffix(".md").write_text(markdown)
    return stem.with_suffix(".md")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=MODELS)
    parser.add_argument("--samplers", nargs="*", default=SAMPLERS)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--output", type=Path, default=ROOT / "results" / "user-models")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        pairs = [(m, s) for m in args.models for s in args.samplers]
        with ThreadPoolExecutor(args.jobs) as pool:
            records = list(pool.map(lambda pair: run_one(*pair, Path(folder)), pairs))
    for r in records:
        print(r["model"], r["sampler"], r["outcome"], r.get("tuning"), r.get("warnings"), flush=True)
    print(write_report(records, args.output / "at-defaults", table(records)))


if __name__ == "__main__":
    main()
