"""Ma, Chen & Fox (2015) Fig. 3 (SPEC E3, §4.11): online LDA on the Wikipedia stream with SGLD, SGHMC, SGRLD and
SGRHMC, held-out perplexity against documents seen (0–10,000), 3 seeds each, and the runtime table.

1. Tuning (SPEC §4.11, §4.14 "tuning is symmetric"): every sampler runs 1 seed (seed 0) over the first 2,000
   documents for every a of the one ``TUNING_GRID``; the a with the lowest final perplexity (among runs that did
   not diverge) is used, and the summary says when it lies on the edge of the grid.
2. One sweep ``python run.py -m +experiment=recipe_fig3 sampler=... seed=1,2,3`` per sampler (through the Python API).
3. The baseline a user would pick instead: scikit-learn's online variational LDA on the same stream, the
   same K, α, β and held-out documents, scored by the same perplexity estimator (``sgmcmc.lda.baseline``).

Writes ``fig3_lda.png`` (mean ± sd over seeds), ``summary.csv`` / ``summary.md`` (final perplexity, seconds
per 100 documents beside the paper's runtime table, the tuned a, and the paper's orderings as verdicts from the
seed spread, SPEC §4.15: "below" only past 2 combined standard errors, else "tie") under
``results/paper/recipe-fig3/<run-id>/``.

    python -m experiments.recipe_fig3 [--smoke] [--root results/paper] [--jobs 1] [--seeds 1,2,3]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.common import compose, multirun, parse_args, read_run, record
from sgmcmc.diagnostics.comparison import compare
from sgmcmc.paper import PaperFolder

FIGURE_ID = "recipe-fig3"
SAMPLERS = {"sgld": "SGLD", "sghmc": "SGHMC", "sgrld": "SGRLD", "sgrhmc": "SGRHMC"}
COLORS = {"SGLD": "tab:blue", "SGHMC": "tab:orange", "SGRLD": "tab:green", "SGRHMC": "tab:red", "online VB": "0.3"}
PAPER_SECONDS = {"SGLD": 0.778, "SGHMC": 0.815, "SGRLD": 0.730, "SGRHMC": 0.806}  # [R] Fig. 3 table, per 100 docs
# One grid for every sampler (SPEC §4.14). It spans both kinds of step: SGLD/SGRLD move εf per step, the
# Hamiltonian samplers ~ε²t²f/2 (overdamped gSGRHMC on LDA, εθ ≫ 1, moves like SGRLD at ε²/2).
TUNING_GRID = (1e-5, 3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)
DOCUMENTS, TUNE_DOCUMENTS = 10_000, 2_000
# --smoke: a few minibatches of a small stream (CI): 100 held-out documents, 4 evaluations.
SMOKE = {"documents": 200, "tune_documents": 100, "grid": (1e-4, 1e-2), "overrides": [
    "target.n_held_out=100", "target.buffer_size=200", "target.n_sweeps=4", "target.n_topics=10", "run.eval_every=1"]}


def steps(documents: int, batch_size: int) -> int:
    return math.ceil(documents / batch_size)


def tune(paper: PaperFolder, jobs: int, batch_size: int, documents: int, grid, extra) -> tuple[dict, pd.DataFrame]:
    """The a of every sampler with the lowest final perplexity after ``documents`` (seed 0), all on ``grid``."""
    rows = []
    for name in SAMPLERS:
        overrides = [f"sampler={name}", f"sampler.step_size={','.join(map(str, grid))}", "seed=0",
                     f"run.n_steps={steps(documents, batch_size)}", *extra]
        for folder in multirun(paper, "recipe_fig3", f"tune_{name}", overrides, jobs):
            config, status = read_run(folder)
            record(paper, folder, status, {"phase": "tuning", "sampler": name, "a": config["sampler"]["step_size"]})
            trace = pd.read_csv(folder / "trace.csv") if (folder / "trace.csv").is_file() else pd.DataFrame()
            final = float(trace.perplexity.dropna().iloc[-1]) if "perplexity" in trace and trace.perplexity.notna().any() else math.nan
            rows.append({"sampler": SAMPLERS[name], "a": float(config["sampler"]["step_size"]), "status": status,
                         "perplexity": final if status == "completed" else math.nan})
    table = pd.DataFrame(rows).sort_values(["sampler", "a"], key=lambda c: c.map(list(SAMPLERS.values()).index)
                                           if c.name == "sampler" else c, ignore_index=True)
    chosen = {}
    for name in SAMPLERS:
        part = table[(table.sampler == SAMPLERS[name]) & table.perplexity.notna()]
        chosen[name] = float(part.loc[part.perplexity.idxmin(), "a"]) if len(part) else float(min(grid))
    return chosen, table


def tuning_lines(tuned: dict, grid) -> list[str]:
    """The chosen a per sampler, and whether it lies on the edge of the grid (where a wider grid might do better)."""
    edges = (min(grid), max(grid))
    text = ", ".join(f"{SAMPLERS[name]} {a:g}" + (" (edge of the grid)" if a in edges else "") for name, a in tuned.items())
    return [f"- tuned a (one grid for every sampler, {min(grid):g}–{max(grid):g}, {len(grid)} values, seed 0): {text}."]


def run_samplers(paper: PaperFolder, jobs: int, seeds: str, n_steps: int, step_sizes: dict, extra) -> pd.DataFrame:
    rows = []
    for name, label in SAMPLERS.items():
        overrides = [f"sampler={name}", f"sampler.step_size={step_sizes[name]}", f"seed={seeds}", f"run.n_steps={n_steps}", *extra]
        for folder in multirun(paper, "recipe_fig3", name, overrides, jobs):
            config, status = read_run(folder)
            metrics = record(paper, folder, status, {"phase": "figure", "sampler": name, "seed": int(config["seed"])})
            trace = pd.read_csv(folder / "trace.csv") if (folder / "trace.csv").is_file() else pd.DataFrame()
            rows.append({"method": label, "seed": int(config["seed"]), "a": float(config["sampler"]["step_size"]), "status": status,
                         "folder": str(folder.relative_to(paper.path)), "documents": metrics.get("documents"),
                         "perplexity": float(trace.perplexity.dropna().iloc[-1]) if "perplexity" in trace else math.nan,
                         "seconds_per_100_documents": metrics.get("seconds_per_100_documents"),
                         "evaluation_seconds": metrics.get("evaluation_time_s")})
    return pd.DataFrame(rows)


def run_baseline(paper: PaperFolder, config: dict, seeds: list[int], documents: int) -> tuple[pd.DataFrame, dict]:
    """scikit-learn's online VB on the same stream and held-out documents (one fit per seed)."""
    from sgmcmc.lda.baseline import online_variational_lda
    from sgmcmc.lda.perplexity import HeldOutPerplexity
    from sgmcmc.targets import make_target

    spec = {k: v for k, v in config["target"].items() if k != "name"}
    rows, traces = [], {}
    for seed in seeds:
        target = make_target("lda", **spec)
        scorer = HeldOutPerplexity(target.held_out, target.alpha, n_sweeps=target.n_sweeps)
        batches = (target.next_minibatch() for _ in range(steps(documents, target.batch_size)))
        trace, seconds = online_variational_lda(batches, target.n_vocab, scorer, n_topics=target.n_topics, alpha=target.alpha,
                                                beta=target.beta, corpus_size=target.corpus_size,
                                                evaluate_every=config["run"]["eval_every"], seed=seed)
        traces[seed] = pd.DataFrame(trace)
        paper.path.joinpath("baseline").mkdir(exist_ok=True)
        traces[seed].to_csv(paper.path / "baseline" / f"online_vb_seed{seed}.csv", index=False)
        rows.append({"method": "online VB", "seed": seed, "a": math.nan, "status": "completed",
                     "folder": f"baseline/online_vb_seed{seed}.csv", "documents": target.documents_seen,
                     "perplexity": float(trace[-1]["perplexity"]),
                     "seconds_per_100_documents": 100.0 * seconds / target.documents_seen, "evaluation_seconds": math.nan})
    return pd.DataFrame(rows), traces


