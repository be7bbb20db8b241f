"""Shang et al. (2015) Fig. 2, bottom row, with long chains (SPEC E5: 10⁶ post-burn-in samples): at
A = 10 and each given step size (default h = 10⁻⁴), SGHMC, SGNHT and CCAdL run 2 chains of ``--steps``
steps each (default 10⁶) after [C]'s pass budget as burn-in, and each method's posterior mean and
covariance are compared with the full-data HMC reference, beside the distance that the pooled mean's
sampling error alone would give.

One sweep, run through the Python API (``--jobs`` processes), into ``results/paper/ccadl-fig2-posterior/<run-id>/``:
``posterior_w2_w5.png`` (one panel per step size), ``summary.csv``, ``summary.md``.

    python -m experiments.ccadl_fig2_posterior [--smoke] [--root results/paper] [--jobs 2]
        [--step-sizes 1e-4[,5e-5,2e-5]] [--steps 1000000]
    python -m experiments.ccadl_fig2_posterior --summarise results/paper/ccadl-fig2-posterior/<run-id>
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.ccadl_fig2 import COLORS, COORDINATES, PASS_BUDGETS, SAMPLER_CONFIGS, budget_steps, collect, compare, ellipse, posterior_samples
from experiments.common import multirun, parse_args
from experiments.reference_logistic import reference_name
from sgmcmc.paper import PaperFolder
from sgmcmc.reference import load_reference

FIGURE_ID = "ccadl-fig2-posterior"
DIFFUSION, THIN, CHAINS = 10, 100, 2
STEP_SIZES, POSTERIOR_STEPS = "0.0001", "1000000"
# --smoke (CI): 1 pass of burn-in (25 steps) and 20 kept steps per chain: every sampler and step size, the posterior
# comparison and the ellipses (2 chains × 20 samples) on the smallest run that has them
SMOKE_PASSES, SMOKE_STEPS = 1, 20


def pass_budget(step_size: float) -> int:
    """[C]'s pass budget for h (SPEC E5): 600 passes at h = 0.2·10⁻⁴, 300 otherwise."""
    return next(passes for passes, sizes in PASS_BUDGETS.items() if any(math.isclose(step_size, h) for h in sizes))


def parse_step_sizes(text: str) -> list[float]:
    allowed = sorted(h for sizes in PASS_BUDGETS.values() for h in sizes)
    values = [float(value) for value in text.split(",")]
    for value in values:
        if not any(math.isclose(value, h) for h in allowed):
            raise SystemExit(f"--step-sizes: {value:g} is not one of [C]'s step sizes {', '.join(map(str, allowed))}")
    return values


