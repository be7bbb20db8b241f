"""Shang, Zhu, Leimkuhler & Storkey (2015) Fig. 2 (SPEC E5, §4.9): Bayesian logistic regression on MNIST
7 vs 9 (T8) with SGHMC, SGNHT and CCAdL (full 100×100 running covariance) in [C]'s form.

Top row: the test log-likelihood of the running posterior mean (summed over the 2,037 test points)
against passes over the data, for h ∈ {0.2, 0.5, 1}×10⁻⁴ and A ∈ {1, 10}, within [C]'s pass budget
(600 passes at h = 0.2×10⁻⁴, 300 otherwise). Bottom row (A = 10): after the budget (the burn-in) the A = 10
runs go on for ``POSTERIOR_STEPS`` steps; the (w₂, w₅) marginal of those samples with 95% ellipses and
means, against the full-data HMC reference (``make reference-logistic``).

The sweeps of ``python run.py -m +experiment=ccadl_fig2``, run through the Python API (``--jobs`` processes): one
sweep per (pass budget, A), each over the three samplers and that budget's step sizes. Writes
``fig2_logistic.png``, ``summary.csv`` and ``summary.md`` under ``results/paper/ccadl-fig2/<run-id>/``.

    python -m experiments.ccadl_fig2 [--smoke] [--root results/paper] [--jobs 2] [--reference results/reference]
    python -m experiments.ccadl_fig2 --summarise results/paper/ccadl-fig2/<run-id>   # summary + figure again
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.patches import Ellipse
from scipy import stats

from experiments.common import load_samples, multirun, parse_args, read_json, read_run, record
from experiments.reference_logistic import reference_name
from sgmcmc.diagnostics.comparison import compare_means
from sgmcmc.paper import PaperFolder
from sgmcmc.reference import ReferenceMissing, load_reference

FIGURE_ID = "ccadl-fig2"
METHODS = {"sghmc": "SGHMC", "sgnht": "SGNHT", "ccadl": "CCAdL"}
SAMPLER_CONFIGS = ("sghmc_shang2015", "sgnht_shang2015", "ccadl_shang2015")
N_TRAIN, BATCH = 12214, 500  # SPEC T8: steps per pass = N/n
PASS_BUDGETS = {600: (2e-5,), 300: (5e-5, 1e-4)}  # [C] Fig. 2's x-ranges
DIFFUSIONS = (1, 10)
POSTERIOR_STEPS = 50_000  # per chain after the budget, A = 10 only (4 chains: 2×10⁵ steps, 2×10⁴ kept at thin 10)
SMOKE_PASSES, SMOKE_POSTERIOR_STEPS = 4, 100
COORDINATES = (1, 4)  # w₂, w₅ (1-based in the paper, SPEC §4.9)
CHI2_95 = stats.chi2.ppf(0.95, 2)
COLORS = {"SGHMC": "tab:blue", "SGNHT": "tab:orange", "CCAdL": "tab:green"}


def budget_steps(passes: int) -> int:
    return math.ceil(passes * N_TRAIN / BATCH)


def sweeps(smoke: bool) -> dict:
    out = {}
    for passes, step_sizes in PASS_BUDGETS.items():
        used = SMOKE_PASSES if smoke else passes
        for a in DIFFUSIONS:
            extra = (SMOKE_POSTERIOR_STEPS if smoke else POSTERIOR_STEPS) if a == 10 else 0
            out[f"passes{passes}_A{a}"] = [f"sampler={','.join(SAMPLER_CONFIGS)}", f"vars.h={','.join(map(str, step_sizes))}",
                                           f"vars.A={a}", f"run.n_steps={budget_steps(used) + extra}"]
    return out


SMOKE = ["run.n_chains=2", "run.thin=1", "run.eval_every=10"]


def collect(paper: PaperFolder, sweep: str, folders: list[Path]) -> list[dict]:
    rows = []
    for folder in folders:
        config, status = read_run(folder)
        setting = {"sweep": sweep, "method": METHODS[config["sampler"]["name"]], "h": float(config["vars"]["h"]),
                   "A": float(config["vars"]["A"]), "seed": int(config["seed"]), "thin": int(config["run"]["thin"]),
                   "n_steps": int(config["run"]["n_steps"]), "n_chains": int(config["run"]["n_chains"])}
        metrics = record(paper, folder, status, setting)
        rows.append({**setting, "status": status, "folder": str(folder.relative_to(paper.path)),
                     "noise_clips": metrics.get("noise_clips", 0), "steps_per_second": metrics.get("steps_per_second"),
                     "thermostat_mean": metrics["final"].get("thermostat_mean")})
    return rows


def budget_row(trace: pd.DataFrame, passes: float) -> pd.Series:
    """The last trace row within the pass budget."""
    return trace[trace.passes <= passes + 1e-9].iloc[-1]


def posterior_samples(paper: PaperFolder, row, budget: int) -> np.ndarray:
    """Kept samples after the budget's steps, per chain (chains, m, d)."""
    theta = load_samples(paper, {"folder": row.folder})
    first = budget // row.thin  # kept sample k is the state after (k + 1)·thin steps (burn-in 0)
    return theta[:, first:]


