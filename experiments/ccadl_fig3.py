"""Shang, Zhu, Leimkuhler & Storkey (2015) Fig. 3 (SPEC E6, §4.10): discriminative RBMs (T9) on connect-4,
letter and acoustic with SGHMC, SGNHT and CCAdL (diagonal running covariance) in [C]'s form.

For each data set, each of the paper's three step sizes and its two A values: the test error of the
running posterior mean (burn-in: the first 20% of passes) against passes. The sweeps of
``python run.py -m +experiment=ccadl_fig3``, run through the Python API (``--jobs`` processes), one per (data set, A), each over
the three samplers and the three step sizes. Acoustic is run when its files are in the data folder (or can
be downloaded) and marked "data not available" otherwise. Writes ``fig3_drbm.png`` (3×3 panels),
``summary.csv`` and ``summary.md`` under ``results/paper/ccadl-fig3/<run-id>/``.

The paper's claim is about the largest step size, so that one is also run with ``--extra-seeds`` (default
1,2; the grid itself is seed 0): the summary then gives each method's final error there as mean ± sd over
the seeds, CCAdL's seed-paired difference to the better of SGHMC and SGNHT, and ``fig3_seeds.png``.
``--into <folder>`` adds the sweeps that folder lacks (e.g. the extra seeds) and rebuilds its summary;
``--summarise <folder>`` only rebuilds it.

    python -m experiments.ccadl_fig3 [--smoke] [--root results/paper] [--jobs 2] [--datasets letter,connect4,acoustic]
                                     [--extra-seeds 1,2] [--into FOLDER | --summarise FOLDER]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.common import multirun, parse_args, read_run, record
from sgmcmc.data import DataError
from sgmcmc.diagnostics.comparison import compare_paired
from sgmcmc.paper import PaperFolder, mean_and_sd

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
# --smoke (CI): 2 passes (42 steps on letter, two trace points per curve); thinning keeps 2 samples per run
# (steps 25 and 42 after the burn-in of 8), the fewest that give the sample-derived measures (spread, path length,
# window and per-sample errors): each kept sample costs a forward pass over the whole test set when collected. No
# kernel Stein discrepancy (the figure does not use it; on the DRBM its full-data gradients at 40 points took 43 s of
# the 257 s of a smoke run's 18 runs, profiled at 7b85345).
SMOKE_PASSES = 2
SMOKE = ["run.thin=17", "run.ksd_points=0"]


def steps_per_pass(dataset: str) -> float:
    n_train, batch = DATASETS[dataset]["sizes"]
    return n_train / batch


def sweeps(dataset: str, smoke: bool, extra_seeds: str = "") -> dict:
    """Hydra overrides per sweep: ``<dataset>_A<a>`` (the three step sizes, seed 0) and, with ``extra_seeds``,
    ``<dataset>_A<a>_seeds`` (the largest step size with those seeds)."""
    spec = DATASETS[dataset]
    passes = SMOKE_PASSES if smoke else spec["passes"]
    steps = math.ceil(passes * steps_per_pass(dataset))
    every = max(1, round(steps_per_pass(dataset)))
    out = {}
    for a in spec["diffusions"]:
        common = [f"sampler={','.join(SAMPLER_CONFIGS)}", f"vars.A={a}", f"target.dataset={dataset}",
                  f"run.n_steps={steps}", f"run.burn_in={steps // 5}", f"run.eval_every={every}"]
        out[f"{dataset}_A{a}"] = [*common, f"vars.h={','.join(map(str, spec['step_sizes']))}"]
        if extra_seeds:
            out[f"{dataset}_A{a}_seeds"] = [*common, f"vars.h={max(spec['step_sizes'])}", f"seed={extra_seeds}"]
    return out


def available(dataset: str) -> str | None:
    """None when the data set loads (fetching it if needed), else the one-line reason."""
    from sgmcmc.data.libsvm import load_libsvm

    try:
        load_libsvm(dataset)
    except DataError as error:
        return str(error)
    return None


SAMPLE_MEASURES = ("predictive_error", "sample_error_median", "sample_error_mean", "window_error", "sample_spread",
                   "path_length")


def previous_sample_measures(paper: PaperFolder) -> dict:
    """folder -> the sample-derived measures of the folder's existing summary.csv: samples.npz is not committed, so a
    rebuild (``--summarise``) on a clone keeps what the earlier summary computed from them rather than dropping it."""
    path = paper.path / "summary.csv"
    if not path.is_file():
        return {}
    table = pd.read_csv(path)
    columns = [c for c in SAMPLE_MEASURES if c in table]
    return {row["folder"]: {c: row[c] for c in columns if pd.notna(row[c])}
            for row in table[["folder", *columns]].to_dict("records")}


def collect(paper: PaperFolder, dataset: str, folders: list[Path], previous: dict | None = None) -> list[dict]:
    """One row per run; the sample-derived measures from samples.npz, or from ``previous`` (see
    :func:`previous_sample_measures`) when the samples are not there."""
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
                     "steps_per_second": metrics.get("steps_per_second"), "noise_clips": metrics.get("noise_clips", 0),
                     "commit": _commit(folder)})
        samples = folder / "samples.npz"
        if status == "completed" and samples.is_file():
            target = target or drbm(dataset, split_seed=int(config["target"]["split_seed"]))
            with np.load(samples) as data:
                theta = data["theta"][0]  # the experiment runs one chain
            rows[-1].update(target.sample_test_errors(theta))
            rows[-1].update(path_measures(target, theta))
        elif previous and rows[-1]["folder"] in previous:
            rows[-1].update(previous[rows[-1]["folder"]])
    return rows


def path_measures(target, theta) -> dict:
    """How far one chain's kept samples ``theta`` (m, dim; after burn-in, in order) travel, and what that does to
    the error at their mean: ``window_error`` is the test error at the mean of the last quarter of them (the last
    20% of passes) instead of all; ``sample_spread`` the mean per-coordinate sd; ``path_length`` ‖θ_last − θ_first‖."""
    window = theta[-max(1, len(theta) // 4):]
    return {"window_error": float(target.trace_metrics(window.mean(axis=0)[None])["test_error"]),
            "sample_spread": float(theta.std(axis=0).mean()), "path_length": float(np.linalg.norm(theta[-1] - theta[0]))}


def _commit(folder: Path) -> str:
    """The short git commit a run was made at (``+dirty`` when its worktree had changes)."""
    provenance = folder / "provenance.json"
    if not provenance.is_file():
        return ""
    record = json.loads(provenance.read_text())
    return (record.get("git_commit") or "")[:7] + ("+dirty" if record.get("git_dirty") else "")


def largest_step(rows: pd.DataFrame) -> pd.DataFrame:
    """The completed runs at each data set's largest step size (every seed)."""
    if rows.empty:
        return rows
    largest = rows.dataset.map(lambda d: max(DATASETS[d]["step_sizes"]))
    return rows[(rows.h == largest) & (rows.status == "completed")]