def curves(paper: PaperFolder, rows: pd.DataFrame, baseline: dict) -> dict:
    """Per method: documents and the perplexity traces of its seeds, (seeds, evaluations)."""
    out = {}
    for method, part in rows[rows.status == "completed"].groupby("method", sort=False):
        if method == "online VB":
            traces = [baseline[seed] for seed in part.seed]
        else:
            traces = [pd.read_csv(paper.path / folder / "trace.csv").dropna(subset=["perplexity"]) for folder in part.folder]
        length = min(len(trace) for trace in traces)
        out[method] = (traces[0].documents.to_numpy()[:length], np.array([t.perplexity.to_numpy()[:length] for t in traces]))
    return out


def draw(curve: dict, path: Path, n_topics: int) -> None:
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for method, (documents, values) in curve.items():
        mean, sd = values.mean(axis=0), values.std(axis=0, ddof=1) if len(values) > 1 else np.zeros(values.shape[1])
        ax.plot(documents, mean, color=COLORS[method], lw=1.6, ls="--" if method == "online VB" else "-",
                label=f"{method} ({len(values)} seeds)")
        ax.fill_between(documents, mean - sd, mean + sd, color=COLORS[method], alpha=0.2)
    ax.set_xlabel("documents seen")
    ax.set_ylabel("held-out perplexity")
    ax.set_title(f"Ma, Chen & Fox 2015 Fig. 3: online LDA on Wikipedia (K = {n_topics}), mean ± sd over seeds", fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def verdict(rows: pd.DataFrame, tuned: dict, grid) -> str:
    """Final perplexity and runtime per method, and the paper's orderings (SPEC E3) as verdicts from the seed
    spread (SPEC §4.15): lower perplexity is "below"; a difference within 2 combined standard errors is a tie."""
    done = rows[rows.status == "completed"]
    final = done.groupby("method", sort=False).perplexity.agg(["mean", "std", "count"])
    seconds = done.groupby("method", sort=False).seconds_per_100_documents.mean()
    values = {method: part.perplexity.to_numpy() for method, part in done.groupby("method", sort=False)}
    lines = ["Measured (final held-out perplexity, mean ± sd over seeds; seconds per 100 documents, sampling only):"]
    for method, row in final.iterrows():
        paper_time = f" (paper {PAPER_SECONDS[method]} s)" if method in PAPER_SECONDS else ""
        lines.append(f"- {method}: {row['mean']:.0f} ± {0 if math.isnan(row['std']) else row['std']:.0f} ({int(row['count'])} seeds); "
                     f"{seconds[method]:.3f} s per 100 documents{paper_time}")
    lines.append("")
    lines.append("The paper's orderings, as verdicts from the seed spread (\"below\" only past 2 combined standard errors, else tie):")
    pairs = [(r, e) for r in ("SGRLD", "SGRHMC") for e in ("SGLD", "SGHMC") if r in values and e in values]
    if pairs:
        results = [compare(values[r], values[e]) for r, e in pairs]
        holds = all(result.verdict == "below" for result in results)
        lines.append(f"- Riemannian samplers below both Euclidean ones at the last evaluation: {'yes' if holds else 'not shown'} "
                     f"({sum(result.verdict == 'below' for result in results)} of {len(pairs)} pairs below).")
        lines += [f"  - {result.sentence(r, e, digits=4)}" for (r, e), result in zip(pairs, results)]
    for first, second in (("SGRHMC", "SGRLD"), ("SGHMC", "SGLD")):
        if first in values and second in values:
            lines.append(f"- the paper's order within the pair, {first} below {second}: "
                         f"{compare(values[first], values[second]).sentence(first, second, digits=4)}.")
    if "online VB" in values:
        best = min((m for m in SAMPLERS.values() if m in values), key=lambda m: final.loc[m, "mean"], default=None)
        if best is not None:
            lines.append(f"- the best sampler against the online-VB baseline: {compare(values[best], values['online VB']).sentence(best, 'online VB', digits=4)}.")
    lines += tuning_lines(tuned, grid)
    return "\n".join(lines)


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, seeds=("1,2,3", "seeds of every sampler"))
    jobs = args.jobs
    smoke = SMOKE if args.smoke else None
    documents = smoke["documents"] if smoke else DOCUMENTS
    extra = smoke["overrides"] if smoke else []
    config = compose(["+experiment=recipe_fig3", *extra])
    batch_size = config["target"]["batch_size"]
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    grid = smoke["grid"] if smoke else TUNING_GRID
    step_sizes, tuning = tune(paper, jobs, batch_size, smoke["tune_documents"] if smoke else TUNE_DOCUMENTS, grid, extra)
    rows = run_samplers(paper, jobs, args.seeds, steps(documents, batch_size), step_sizes, extra)
    seeds = [int(s) for s in args.seeds.split(",")]
    baseline_rows, baseline = run_baseline(paper, config, seeds, documents)
    rows = pd.concat([rows, baseline_rows], ignore_index=True)
    draw(curves(paper, rows, baseline), paper.path / "fig3_lda.png", config["target"]["n_topics"])
    text = verdict(rows, step_sizes, grid)
    body = (rows.drop(columns=["folder"]).to_markdown(index=False, floatfmt=".4g") + "\n\n" + text
            + "\n\nTuning of a (final perplexity after the tuning documents, seed 0):\n\n"
            + tuning.to_markdown(index=False, floatfmt=".4g"))
    paper.write_summary(rows, "Ma, Chen & Fox (2015) Fig. 3: online LDA on Wikipedia", notes(config), body=body)
    paper.finish({"smoke": args.smoke, "seeds": args.seeds, "documents": documents, "tuning_grid": list(grid),
                  "tune_documents": smoke["tune_documents"] if smoke else TUNE_DOCUMENTS, "step_sizes": step_sizes,
                  "jobs": jobs}, sys.argv)
    print(text)
    print(paper.path)


