"""Shang, Zhu, Leimkuhler & Storkey (2015) Fig. 3 (SPEC E6, §4.10): discriminative RBMs (T9) on connect-4,
letter and acoustic with SGHMC, SGNHT and CCAdL (diagonal running covariance) in [C]'s form.

For each data set, each of the paper's three step sizes and its two A values: the test error of the
running posterior mean (burn-in: the first 20% of passes) against passes. Hydra multiruns of
``python run.py -m +experiment=ccadl_fig3`` (joblib when ``--jobs`` > 1), one per (data set, A), each over
the three samplers and the three step sizes. Acoustic is run when its files are in the data folder (or can
be downloaded) and marked "data not available" otherwise. Writes ``fig3_drbm.png`` (3×3 panels),
``summary.csv`` and ``summary.md`` under ``results/paper/ccadl-fig3/<run-id>/``.

    python -m experiments.ccadl_fig3 [--smoke] [--root results/paper] [--jobs 2] [--datasets letter,connect4,acoustic]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.common import multirun, parse_args, read_run, record
from sgmcmc.data import DataError
from sgmcmc.paper import PaperFolder

FIGURE_ID = "ccadl-fig3"
METHODS = {"sghmc": "SGHMC", "sgnht": "SGNHT", "ccadl": "CCAdL"}
SAMPLER_CONFIGS = ("sghmc_shang2015", "sgnht_shang2015", "ccadl_shang2015")
COLORS = {"SGHMC": "tab:blue", "SGNHT": "tab:orange", "CCAdL": "tab:green"}
# SPEC E6: step sizes, A values, pass budget and the paper's error axis per data set; (N_train, n) of §4.10
DATASETS = {
    "connect4": dict(step_sizes=(5e-4, 1e-3, 2e-3), diffusions=(10, 50), passes=200, axis=(0.27, 0.33), sizes=(54046, 1000)),
    "letter": dict(step_sizes=(1e-3, 2e-3, 5e-3), diffusions=(1, 10), passes=400, axis=(0.10, 0.25), sizes=(10500, 500)),
    "acoustic": dict(step_sizes=(2e-4, 5e-4, 1e-3), diffusions=(1, 10), passes=200, axis=(0.25, 0.40), sizes=(78823, 1000)),
}
SMOKE_PASSES = 2
SMOKE = ["run.thin=1"]


def steps_per_pass(dataset: str) -> float:
    n_train, batch = DATASETS[dataset]["sizes"]
    return n_train / batch


def sweeps(dataset: str, smoke: bool) -> dict:
    spec = DATASETS[dataset]
    passes = SMOKE_PASSES if smoke else spec["passes"]
    steps = math.ceil(passes * steps_per_pass(dataset))
    every = max(1, round(steps_per_pass(dataset)))
    return {f"{dataset}_A{a}": [f"sampler={','.join(SAMPLER_CONFIGS)}", f"vars.h={','.join(map(str, spec['step_sizes']))}",
                                f"vars.A={a}", f"target.dataset={dataset}", f"run.n_steps={steps}",
                                f"run.burn_in={steps // 5}", f"run.eval_every={every}"]
            for a in spec["diffusions"]}


def available(dataset: str) -> str | None:
    """None when the data set loads (fetching it if needed), else the one-line reason."""
    from sgmcmc.data.libsvm import load_libsvm

    try:
        load_libsvm(dataset)
    except DataError as error:
        return str(error)
    return None


def collect(paper: PaperFolder, dataset: str, folders: list[Path]) -> list[dict]:
    from sgmcmc.targets.drbm import drbm

    rows, target = [], None
    for folder in folders:
        config, status = read_run(folder)
        setting = {"dataset": dataset, "method": METHODS[config["sampler"]["name"]], "h": float(config["vars"]["h"]),
                   "A": float(config["vars"]["A"]), "seed": int(config["seed"])}
        metrics = record(paper, folder, status, setting)
        trace = pd.read_csv(folder / "trace.csv") if (folder / "trace.csv").is_file() else pd.DataFrame()
        final = trace.dropna(subset=["test_error"]).iloc[-1] if "test_error" in trace else None
        rows.append({**setting, "status": status, "folder": str(folder.relative_to(paper.path)),
                     "passes": None if final is None else float(final.passes),
                     "test_error": None if final is None else float(final.test_error),
                     "error_rise": None if final is None else float(final.test_error - trace.test_error.min()),
                     "steps_per_second": metrics.get("steps_per_second"), "noise_clips": metrics.get("noise_clips", 0)})
        samples = folder / "samples.npz"
        if status == "completed" and samples.is_file():
            target = target or drbm(dataset, split_seed=int(config["target"]["split_seed"]))
            with np.load(samples) as data:
                rows[-1].update(target.sample_test_errors(data["theta"].reshape(-1, target.dim)))
    return rows


def draw(paper: PaperFolder, rows: pd.DataFrame, missing: dict, path: Path) -> None:
    fig, axes = plt.subplots(len(DATASETS), 3, figsize=(15, 4.0 * len(DATASETS)), squeeze=False)
    for r, (dataset, spec) in enumerate(DATASETS.items()):
        for c, h in enumerate(spec["step_sizes"]):
            ax = axes[r, c]
            ax.set_title(f"{dataset}: h = {h:g}", fontsize=10)
            if dataset in missing:
                ax.text(0.5, 0.5, "data not available", ha="center", va="center", transform=ax.transAxes)
                continue
            part = rows[(rows.dataset == dataset) & (rows.h == h) & (rows.status == "completed")]
            for row in part.itertuples():
                trace = pd.read_csv(paper.path / row.folder / "trace.csv").dropna(subset=["test_error"])
                ax.plot(trace.passes, trace.test_error, color=COLORS[row.method],
                        ls="-" if row.A == max(spec["diffusions"]) else "--", lw=1.2, label=f"{row.method}, A = {row.A:g}")
            ax.axhspan(*spec["axis"], color="0.9", zorder=0, label="paper's axis range")
            ax.set_xlabel("passes over the data")
            ax.set_ylabel("test error of the posterior mean")
            ax.legend(fontsize=7)
    fig.suptitle("Shang et al. 2015 Fig. 3: discriminative RBMs (diagonal running covariance), 1 chain per run", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def majority_error(dataset: str) -> float:
    """Test error of always predicting the most frequent training class (the floor a classifier must beat)."""
    from sgmcmc.data.libsvm import load_libsvm

    split = load_libsvm(dataset)
    return float(np.mean(split.test_y != np.bincount(split.train_y).argmax()))


def verdicts(rows: pd.DataFrame) -> str:
    lines = ["Measured (final test error of the posterior mean, from the table above):"]
    for dataset, spec in DATASETS.items():
        part = rows[(rows.dataset == dataset) & (rows.status == "completed")]
        if part.empty:
            continue
        largest = part[part.h == max(spec["step_sizes"])].pivot_table(index="A", columns="method", values="test_error")
        best = int(((largest["CCAdL"] <= largest["SGHMC"]) & (largest["CCAdL"] <= largest["SGNHT"])).sum())
        low, high = spec["axis"]
        inside = int(part.test_error.between(low, high).sum())
        lines.append(f"- {dataset}: at the largest h, CCAdL's error is no worse than SGHMC's and SGNHT's for {best} of "
                     f"{len(largest)} A values ({'; '.join(f'A={a:g}: ' + ', '.join(f'{m} {v:.3f}' for m, v in r.items()) for a, r in largest.iterrows())}); "
                     f"{inside} of {len(part)} final errors inside the paper's axis range {low}–{high}; "
                     f"predicting the majority class gives {majority_error(dataset):.3f} on this test set.")
        if "predictive_error" in part:
            for column, label in (("predictive_error", "posterior-predictive error of the kept samples"),
                                  ("sample_error_median", "median test error of the kept samples one by one")):
                table = part[part.h == max(spec["step_sizes"])].pivot_table(index="A", columns="method", values=column)
                lines.append(f"  - {label}, largest h: " + "; ".join(
                    f"A={a:g}: " + ", ".join(f"{m} {v:.3f}" for m, v in r.items()) for a, r in table.iterrows()))
        rise = part.groupby("method").error_rise.mean()
        lines.append("  - the error at θ̄ rises from its minimum along the run to its final value by (mean over h and A) "
                     + ", ".join(f"{m} {v:.3f}" for m, v in rise.items()))
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, datasets=(",".join(DATASETS), "data sets to run"),
                      summarise=("", "rebuild summary and figure of an existing ccadl-fig3 folder (no new runs)"))
    if args.summarise:
        paper = PaperFolder(FIGURE_ID, Path(args.summarise))
        rows, missing = [], {}
        for dataset in args.datasets.split(","):
            for sweep in sweeps(dataset, args.smoke):
                folder = paper.runs_dir / sweep
                if folder.is_dir():
                    rows += collect(paper, dataset, sorted(p for p in folder.iterdir() if p.is_dir()))
                else:
                    missing[dataset] = available(dataset) or f"not run in this folder ({folder} is missing)"
        return _write(paper, rows, missing, args)
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    rows, missing = [], {}
    for dataset in args.datasets.split(","):
        reason = available(dataset)
        if reason is not None:
            missing[dataset] = reason
            print(f"  {dataset}: data not available ({reason})", file=sys.stderr)
            continue
        for sweep, overrides in sweeps(dataset, args.smoke).items():
            extra = SMOKE if args.smoke else ()
            rows += collect(paper, dataset, multirun(paper, "ccadl_fig3", sweep, overrides, args.jobs, extra))
    _write(paper, rows, missing, args)


def _write(paper: PaperFolder, rows: list, missing: dict, args) -> None:
    rows = pd.DataFrame(rows)
    draw(paper, rows, missing, paper.path / "fig3_drbm.png")
    shown = rows.drop(columns=["folder"]).sort_values(["dataset", "h", "A", "method"]) if len(rows) else rows
    body = (shown.to_markdown(index=False, floatfmt=".4g") + "\n\n" + verdicts(rows) + "\n\n"
            + "".join(f"- {d}: data not available ({r})\n" for d, r in missing.items()))
    paper.write_summary(rows, "Shang et al. (2015) Fig. 3: discriminative RBMs", NOTES, body=body)
    paper.finish({"smoke": args.smoke, "datasets": args.datasets, "missing": missing, "jobs": args.jobs,
                  "summarised_only": bool(args.summarise)}, sys.argv)
    print(paper.path)


NOTES = """
Settings (SPEC E6, §4.10): prior N(0, I), θ₀ ~ N(0, 0.01²I), minibatches without replacement (n = 1000
connect-4 and acoustic, 500 letter), hidden units 20 / 100 / 20; connect-4 split 80/20 by a seeded
permutation (54,046 / 13,511), letter = letter.scale.tr / letter.scale.t; [C]'s θ-first splitting; SGHMC
and CCAdL with the diagonal running estimate scaled by Eq. 17's N²/n (SGHMC's injected variances clipped
at 0, counted); SGNHT with none. Test error: argmax_y p(y|x, θ̄) with θ̄ the running mean after the first
20% of passes. One chain per run (the paper's figure shows one run per curve).
"""


if __name__ == "__main__":
    main()