def paired_differences(seeded: pd.DataFrame, column: str = "test_error") -> pd.DataFrame:
    """Per (data set, A, seed): CCAdL's ``column`` minus the better (lower) of SGHMC's and SGNHT's."""
    table = seeded.pivot_table(index=["dataset", "A", "seed"], columns="method", values=column).dropna()
    return (table["CCAdL"] - table[["SGHMC", "SGNHT"]].min(axis=1)).rename("difference").reset_index()


def seed_verdicts(seeded: pd.DataFrame) -> str:
    """The largest step size over all seeds: mean ± sd per method and CCAdL's seed-paired difference."""
    if seeded.empty or seeded.seed.nunique() < 2:
        return ""
    lines = [f"Largest step size over seeds {', '.join(map(str, sorted(seeded.seed.unique())))} (final test error, mean ± sd):", "",
             "| data set | A | " + " | ".join(METHODS.values()) + " | CCAdL − better other (mean ± sd; seeds no worse) |",
             "|---|---|" + "---|" * len(METHODS) + "---|"]
    stats = mean_and_sd(seeded, ["dataset", "A", "method"], "test_error")
    differences = paired_differences(seeded)
    for (dataset, a), group in stats.groupby(["dataset", "A"], sort=False):
        cells = {r.method: f"{r.test_error_mean:.3f} ± {r.test_error_sd:.3f} (n={r.n_runs})" for r in group.itertuples()}
        d = differences[(differences.dataset == dataset) & (differences.A == a)].difference
        lines.append(f"| {dataset} | {a:g} | " + " | ".join(cells.get(m, "–") for m in METHODS.values())
                     + f" | {d.mean():+.3f} ± {d.std():.3f}; {int((d <= 0).sum())} of {len(d)} |")
    lines.append("")
    lines.append("CCAdL against each other method at the largest step size, paired by seed (verdicts from the spread of "
                 "the seed-paired differences, SPEC §4.15; lower error is \"below\"):")
    by_seed = seeded.pivot_table(index=["dataset", "A", "seed"], columns="method", values="test_error")
    for (dataset, a), group in by_seed.groupby(level=["dataset", "A"], sort=False):
        for other in ("SGHMC", "SGNHT"):
            pair = group[["CCAdL", other]].dropna() if {"CCAdL", other} <= set(group.columns) else group.iloc[:0]
            if len(pair):
                lines.append(f"- {dataset}, A = {a:g}: " + compare_paired(pair["CCAdL"], pair[other]).sentence("CCAdL", other))
    lines.append("")
    for column, label in (("predictive_error", "posterior-predictive error of the kept samples"),
                          ("sample_error_median", "median test error of the kept samples one by one"),
                          ("window_error", "error at the mean of the last 20% of passes only"),
                          ("sample_spread", "per-coordinate sd of the kept samples"),
                          ("path_length", "‖θ_last − θ_first‖ over the kept samples")):
        if column in seeded:
            stats = mean_and_sd(seeded, ["dataset", "A", "method"], column)
            lines.append(f"- {label} (mean ± sd over seeds): " + "; ".join(
                f"{dataset} A={a:g}: " + ", ".join(f"{r.method} {getattr(r, column + '_mean'):.3f} ± {getattr(r, column + '_sd'):.3f}"
                                                    for r in group.itertuples())
                for (dataset, a), group in stats.groupby(["dataset", "A"], sort=False)))
    return "\n".join(lines)