def compare(chains: np.ndarray, reference) -> dict:
    """Distances of a method's posterior mean and covariance (all chains pooled) from the reference, and the
    RMS z that the pooled mean's sampling error alone would give (from the spread of the chains' means:
    √(mean_i s²_between,i / (chains · σ_i²))): a distance well above it is bias or unfinished relaxation."""
    samples = chains.reshape(-1, chains.shape[-1])
    mean, covariance = samples.mean(axis=0), np.cov(samples.T)
    sd = np.sqrt(np.diag(reference.covariance))
    chain_means = chains.mean(axis=1)
    sampling = (float(np.sqrt(np.mean(chain_means.var(axis=0, ddof=1) / chain_means.shape[0] / sd**2)))
                if chains.shape[0] > 1 else float("nan"))
    i, j = COORDINATES
    return {"mean_rms_z": float(np.sqrt(np.mean(((mean - reference.mean) / sd) ** 2))),
            "sampling_rms_z": sampling,
            "w25_distance": float(np.hypot(mean[i] - reference.mean[i], mean[j] - reference.mean[j])),
            "w2_mean": float(mean[i]), "w5_mean": float(mean[j]),
            "covariance_relative_error": float(np.linalg.norm(covariance - reference.covariance) / np.linalg.norm(reference.covariance)),
            "n_posterior_samples": int(samples.shape[0])}


def ellipse(ax, mean, covariance, **style) -> None:
    values, vectors = np.linalg.eigh(covariance)
    angle = math.degrees(math.atan2(vectors[1, 1], vectors[0, 1]))
    width, height = 2 * np.sqrt(CHI2_95 * values[::-1])
    ax.add_patch(Ellipse(mean, width, height, angle=angle, fill=False, **style))


