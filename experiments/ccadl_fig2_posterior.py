"""Shang et al. (2015) Fig. 2, bottom row, with long chains (SPEC E5: 10⁶ post-burn-in samples): at
h = 10⁻⁴ and A = 10, SGHMC, SGNHT and CCAdL run 2 chains of 10⁶ steps each after the 300-pass burn-in,
and each method's posterior mean and covariance are compared with the full-data HMC reference, beside
the distance that the pooled mean's sampling error alone would give.

One Hydra multirun (joblib when ``--jobs`` > 1) into ``results/paper/ccadl-fig2-posterior/<run-id>/``:
``posterior_w2_w5.png``, ``summary.csv``, ``summary.md``.

    python -m experiments.ccadl_fig2_posterior [--smoke] [--root results/paper] [--jobs 2]
"""

from __future__ import annotations

import sys

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.ccadl_fig2 import COLORS, COORDINATES, SAMPLER_CONFIGS, budget_steps, collect, compare, ellipse, posterior_samples
from experiments.common import multirun, parse_args
from experiments.reference_logistic import reference_name
from sgmcmc.paper import PaperFolder
from sgmcmc.reference import load_reference

FIGURE_ID = "ccadl-fig2-posterior"
STEP_SIZE, DIFFUSION, PASSES = 1e-4, 10, 300
POSTERIOR_STEPS, THIN, CHAINS = 1_000_000, 100, 2
SMOKE_PASSES, SMOKE_STEPS = 4, 200


def overrides(smoke: bool) -> list:
    passes, steps = (SMOKE_PASSES, SMOKE_STEPS) if smoke else (PASSES, POSTERIOR_STEPS)
    return [f"sampler={','.join(SAMPLER_CONFIGS)}", f"vars.h={STEP_SIZE}", f"vars.A={DIFFUSION}",
            f"run.n_steps={budget_steps(passes) + steps}", f"run.n_chains={CHAINS}", f"run.thin={1 if smoke else THIN}",
            f"run.eval_every={10 if smoke else 10_000}"]


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, reference=("results/reference", "folder of the HMC reference posteriors"))
    reference = load_reference(reference_name(0), args.reference, make_target="reference-logistic")
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    rows = pd.DataFrame(collect(paper, "posterior", multirun(paper, "ccadl_fig2", "posterior", overrides(args.smoke), args.jobs)))
    budget = budget_steps(SMOKE_PASSES if args.smoke else PASSES)
    table, fig = [], plt.figure(figsize=(6.4, 5.6))
    ax = fig.gca()
    i, j = COORDINATES
    ax.plot(*reference.mean[[i, j]], "k*", ms=13, label="HMC reference mean", zorder=5)
    ellipse(ax, reference.mean[[i, j]], reference.covariance[np.ix_([i, j], [i, j])], color="k", ls=":", lw=1.5)
    for row in rows.itertuples():
        chains = posterior_samples(paper, row, budget)
        table.append({"method": row.method, "h": row.h, "A": row.A, "status": row.status, "chains": chains.shape[0],
                      "steps_per_chain": chains.shape[1] * row.thin, **compare(chains, reference)})
        pair = chains.reshape(-1, chains.shape[-1])[:, [i, j]]
        ellipse(ax, pair.mean(axis=0), np.cov(pair.T), color=COLORS[row.method], lw=1.5)
        ax.plot(*pair.mean(axis=0), "o", color=COLORS[row.method], mec="k", ms=7, label=f"{row.method} mean")
    ax.set_xlabel("w₂")
    ax.set_ylabel("w₅")
    ax.set_title(f"h = {STEP_SIZE:g}, A = {DIFFUSION}: {CHAINS} chains × {POSTERIOR_STEPS:,} steps after the burn-in; "
                 "95% ellipses", fontsize=8)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(paper.path / "posterior_w2_w5.png", dpi=110)
    plt.close(fig)
    table = pd.DataFrame(table)
    best = table.loc[table.mean_rms_z.idxmin()]
    verdict = (f"Measured: closest posterior mean (RMS z over the 100 coordinates): {best.method} "
               f"({best.mean_rms_z:.3f}); " + ", ".join(f"{m} {z:.3f} (sampling error alone {e:.3f})" for m, z, e in
                                                        zip(table.method, table.mean_rms_z, table.sampling_rms_z)) + ".")
    paper.write_summary(table, "Shang et al. (2015) Fig. 2 bottom row with long chains",
                        "Reference: " + str(reference.folder), body=table.to_markdown(index=False, floatfmt=".4g") + "\n\n" + verdict)
    paper.finish({"smoke": args.smoke, "overrides": overrides(args.smoke), "reference": str(reference.folder)}, sys.argv)
    print(verdict)
    print(paper.path)


if __name__ == "__main__":
    main()