def draw_seeds(seeded: pd.DataFrame, path: Path) -> None:
    """One panel per (data set, A) at the largest step size: each seed's final error per method and their mean."""
    panels = list(seeded.groupby(["dataset", "A"], sort=False))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.6), squeeze=False)
    for ax, ((dataset, a), group) in zip(axes[0], panels):
        for x, method in enumerate(METHODS.values()):
            values = group[group.method == method].test_error
            ax.scatter(np.full(len(values), x), values, color=COLORS[method], alpha=0.7)
            ax.hlines(values.mean(), x - 0.3, x + 0.3, color=COLORS[method])
        ax.set_xticks(range(len(METHODS)), list(METHODS.values()))
        ax.set_title(f"{dataset}, A = {a:g}, h = {max(DATASETS[dataset]['step_sizes']):g}", fontsize=10)
        ax.set_ylabel("final test error of the posterior mean")
    fig.suptitle(f"Largest step size: one dot per seed ({group.seed.nunique()} seeds), line = mean", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def draw(paper: PaperFolder, rows: pd.DataFrame, missing: dict, path: Path) -> None:
    fig, axes = plt.subplots(len(DATASETS), 3, figsize=(15, 4.0 * len(DATASETS)), squeeze=False)
    for r, (dataset, spec) in enumerate(DATASETS.items()):
        for c, h in enumerate(spec["step_sizes"]):
            ax = axes[r, c]
            ax.set_title(f"{dataset}: h = {h:g}", fontsize=10)
            if dataset in missing:
                ax.text(0.5, 0.5, "data not available", ha="center", va="center", transform=ax.transAxes)
                continue
            part = rows[(rows.dataset == dataset) & (rows.h == h) & (rows.status == "completed") & (rows.seed == 0)]
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
    lines = ["Measured on the grid (seed 0; final test error of the posterior mean, from the table above):"]
    for dataset, spec in DATASETS.items():
        part = rows[(rows.dataset == dataset) & (rows.status == "completed") & (rows.seed == 0)]
        if part.empty:
            continue
        largest = part[part.h == max(spec["step_sizes"])].pivot_table(index="A", columns="method", values="test_error")
        best = int(((largest["CCAdL"] <= largest["SGHMC"]) & (largest["CCAdL"] <= largest["SGNHT"])).sum())
        low, high = spec["axis"]
        inside = int(part.test_error.between(low, high).sum())
        lines.append(f"- {dataset}: at the largest h (seed 0, one run per method: no spread, so no verdict here; the seeds "
                     f"are compared below), CCAdL's error is no higher than SGHMC's and SGNHT's for {best} of "
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
                      extra_seeds=("1,2", "seeds run in addition to seed 0 at the largest step size ('' for none)"),
                      into=("", "add the sweeps this existing ccadl-fig3 folder lacks, then rebuild its summary"),
                      summarise=("", "rebuild summary and figure of an existing ccadl-fig3 folder (no new runs)"))
    datasets, seeds = _checked(args)
    existing = args.summarise or args.into
    paper = PaperFolder(FIGURE_ID, Path(existing)) if existing else PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    rows, missing = [], {}
    previous = previous_sample_measures(paper) if existing else {}
    for dataset in datasets:
        reason = "" if args.summarise else available(dataset)
        if reason:
            missing[dataset] = reason
            print(f"  {dataset}: data not available ({reason})", file=sys.stderr)
            continue
        for sweep, overrides in sweeps(dataset, args.smoke, seeds).items():
            folder = paper.runs_dir / sweep
            if existing and folder.is_dir():
                rows += collect(paper, dataset, sorted(p for p in folder.iterdir() if p.is_dir()), previous)
            elif not args.summarise:
                rows += collect(paper, dataset, multirun(paper, "ccadl_fig3", sweep, overrides, args.jobs,
                                                         SMOKE if args.smoke else ()))
        if args.summarise and not any(row["dataset"] == dataset for row in rows):
            missing[dataset] = available(dataset) or f"not run in this folder ({paper.runs_dir} has no {dataset} sweep)"
    _write(paper, rows, missing, args)


def _checked(args) -> tuple[list, str]:
    """The data sets and extra seeds asked for; one line and exit 2 for a bad value."""
    datasets = [d for d in args.datasets.split(",") if d]
    problems = [f"--datasets: unknown data set {d!r} (allowed: {', '.join(DATASETS)})" for d in datasets if d not in DATASETS]
    seeds = [s.strip() for s in args.extra_seeds.split(",") if s.strip()]
    if not all(s.isdigit() and int(s) > 0 for s in seeds):
        problems.append(f"--extra-seeds: {args.extra_seeds!r} must be comma-separated non-negative integers other than 0 "
                        "(seed 0 is the grid's)")
    if args.into and args.summarise:
        problems.append("--into and --summarise: give one of them")
    folder = args.into or args.summarise
    if folder and not (Path(folder) / "runs").is_dir():
        problems.append(f"--{'into' if args.into else 'summarise'}: {folder} is not a ccadl-fig3 folder (no runs/ inside)")
    if problems:
        print(f"error: {problems[0]}", file=sys.stderr)
        sys.exit(2)
    return datasets, ",".join(str(int(s)) for s in seeds)


def _write(paper: PaperFolder, rows: list, missing: dict, args) -> None:
    rows = pd.DataFrame(rows)
    draw(paper, rows, missing, paper.path / "fig3_drbm.png")
    seeded = largest_step(rows)
    if len(seeded) and seeded.seed.nunique() > 1:
        draw_seeds(seeded, paper.path / "fig3_seeds.png")
    shown = rows.drop(columns=["folder"]).sort_values(["dataset", "h", "A", "method", "seed"]) if len(rows) else rows
    body = (shown.to_markdown(index=False, floatfmt=".4g") + "\n\n" + verdicts(rows) + "\n\n" + seed_verdicts(seeded)
            + "\n\n" + "".join(f"- {d}: data not available ({r})\n" for d, r in missing.items()))
    paper.write_summary(rows, "Shang et al. (2015) Fig. 3: discriminative RBMs", NOTES, body=body)
    paper.finish({"smoke": args.smoke, "datasets": args.datasets, "extra_seeds": args.extra_seeds, "missing": missing,
                  "jobs": args.jobs, "summarised_only": bool(args.summarise), "added_into": bool(args.into)}, sys.argv)
    print(paper.path)


NOTES = """
Settings (SPEC E6, §4.10): prior N(0, I), θ₀ ~ N(0, 0.01²I), minibatches without replacement (n = 1000
connect-4 and acoustic, 500 letter), hidden units 20 / 100 / 20; connect-4 split 80/20 by a seeded
permutation (54,046 / 13,511), letter = letter.scale.tr / letter.scale.t; [C]'s θ-first splitting; SGHMC
and CCAdL with the diagonal running estimate scaled by Eq. 17's N²/n (SGHMC's injected variances clipped
at 0, counted); SGNHT with none. Test error: argmax_y p(y|x, θ̄) with θ̄ the running mean after the first
20% of passes. One chain per run (the paper's figure shows one run per curve); the grid is seed 0, the
largest step size is repeated with the extra seeds. `commit` is the git commit each run was made at.
"""


if __name__ == "__main__":
    main()
