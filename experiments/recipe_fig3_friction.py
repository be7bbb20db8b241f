"""Why gSGRHMC sits above SGRLD on online LDA (issue 36, point 4; SPEC E3): a measurement at matched step.

On LDA gSGRHMC's friction is G⁻¹ = c·diag(θ) (the expanded-mean metric, SPEC T10, c = 1). A coordinate with
ε·c·θ ≫ 1 is overdamped: its momentum is renewed every step and its ``aboba`` step is a Langevin step of size
h = c·ε²/2 with SGRLD's diffusion θ (``sgmcmc/samplers/momentum_recipe.py``), so there gSGRHMC *is* SGRLD at step h.
A coordinate with ε·c·θ ≲ 1 (a rare word in a topic: θ near β) keeps its momentum across steps. The hypothesis: the
gap is made in those under-damped coordinates. The test: hold the overdamped limit fixed at SGRLD's tuned step
(ε = √(2a/c), a = SGRLD's a from ``make recipe-fig3``) and raise the metric's scale c, which pushes more coordinates
into the overdamped regime (ε·c·θ = √(2ac)·θ). If the hypothesis holds, the perplexity falls towards SGRLD's as c
grows; if the gap stays, the cause lies elsewhere. Beside them: gSGRHMC at ``make recipe-fig3``'s own tuned a (c = 1)
and SGRLD at its a, every setting over the same seeds; the verdicts against SGRLD from the seed spread (SPEC §4.15).
Each run's fraction of coordinates with ε_T·c·θ > 1 at its last kept sample is reported beside it.

Writes ``perplexity.png``, ``summary.csv`` / ``summary.md`` under ``results/paper/recipe-fig3-friction/<run-id>/``.

    python -m experiments.recipe_fig3_friction [--smoke] [--root results/paper] [--jobs 2] [--seeds 1,2,3]
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.common import compose, multirun, parse_args, read_run, record
from experiments.recipe_fig3 import FIGURE_ID as FIG3_ID
from experiments.recipe_fig3 import SMOKE, steps
from sgmcmc.diagnostics.comparison import compare
from sgmcmc.paper import PaperFolder

FIGURE_ID = "recipe-fig3-friction"
COMMITTED = Path(__file__).resolve().parents[1] / "results" / "paper"  # --smoke takes the tuned a from here
SCALES = (1.0, 10.0, 100.0, 1000.0)  # the metric's c, at ε = √(2a/c)
DOCUMENTS = 10_000
SMOKE_SCALES = (1.0, 100.0)


def tuned_steps(root: Path) -> dict:
    """SGRLD's and SGRHMC's a as ``make recipe-fig3`` tuned them (its newest folder's provenance)."""
    latest = root / FIG3_ID / "LATEST"
    if not latest.is_file():
        print(f"error: no {FIG3_ID} folder under {root} to take the tuned a from: run make recipe-fig3 first",
              file=sys.stderr)
        sys.exit(2)
    folder = root / FIG3_ID / latest.read_text().strip()
    settings = json.loads((folder / "provenance.json").read_text())["settings"]
    return {"sgrld": float(settings["step_sizes"]["sgrld"]), "sgrhmc": float(settings["step_sizes"]["sgrhmc"]),
            "folder": str(folder)}


def overdamped_fraction(folder: Path, step_size: float, scale: float, n_steps: int, schedule: dict) -> float:
    """The fraction of coordinates with ε_T·c·θ > 1 at the run's last kept sample (ε_T the schedule's last step)."""
    path = folder / "samples.npz"
    if not path.is_file():
        return math.nan
    theta = np.load(path)["theta"]
    if theta.shape[1] == 0:
        return math.nan
    last = step_size * (1 + (n_steps - 1) / schedule["b"]) ** (-schedule["gamma"])
    return float(np.mean(last * scale * theta[0, -1] > 1.0))


def settings_table(tuned: dict, scales) -> list[dict]:
    """Every setting: SGRLD at its a, gSGRHMC at its own a (c = 1), and gSGRHMC at ε = √(2a/c) for each c."""
    a = tuned["sgrld"]
    rows = [{"label": f"SGRLD, a = {a:g}", "sampler": "sgrld", "a": a, "scale": math.nan},
            {"label": f"gSGRHMC, a = {tuned['sgrhmc']:g} (recipe-fig3's), c = 1", "sampler": "sgrhmc",
             "a": tuned["sgrhmc"], "scale": 1.0}]
    for c in scales:
        step = math.sqrt(2 * a / c)
        rows.append({"label": f"gSGRHMC, c = {c:g}, a = √(2·{a:g}/c) = {step:.3g}", "sampler": "sgrhmc", "a": step,
                     "scale": c})
    return rows


def run_settings(paper: PaperFolder, settings: list[dict], seeds: str, n_steps: int, jobs: int, extra, schedule) -> pd.DataFrame:
    rows = []
    for index, setting in enumerate(settings):
        overrides = [f"sampler={setting['sampler']}", f"sampler.step_size={setting['a']!r}", f"seed={seeds}",
                     f"run.n_steps={n_steps}", *extra]
        if setting["sampler"] == "sgrhmc":
            overrides.append(f"sampler.metric={{name: expanded_mean, scale: {setting['scale']!r}}}")
        for folder in multirun(paper, "recipe_fig3", f"setting{index}", overrides, jobs):
            config, status = read_run(folder)
            record(paper, folder, status, {"setting": setting["label"], "seed": int(config["seed"])})
            trace = pd.read_csv(folder / "trace.csv") if (folder / "trace.csv").is_file() else pd.DataFrame()
            scale = 1.0 if math.isnan(setting["scale"]) else setting["scale"]
            rows.append({**setting, "seed": int(config["seed"]), "status": status,
                         "folder": str(folder.relative_to(paper.path)),
                         "perplexity": float(trace.perplexity.dropna().iloc[-1]) if "perplexity" in trace else math.nan,
                         "overdamped_fraction": overdamped_fraction(folder, setting["a"], scale, n_steps, schedule)})
    return pd.DataFrame(rows)


def draw(paper: PaperFolder, rows: pd.DataFrame, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 5))
    for label, part in rows[rows.status == "completed"].groupby("label", sort=False):
        traces = [pd.read_csv(paper.path / folder / "trace.csv").dropna(subset=["perplexity"]) for folder in part.folder]
        length = min(len(trace) for trace in traces)
        values = np.array([trace.perplexity.to_numpy()[:length] for trace in traces])
        ax.plot(traces[0].documents.to_numpy()[:length], values.mean(axis=0), lw=1.5,
                ls="--" if label.startswith("SGRLD") else "-", label=f"{label} ({len(values)} seeds)")
    ax.set_xlabel("documents seen")
    ax.set_ylabel("held-out perplexity (mean over seeds)")
    ax.set_ylim(top=min(ax.get_ylim()[1], 4000))
    ax.set_title("gSGRHMC on online LDA at matched overdamped step, by the metric's scale c", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def verdicts(rows: pd.DataFrame) -> str:
    done = rows[rows.status == "completed"]
    values = {label: part.perplexity.to_numpy() for label, part in done.groupby("label", sort=False)}
    fractions = done.groupby("label", sort=False).overdamped_fraction.mean()
    reference = next((label for label in values if label.startswith("SGRLD")), None)
    lines = ["Final held-out perplexity (mean ± sd over seeds), the fraction of coordinates overdamped (ε_T·c·θ > 1) at "
             "the last kept sample, and each gSGRHMC setting against SGRLD (\"below\" only past 2 combined standard "
             "errors, else tie):"]
    for label, value in values.items():
        sd = float(np.std(value, ddof=1)) if len(value) > 1 else math.nan
        line = f"- {label}: {np.mean(value):.0f} ± {sd:.0f} ({len(value)} seeds)"
        if not label.startswith("SGRLD"):
            line += f"; overdamped {fractions[label]:.3f}"
            if reference is not None:
                line += f"; {compare(value, values[reference]).sentence('gSGRHMC', 'SGRLD', digits=4)}"
        lines.append(line)
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, seeds=("1,2,3", "seeds of every setting"))
    root = Path(args.root)
    tuned = tuned_steps(COMMITTED if args.smoke else root)
    extra = SMOKE["overrides"] if args.smoke else []
    documents = SMOKE["documents"] if args.smoke else DOCUMENTS
    config = compose(["+experiment=recipe_fig3", *extra])
    n_steps = steps(documents, config["target"]["batch_size"])
    paper = PaperFolder.create(FIGURE_ID, root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    settings = settings_table(tuned, SMOKE_SCALES if args.smoke else SCALES)
    rows = run_settings(paper, settings, args.seeds, n_steps, args.jobs, extra, config["schedule"])
    draw(paper, rows, paper.path / "perplexity.png")
    text = verdicts(rows)
    notes = (f"Settings: +experiment=recipe_fig3 (SPEC E3) for every run, {documents:,} documents, the step sizes a "
             f"of {tuned['folder']} (SGRLD {tuned['sgrld']:g}, SGRHMC {tuned['sgrhmc']:g}); gSGRHMC with "
             f"sampler.metric={{name: expanded_mean, scale: c}} (G⁻¹ = c·diag(θ)) and the aboba integrator.")
    paper.write_summary(rows, "Why gSGRHMC sits above SGRLD on online LDA: the metric's scale at matched step", notes,
                        body=rows.drop(columns=["folder"]).to_markdown(index=False, floatfmt=".4g") + "\n\n" + text)
    paper.finish({"smoke": args.smoke, "seeds": args.seeds, "documents": documents, "scales": list(
        SMOKE_SCALES if args.smoke else SCALES), "tuned": tuned, "jobs": args.jobs}, sys.argv)
    print(text)
    print(paper.path)


if __name__ == "__main__":
    main()