def overrides(step_sizes: list[float], posterior_steps: int, smoke: bool) -> list:
    """One sweep over the samplers and step sizes; every run gets the largest budget of the step sizes as
    burn-in (more burn-in than [C] for the others), then ``posterior_steps`` steps."""
    passes, steps = (SMOKE_PASSES, SMOKE_STEPS) if smoke else (max(map(pass_budget, step_sizes)), posterior_steps)
    return [f"sampler={','.join(SAMPLER_CONFIGS)}", f"vars.h={','.join(map(str, step_sizes))}", f"vars.A={DIFFUSION}",
            f"run.n_steps={budget_steps(passes) + steps}", f"run.n_chains={CHAINS}", f"run.thin={1 if smoke else THIN}",
            f"run.eval_every={10 if smoke else 10_000}"]


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, reference=("results/reference", "folder of the HMC reference posteriors"),
                      step_sizes=(STEP_SIZES, "comma-separated step sizes h of [C] Fig. 2"),
                      steps=(POSTERIOR_STEPS, "steps per chain after the burn-in"),
                      summarise=("", "rebuild summary.md of an existing ccadl-fig2-posterior folder (no new runs)"))
    step_sizes, posterior_steps = parse_step_sizes(args.step_sizes), int(args.steps)
    reference = load_reference(reference_name(0), args.reference, make_target="reference-logistic")
    if args.summarise:
        resummarise(args.summarise, reference)
        return
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    sweep = overrides(step_sizes, posterior_steps, args.smoke)
    rows = pd.DataFrame(collect(paper, "posterior", multirun(paper, "ccadl_fig2", "posterior", sweep, args.jobs)))
    budget = budget_steps(SMOKE_PASSES if args.smoke else max(map(pass_budget, step_sizes)))
    i, j = COORDINATES
    fig, axes = plt.subplots(1, len(step_sizes), figsize=(6.0 * len(step_sizes), 5.4), squeeze=False)
    panels = {h: ax for h, ax in zip(step_sizes, axes[0])}
    for h, ax in panels.items():
        ax.plot(*reference.mean[[i, j]], "k*", ms=13, label="HMC reference mean", zorder=5)
        ellipse(ax, reference.mean[[i, j]], reference.covariance[np.ix_([i, j], [i, j])], color="k", ls=":", lw=1.5)
    table = []
    for row in rows.sort_values(["h", "method"]).itertuples():
        chains = posterior_samples(paper, row, budget)
        table.append({"method": row.method, "h": row.h, "A": row.A, "status": row.status, "chains": chains.shape[0],
                      "steps_per_chain": chains.shape[1] * row.thin, **compare(chains, reference)})
        ax = next(a for h, a in panels.items() if math.isclose(h, row.h))
        pair = chains.reshape(-1, chains.shape[-1])[:, [i, j]]
        ellipse(ax, pair.mean(axis=0), np.cov(pair.T), color=COLORS[row.method], lw=1.5)
        ax.plot(*pair.mean(axis=0), "o", color=COLORS[row.method], mec="k", ms=7, label=f"{row.method} mean")
    for h, ax in panels.items():
        ax.set_xlabel("w₂")
        ax.set_ylabel("w₅")
        ax.set_title(f"h = {h:g}, A = {DIFFUSION}: {CHAINS} chains × {table[0]['steps_per_chain']:,} steps after the "
                     "burn-in; 95% ellipses", fontsize=8)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(paper.path / "posterior_w2_w5.png", dpi=110)
    plt.close(fig)
    table = pd.DataFrame(table)
    verdict = write_summary(paper, table, reference)
    paper.finish({"smoke": args.smoke, "overrides": sweep, "reference": str(reference.folder)}, sys.argv)
    print(verdict)
    print(paper.path)


def write_summary(paper: PaperFolder, table: pd.DataFrame, reference) -> str:
    """summary.csv/summary.md from the per-run table: the distances of each method's posterior mean, listed beside
    the RMS its sampling error alone would give (one value per run: no verdict). Returns the measured lines."""
    verdicts = []
    for h, group in table.groupby("h"):
        best = group.loc[group.mean_rms_z.idxmin()]
        verdicts.append(f"h = {h:g}: smallest RMS z of the posterior mean over the 100 coordinates: {best.method} "
                        f"({best.mean_rms_z:.3f}; one value per run, so no verdict: read each against the RMS its "
                        f"sampling error alone would give); " + ", ".join(
                            f"{m} {z:.3f} (sampling error alone {e:.3f})"
                            for m, z, e in zip(group.method, group.mean_rms_z, group.sampling_rms_z)) + ".")
    verdict = "Measured:\n" + "\n".join(f"- {line}" for line in verdicts)
    paper.write_summary(table, "Shang et al. (2015) Fig. 2 bottom row with long chains",
                        "Reference: " + str(reference.folder), body=table.to_markdown(index=False, floatfmt=".4g") + "\n\n" + verdict)
    return verdict


def resummarise(folder: str, reference) -> None:
    """``--summarise <folder>``: rebuild summary.md from the folder's summary.csv (samples.npz is not committed; the
    figure is kept as it is)."""
    paper = PaperFolder(FIGURE_ID, Path(folder))
    collect(paper, "posterior", sorted(p for p in (paper.runs_dir / "posterior").iterdir() if p.is_dir()))  # the run records
    write_summary(paper, pd.read_csv(paper.path / "summary.csv"), reference)
    paper.finish({"summarised_only": True, "reference": str(reference.folder)}, sys.argv)
    print(paper.path)


if __name__ == "__main__":
    main()