def draw(rows: pd.DataFrame, traces: dict, posterior: dict, reference, passes_for: dict, path: Path) -> None:
    step_sizes = sorted(rows.h.unique())
    fig, axes = plt.subplots(2, len(step_sizes), figsize=(5.2 * len(step_sizes), 9.2), squeeze=False)
    for column, h in enumerate(step_sizes):
        ax = axes[0, column]
        for key, trace in traces.items():
            method, kh, a = key
            if kh != h:
                continue
            shown = trace[trace.passes <= passes_for[h] + 1e-9]
            ax.plot(shown.passes, shown.test_log_likelihood, color=COLORS[method], ls="-" if a == 10 else "--",
                    lw=1.3, label=f"{method}, A = {a:g}")
        ax.set_xlim(0, passes_for[h])
        ax.set_xlabel("passes over the data")
        ax.set_ylabel("test log-likelihood (sum over 2,037)")
        ax.set_title(f"h = {h * 1e4:g}×10⁻⁴", fontsize=10)
        ax.legend(fontsize=7.5, loc="lower right")
        ax = axes[1, column]
        i, j = COORDINATES
        if reference is not None:
            ax.plot(*reference.mean[[i, j]], "k*", ms=12, label="HMC reference mean", zorder=5)
            ellipse(ax, reference.mean[[i, j]], reference.covariance[np.ix_([i, j], [i, j])], color="k", ls=":", lw=1.5)
        for (method, kh), samples in posterior.items():
            if kh != h:
                continue
            pair = samples[:, [i, j]]
            shown = pair[:: max(1, pair.shape[0] // 1500)]
            ax.scatter(shown[:, 0], shown[:, 1], s=2, alpha=0.25, color=COLORS[method])
            ellipse(ax, pair.mean(axis=0), np.cov(pair.T), color=COLORS[method], lw=1.5)
            ax.plot(*pair.mean(axis=0), "o", color=COLORS[method], mec="k", ms=6, label=f"{method} mean (A = 10)")
        ax.set_xlabel("w₂")
        ax.set_ylabel("w₅")
        title = "95% ellipses after the pass budget" if reference is not None else "reference missing: make reference-logistic"
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("Shang et al. 2015 Fig. 2: logistic regression, MNIST 7 vs 9 (projection to 100 dims); "
                 "mean over chains", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def summarise(rows: pd.DataFrame, paper: PaperFolder, reference, smoke: bool):
    """Per run: the test log-likelihood/accuracy at the pass budget (mean and sd over chains), and for
    A = 10 the distances from the reference; plus the traces and posterior samples for the figure."""
    passes_for = {h: (SMOKE_PASSES if smoke else passes) for passes, hs in PASS_BUDGETS.items() for h in hs}
    traces, posterior, table = {}, {}, []
    for row in rows.itertuples():
        if row.status != "completed":
            table.append({"method": row.method, "h": row.h, "A": row.A, "status": row.status})
            continue
        trace = pd.read_csv(paper.path / row.folder / "trace.csv")
        traces[(row.method, row.h, row.A)] = trace
        at_budget = budget_row(trace, passes_for[row.h])
        entry = {"method": row.method, "h": row.h, "A": row.A, "status": row.status, "passes": at_budget.passes,
                 "test_log_likelihood": at_budget.test_log_likelihood,
                 "test_log_likelihood_sd": at_budget.test_log_likelihood_sd, "n_chains": row.n_chains,
                 "test_accuracy": at_budget.test_accuracy,
                 "noise_clips": row.noise_clips, "steps_per_second": row.steps_per_second}
        if row.A == 10:
            chains = posterior_samples(paper, row, budget_steps(passes_for[row.h]))
            posterior[(row.method, row.h)] = chains.reshape(-1, chains.shape[-1])
            if reference is not None and chains.shape[1] > 1:
                entry.update(compare(chains, reference))
        table.append(entry)
    order = {name: k for k, name in enumerate(METHODS.values())}
    table = pd.DataFrame(table).sort_values(["h", "A", "method"], key=lambda c: c.map(order) if c.name == "method" else c)
    return table, traces, posterior, passes_for


def verdicts(table: pd.DataFrame, reference) -> str:
    lines = ["Measured (from the table above):"]
    counts = {"above": 0, "tie": 0, "below": 0}
    cells = []
    for (h, a), cell in table[table.status == "completed"].groupby(["h", "A"]):
        runs = cell.set_index("method")
        if "CCAdL" not in runs.index:
            continue
        ccadl = runs.loc["CCAdL"]
        for other in ("SGHMC", "SGNHT"):
            if other not in runs.index:
                continue
            theirs = runs.loc[other]
            result = compare_means(ccadl.test_log_likelihood, ccadl.test_log_likelihood_sd, ccadl.n_chains,
                                   theirs.test_log_likelihood, theirs.test_log_likelihood_sd, theirs.n_chains)
            counts[result.verdict] += 1
            cells.append(f"h={h:g}, A={a:g}: " + result.sentence("CCAdL", other, digits=3))
    lines.append(f"- test log-likelihood at the pass budget, CCAdL against SGHMC and SGNHT (verdicts over the chains of "
                 f"each run, SPEC §4.15; higher is better): above in {counts['above']}, tie in {counts['tie']}, below in "
                 f"{counts['below']} of {sum(counts.values())} pairs.")
    lines += [f"  - {cell}" for cell in cells]
    if reference is not None and "mean_rms_z" in table:
        part = table[table.A == 10]
        posterior = part.pivot_table(index="h", columns="method", values="mean_rms_z")
        error = part.pivot_table(index="h", columns="method", values="sampling_rms_z")
        closest = int((posterior.idxmin(axis=1) == "CCAdL").sum())
        cells = "; ".join(f"h={h:g}: " + ", ".join(f"{m} {v:.2f} (sampling error alone {error.loc[h, m]:.2f})"
                                                     for m, v in row.items()) for h, row in posterior.iterrows())
        lines.append(f"- posterior mean closest to the HMC reference (RMS over the 100 coordinates of (mean − reference)/"
                     f"reference sd, A = 10; beside it the RMS the pooled mean's sampling error alone would give, from "
                     f"the spread of the chains' means): CCAdL's is the smallest at {closest} of {len(posterior)} step sizes, one "
                     f"value per run, so no verdict: read each against its sampling-error RMS ({cells}).")
        pair = part.pivot_table(index="h", columns="method", values="w25_distance")
        lines.append("- distance of the (w₂, w₅) mean from the reference's (the bottom row): " + "; ".join(
            f"h={h:g}: " + ", ".join(f"{m} {v:.3f}" for m, v in row.items()) for h, row in pair.iterrows()) + ".")
        lines.append(f"- HMC reference mean of (w₂, w₅): ({reference.mean[COORDINATES[0]]:.4f}, {reference.mean[COORDINATES[1]]:.4f}), "
                     f"max split R-hat {reference.rhat.max():.4f}, min bulk ESS {reference.ess.min():.0f} ({reference.folder}).")
    else:
        lines.append("- no HMC reference posterior: run `make reference-logistic` for the bottom row's comparison.")
    return "\n".join(lines)


NOTES = """
Settings (SPEC E5, §4.9): MNIST 7 vs 9, 12,214 training / 2,037 test images, pixels/255, scikit-learn
Gaussian random projection 784 → 100 (seed 0), no intercept, labels 7 → +1 / 9 → −1, prior N(0, I),
minibatch n = 500 without replacement, θ₀ ~ N(0, 0.01²I), 4 chains per run; [C]'s θ-first splitting;
SGHMC and CCAdL with the running full 100×100 Î scaled by Eq. 17's N²/n (SGHMC's injected covariance clipped
at 0, counted), SGNHT with no estimate. Test log-likelihood: Σ_test log σ(y w̄ᵀx) of each chain's running
mean w̄ from the first step (SPEC §3), mean over chains (sd in the table). The bottom row uses the A = 10
runs' samples after the pass budget (thinned by 10); [C] used 10⁶ samples, we use 4 chains × 5×10⁴
steps = 2×10⁵ (2×10⁴ kept) per method and step size to stay within this machine's budget.

The location of (w₂, w₅) depends on the random projection matrix, which [C] do not give: their axes
(w₂ ∈ [0.030, 0.055], w₅ ∈ [−0.005, 0.015]) and ours cannot be compared, only each method's distance
from the HMC reference on the same projection.
"""


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, reference=("results/reference", "folder of the HMC reference posteriors"),
                      summarise=("", "rebuild summary and figure of an existing ccadl-fig2 folder (no new runs)"))
    first_written = None
    if args.summarise:
        paper = PaperFolder(FIGURE_ID, Path(args.summarise))
        first_written = read_json(paper.path / "provenance.json") if (paper.path / "provenance.json").is_file() else None
        first_written = (first_written or {}).get("settings", {}).get("first_written") or first_written  # the sweep's own
        rows = []
        for sweep in sweeps(args.smoke):
            rows += collect(paper, sweep, sorted(p for p in (paper.runs_dir / sweep).iterdir() if p.is_dir()))
    else:
        paper = PaperFolder.create(FIGURE_ID, args.root)
        print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
        rows = []
        for sweep, overrides in sweeps(args.smoke).items():
            extra = SMOKE if args.smoke else ()
            rows += collect(paper, sweep, multirun(paper, "ccadl_fig2", sweep, overrides, args.jobs, extra))
    try:
        reference = load_reference(reference_name(0), args.reference, make_target="reference-logistic")
    except ReferenceMissing as error:
        print(f"warning: {error}", file=sys.stderr)
        reference = None
    rows = pd.DataFrame(rows)
    failed = rows[rows.status != "completed"]
    if len(failed):
        print(f"warning: {len(failed)} runs did not complete: {', '.join(failed.folder)}", file=sys.stderr)
    table, traces, posterior, passes_for = summarise(rows, paper, reference, args.smoke)
    draw(rows, traces, posterior, reference, passes_for, paper.path / "fig2_logistic.png")
    body = ("## Test log-likelihood at the pass budget, and distances from the HMC reference (A = 10)\n\n"
            + table.to_markdown(index=False, floatfmt=".4g") + "\n\n" + verdicts(table, reference) + "\n")
    paper.write_summary(table, "Shang et al. (2015) Fig. 2: Bayesian logistic regression on MNIST 7 vs 9", NOTES, body=body)
    paper.finish({"smoke": args.smoke, "sweeps": sweeps(args.smoke), "jobs": args.jobs, "summarised_only": bool(args.summarise),
                  "first_written": first_written,
                  "reference": None if reference is None else str(reference.folder)}, sys.argv)
    print(paper.path)


if __name__ == "__main__":
    main()
