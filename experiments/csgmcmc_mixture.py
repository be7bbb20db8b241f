"""Zhang, Li, Zhang, Chen & Wilson (ICLR 2020) Fig. 2 (SPEC §6): SGLD against cyclical SGLD on the mixture of 25
Gaussians, in the parallel setting of 4 chains × 50,000 samples; how many of the 25 modes each finds. The paper: "SGLD
has only discovered 4 of the 25 modes, while cSGLD has fully explored the distribution".

Every run is ``python run.py target=gaussian_mixture_25 target.start=uniform sampler=sgld ...`` with the settings of
the authors' code (ruqizhang/csgmcmc, experiments/mog25.m, sgld.m, csgld.m; :data:`AUTHORS` says where each comes from)
and seeds 0, 1, …; three methods:

- ``SGLD``: ε = 0.043 for 500 steps, then 0.043 (t − 500)^−0.55 (``schedule=polynomial``, b = 1, ``delay`` 500);
- ``cSGLD``: Eq. 1, ε₀ = 0.07, 30 cycles, Algorithm 1's exploration phase: the first 50 steps of each 1667-step cycle
  are gradient steps without injected noise, not kept (``schedule.exploration``);
- ``cSGLD (mog25.m)``: as the authors' csgld.m ran it: the noise stays on in those 50 steps, which are only discarded
  (the run keeps every step; the 50 are dropped here).

Modes found: mode k counts as found when at least :data:`FOUND_SHARE` of the samples it should hold (1/25 of the kept
samples, pooled over the 4 chains) lie within :data:`RADIUS` of its centre; "visited" counts the modes with at least
one. Writes ``fig_mixture.png`` (pooled samples of seed 0 for each method over the mixture's contours, as the paper's
Fig. 2), ``fig_mode_counts.png``, ``summary.csv`` / ``summary.md`` (modes per seed, mean ± sd, the published counts,
the verdict from the seed spread) under ``results/paper/csgmcmc-mixture/<run-id>/``.

    python -m experiments.csgmcmc_mixture [--smoke] [--root results/paper] [--jobs 2] [--seeds 0,1,2,3,4]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm
import pandas as pd

from experiments.common import integers, load_samples, parse_args, run_settings, setting
from sgmcmc.diagnostics.comparison import compare
from sgmcmc.paper import PaperFolder
from sgmcmc.targets import make_target
from sgmcmc.targets.gaussian_mixture_25 import CENTRES, VARIANCE

FIGURE_ID = "csgmcmc-mixture"
# the authors' settings and where each is (ruqizhang/csgmcmc, experiments/)
AUTHORS = {
    "mixture": "25 Gaussians N((2i, 2j), 0.03 I), i, j = -2..2, weights 0.04 (mog25.m: center, rho, p)",
    "gradient noise": "N(0, I) added to the exact gradient, V = 1 (mog25.m: gradUNoise, V = 1)",
    "injected noise": "N(0, 2 eps (1 - V eps / 2)) = N(0, eps (2 - eps V)) (sgld.m, csgld.m: beta, sigma)",
    "start": "uniform on [-10, 10]^2 (mog25.m: x0 = -10 + 20 rand(2,1)); one chain there, 4 here, each its own start",
    "steps": "50,000 per chain (mog25.m: L); SGLD keeps every step (sgld.m)",
    "SGLD schedule": "0.043 for t <= 500, then 0.043 (t - 500)^-0.55 (mog25.m: etaSGLD; sgld.m: a, b = 0, gamma, iter)",
    "cSGLD schedule": "eps0/2 [cos(pi mod(t-1, L/M)/(L/M)) + 1], eps0 = 0.07, M = 30 cycles (mog25.m: etacSGLD, M; "
                      "csgld.m); L/M = 1666.7 there, ceil = 1667 here",
    "cSGLD kept": "steps with mod(t-1, L/M) + 1 > 50 (csgld.m), the noise on in all steps; Algorithm 1 turns it off in "
                  "the exploration steps (run here as cSGLD, the authors' code as cSGLD (mog25.m))",
}
N_STEPS, N_CHAINS, N_CYCLES = 50_000, 4, 30
SGLD_STEP, SGLD_DELAY, SGLD_GAMMA = 0.043, 500, 0.55
CSGLD_STEP, DISCARDED = 0.07, 50  # ε₀ and the steps at the start of each cycle that are not kept
RADIUS = 3.0 * math.sqrt(VARIANCE)  # 3σ = 0.52 (half the spacing is 1): 1 − e^{−9/2} = 98.9% of a mode's mass
FOUND_SHARE = 0.1  # found: at least a tenth of the samples the mode should hold (1/25 of them) within RADIUS
PUBLISHED = {"SGLD": 4, "cSGLD": 25}  # the paper's Fig. 2 text (SPEC §6)
METHODS = ("SGLD", "cSGLD", "cSGLD (mog25.m)")
COLORS = {"SGLD": "tab:blue", "cSGLD": "tab:red", "cSGLD (mog25.m)": "tab:orange"}
# --smoke (CI): 2 chains × 1,500 steps, 3 cycles, seeds 0 and 1
SMOKE = dict(n_steps=1500, n_chains=2, n_cycles=3, seeds=[0, 1])


def cycle_length(n_steps: int, n_cycles: int) -> int:
    return math.ceil(n_steps / n_cycles)


def exploration_fraction(n_steps: int, n_cycles: int) -> float:
    """β whose exploration phase is the first :data:`DISCARDED` steps of each cycle: r = p/L < β for p < 50 only."""
    return (DISCARDED - 0.5) / cycle_length(n_steps, n_cycles)


def settings(seeds: list[int], n_steps: int, n_chains: int, n_cycles: int) -> list:
    common = ["target=gaussian_mixture_25", "target.start=uniform", "target.initial_range=10.0",
              "target.noise_variance=1.0", "sampler=sgld", "sampler.noise_estimate=known", "sampler.integrator=euler",
              f"run.n_steps={n_steps}", f"run.n_chains={n_chains}", "run.burn_in=0", "run.thin=1",
              f"run.eval_every={max(1, n_steps // 10)}", "run.ksd_points=0", "run.figures=false"]
    sgld = ["schedule=polynomial", f"sampler.step_size={SGLD_STEP}", "schedule.b=1.0", f"schedule.gamma={SGLD_GAMMA}",
            f"schedule.delay={SGLD_DELAY}"]
    cyclical = ["schedule=cyclical", f"sampler.step_size={CSGLD_STEP}", f"schedule.n_cycles={n_cycles}"]
    explore = [f"schedule.exploration={exploration_fraction(n_steps, n_cycles)}"]
    methods = {"SGLD": sgld, "cSGLD": cyclical + explore, "cSGLD (mog25.m)": cyclical + ["schedule.exploration=0.0"]}
    return [setting([*common, *methods[method], f"seed={seed}"], method=method, seed=seed)
            for method in METHODS for seed in seeds]


def kept_samples(theta: np.ndarray, method: str, n_steps: int, n_cycles: int) -> np.ndarray:
    """The samples (c, n, 2) the method keeps: all of a run's, except for cSGLD (mog25.m), whose run kept every step
    and whose first :data:`DISCARDED` steps of each cycle are dropped here (csgld.m)."""
    if method != "cSGLD (mog25.m)":
        return theta
    steps = np.arange(theta.shape[1])  # kept sample i is the state after step i + 1, made with ε_i
    return theta[:, steps % cycle_length(n_steps, n_cycles) >= DISCARDED]


def mode_counts(samples: np.ndarray) -> tuple[np.ndarray, int, int]:
    """Samples (n, 2) within :data:`RADIUS` of each centre (25,), the modes found and the modes visited."""
    distances = np.linalg.norm(samples[:, None, :] - CENTRES[None], axis=2)
    counts = (distances < RADIUS).sum(axis=0)
    needed = FOUND_SHARE * samples.shape[0] / len(CENTRES)
    return counts, int((counts >= needed).sum()), int((counts > 0).sum())


def draw_samples(samples: dict, path: Path) -> None:
    """Each method's pooled samples of one seed as a 2D histogram (log colour scale: a mode with few samples still
    shows) over the mixture's density contours (Fig. 2)."""
    target = make_target("gaussian_mixture_25")
    grid = np.linspace(-6, 6, 241)
    x, y = np.meshgrid(grid, grid)
    density = np.exp(target.log_density(np.column_stack([x.ravel(), y.ravel()]))).reshape(x.shape)
    figure, axes = plt.subplots(1, len(samples) + 1, figsize=(4.2 * (len(samples) + 1), 4.4))
    axes[0].contourf(x, y, density, levels=30, cmap="Blues")
    axes[0].set_title("the mixture (exact density)")
    for axis, (title, points) in zip(axes[1:], samples.items()):
        axis.hist2d(points[:, 0], points[:, 1], bins=120, range=[[-6, 6], [-6, 6]], cmap="viridis", norm=LogNorm(),
                    cmin=1)
        axis.contour(x, y, density, levels=[density.max() * 0.05], colors="black", linewidths=0.4)
        axis.set_title(title, fontsize=9)
    for axis in axes:
        axis.set_xlim(-6, 6)
        axis.set_ylim(-6, 6)
        axis.set_aspect("equal")
    figure.suptitle("Zhang et al. (2020) Fig. 2: 25 Gaussians, pooled samples of the chains, counts per bin on a log "
                    "scale (black: each mode's 5% density contour)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def draw_counts(rows: pd.DataFrame, path: Path) -> None:
    """Modes found per seed for each method, with the published counts."""
    figure, axis = plt.subplots(figsize=(6, 3.6))
    for index, method in enumerate(METHODS):
        part = rows[rows.method == method]
        axis.scatter(np.full(len(part), index) + np.linspace(-0.15, 0.15, max(len(part), 1))[: len(part)],
                     part.modes_found, color=COLORS[method], label=f"{method} (per seed)")
        if method in PUBLISHED:
            axis.scatter([index], [PUBLISHED[method]], marker="x", color="black", s=60,
                         label="published" if index == 0 else None)
    axis.set_xticks(range(len(METHODS)), METHODS)
    axis.set_ylim(0, 26)
    axis.set_ylabel("modes found (of 25)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def summarise(paper: PaperFolder, results, n_steps: int, n_cycles: int) -> tuple[pd.DataFrame, dict]:
    """One row per run (modes found and visited, kept samples, KL) and seed 0's samples per method."""
    rows, pictures = [], {}
    for (item, metrics), run in zip(results, paper.runs):
        labels = item.label_dict
        theta = kept_samples(load_samples(paper, run), labels["method"], n_steps, n_cycles)
        pooled = theta.reshape(-1, 2)
        _, found, visited = mode_counts(pooled)
        rows.append({**labels, "status": metrics.get("status"), "kept_per_chain": theta.shape[1],
                     "modes_found": found, "modes_visited": visited,
                     "published": PUBLISHED.get(labels["method"])})
        if labels["seed"] == results[0][0].label_dict["seed"]:
            pictures[f"{labels['method']}, seed {labels['seed']}: {found} modes found"] = pooled
    return pd.DataFrame(rows), pictures


def verdicts(rows: pd.DataFrame) -> str:
    values = {method: part.modes_found.to_numpy(dtype=float) for method, part in rows.groupby("method", sort=False)}
    lines = ["Modes found (of 25), mean ± sd over seeds, beside the paper's:"]
    for method, found in values.items():
        spread = found.std(ddof=1) if found.size > 1 else math.nan
        published = f"; published {PUBLISHED[method]}" if method in PUBLISHED else ""
        lines.append(f"- {method}: {found.mean():.1f} ± {spread:.1f} ({found.size} seeds{published})")
    lines += ["", "Comparisons (\"above\" only past 2 combined standard errors over seeds, else tie; SPEC §4.15):"]
    for first, second in (("cSGLD", "SGLD"), ("cSGLD (mog25.m)", "SGLD"), ("cSGLD", "cSGLD (mog25.m)")):
        if first in values and second in values:
            lines.append(f"- {compare(values[first], values[second]).sentence(first, second, digits=2)}")
    return "\n".join(lines)


def notes(n_steps: int, n_chains: int, n_cycles: int) -> str:
    authors = "\n".join(f"- {name}: {text}" for name, text in AUTHORS.items())
    length = cycle_length(n_steps, n_cycles)
    return f"""
Run here: {n_chains} chains × {n_steps} steps per seed, each chain from its own uniform start on [−10, 10]²; cycles of
{length} steps; cSGLD's exploration β = {exploration_fraction(n_steps, n_cycles):.6f}, i.e. the first {DISCARDED} steps of
each cycle; SGLD's noise estimate V̂ = V = 1 (``noise_estimate=known``), as the authors' σ. A mode is found when at
least {FOUND_SHARE:g} of the samples it should hold (1/25 of the pooled kept samples) lie within {RADIUS:.3f} (3σ) of
its centre: a tenth of its mass is a clear peak of the sample density, while a chain that only passes through
leaves a few samples (those count as "visited"). The authors' code has no count: the paper's "4 of 25" is read off
its density plot.

The authors' settings (ruqizhang/csgmcmc, experiments/):
{authors}
"""


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, seeds=("0,1,2,3,4", "seeds of every method"))
    smoke = SMOKE if args.smoke else None
    n_steps = smoke["n_steps"] if smoke else N_STEPS
    n_chains = smoke["n_chains"] if smoke else N_CHAINS
    n_cycles = smoke["n_cycles"] if smoke else N_CYCLES
    seeds = smoke["seeds"] if smoke else integers("seeds", args.seeds)
    if len(set(seeds)) < 2 and not smoke:
        print(f"error: --seeds={args.seeds!r}: at least two seeds (the verdict needs a spread)", file=sys.stderr)
        sys.exit(2)
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    results = run_settings(paper, settings(seeds, n_steps, n_chains, n_cycles), args.jobs)
    rows, pictures = summarise(paper, results, n_steps, n_cycles)
    draw_samples(pictures, paper.path / "fig_mixture.png")
    draw_counts(rows, paper.path / "fig_mode_counts.png")
    text = verdicts(rows)
    body = rows.to_markdown(index=False) + "\n\n" + text
    paper.write_summary(rows, "Zhang et al. (2020) Fig. 2: SGLD and cSGLD on 25 Gaussians, modes found",
                        notes(n_steps, n_chains, n_cycles), body=body)
    paper.finish({"smoke": args.smoke, "seeds": seeds, "n_steps": n_steps, "n_chains": n_chains, "n_cycles": n_cycles,
                  "radius": RADIUS, "found_share": FOUND_SHARE, "jobs": args.jobs, "authors": AUTHORS}, sys.argv)
    print(text)
    print(paper.path)


if __name__ == "__main__":
    main()