def notes(config: dict) -> str:
    """The settings paragraph, from the composed config the runs used (no number typed in by hand)."""
    target, schedule = config["target"], config["schedule"]
    return f"""
Settings (SPEC E3, §4.11, from the runs' config): K = {target['n_topics']}, α = {target['alpha']:g}, β = {target['beta']:g},
minibatches of {target['batch_size']} documents, {target['n_sweeps']} Gibbs sweeps per document (the last
{target['n_sweeps'] // 2} averaged), D = {target['corpus_size']:g} in the gradient, ε_t = a(1 + t/{schedule['b']:g})^−{schedule['gamma']:g},
reflection θ ← |θ|, θ₀ ~ Gamma(1, 1). Stream: the Wikipedia articles of the data folder, cleaned as Hoffman's
code does, mapped to the vocabulary, shuffled by stream seed {target['stream_seed']} (the same documents in the same
order for every sampler and seed); the first {target['n_held_out']} are held out (every 10th word of each is a test
word). Perplexity every {config['run']['eval_every'] * target['batch_size']} documents, the predictive averaged over
the evaluations (SPEC §3). One chain per run; the seeds change the samplers' random numbers, not the stream. SGHMC
and SGRHMC use the ``aboba`` integrator with its second-order position flow (issue 16). Seconds per 100 documents
exclude the perplexity evaluations (as [R]'s runtime table reports sampling time); the baseline's exclude its
scoring too.
"""


if __name__ == "__main__":
    main()
