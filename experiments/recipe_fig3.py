"""Ma, Chen & Fox (2015) Fig. 3 (SPEC E3, §4.11): online LDA on the Wikipedia stream with SGLD, SGHMC, SGRLD and
SGRHMC, held-out perplexity against documents seen (0–10,000), 3 seeds each, and the runtime table.

1. Tuning (SPEC §4.11: "tune a for SGLD/SGHMC and record it"): each Euclidean sampler runs 1 seed over the
   first 2,000 documents for every a of its ``TUNING_GRID``; the a with the lowest final perplexity
   (among runs that did not diverge) is used. SGRLD and SGRHMC use the code's a = 0.01.
2. One Hydra multirun ``python run.py -m +experiment=recipe_fig3 sampler=... seed=1,2,3`` per sampler.
3. The baseline a user would pick instead: scikit-learn's online variational LDA on the same stream, the
   same K, α, β and held-out documents, scored by the same perplexity estimator (``sgmcmc.lda.baseline``).

Writes ``fig3_lda.png`` (mean ± sd over seeds), ``summary.csv`` / ``summary.md`` (final perplexity, seconds
per 100 documents beside the paper's 0.778 / 0.815 / 0.730 / 0.806 s, the tuned a) under
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
from sgmcmc.paper import PaperFolder

FIGURE_ID = "recipe-fig3"
SAMPLERS = {"sgld": "SGLD", "sghmc": "SGHMC", "sgrld": "SGRLD", "sgrhmc": "SGRHMC"}
EUCLIDEAN = ("sgld", "sghmc")
COLORS = {"SGLD": "tab:blue", "SGHMC": "tab:orange", "SGRLD": "tab:green", "SGRHMC": "tab:red", "online VB": "0.3"}
PAPER_SECONDS = {"SGLD": 0.778, "SGHMC": 0.815, "SGRLD": 0.730, "SGRHMC": 0.806}  # [R] Fig. 3 table, per 100 docs
RIEMANNIAN_A = 0.01
# a per Euclidean sampler: SGLD moves εf per step, SGHMC ~ε²t²f/2 after t steps, so SGHMC needs a larger a.
TUNING_GRID = {"sgld": (3e-5, 1e-4, 3e-4, 1e-3, 3e-3), "sghmc": (1e-3, 3e-3, 1e-2, 3e-2, 1e-1)}
DOCUMENTS, TUNE_DOCUMENTS = 10_000, 2_000
# --smoke: a few minibatches of a small stream (CI): 100 held-out documents, 4 evaluations.
SMOKE = {"documents": 200, "tune_documents": 100, "grid": {"sgld": (1e-5, 1e-4), "sghmc": (1e-4, 1e-3)}, "overrides": [
    "target.n_held_out=100", "target.buffer_size=200", "target.n_sweeps=4", "target.n_topics=10", "run.eval_every=1"]}


def steps(documents: int, batch_size: int) -> int:
    return math.ceil(documents / batch_size)


def tune(paper: PaperFolder, jobs: int, batch_size: int, documents: int, grid, extra) -> tuple[dict, pd.DataFrame]:
    """The a of each Euclidean sampler with the lowest final perplexity after ``documents`` (seed 0)."""
    rows = []
    for name in EUCLIDEAN:
        overrides = [f"sampler={name}", f"sampler.step_size={','.join(map(str, grid[name]))}", "seed=0",
                     f"run.n_steps={steps(documents, batch_size)}", *extra]
        for folder in multirun(paper, "recipe_fig3", f"tune_{name}", overrides, jobs):
            config, status = read_run(folder)
            record(paper, folder, status, {"phase": "tuning", "sampler": name, "a": config["sampler"]["step_size"]})
            trace = pd.read_csv(folder / "trace.csv") if (folder / "trace.csv").is_file() else pd.DataFrame()
            final = float(trace.perplexity.dropna().iloc[-1]) if "perplexity" in trace and trace.perplexity.notna().any() else math.nan
            rows.append({"sampler": SAMPLERS[name], "a": float(config["sampler"]["step_size"]), "status": status,
                         "perplexity": final if status == "completed" else math.nan})
    table = pd.DataFrame(rows)
    chosen = {}
    for name in EUCLIDEAN:
        part = table[(table.sampler == SAMPLERS[name]) & table.perplexity.notna()]
        chosen[name] = float(part.loc[part.perplexity.idxmin(), "a"]) if len(part) else float(min(grid[name]))
    return chosen, table


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


def verdict(rows: pd.DataFrame, tuned: dict) -> str:
    done = rows[rows.status == "completed"]
    final = done.groupby("method", sort=False).perplexity.agg(["mean", "std", "count"])
    seconds = done.groupby("method", sort=False).seconds_per_100_documents.mean()
    lines = ["Measured (final held-out perplexity, mean ± sd over seeds; seconds per 100 documents, sampling only):"]
    for method, row in final.iterrows():
        paper_time = f" (paper {PAPER_SECONDS[method]} s)" if method in PAPER_SECONDS else ""
        lines.append(f"- {method}: {row['mean']:.0f} ± {0 if math.isnan(row['std']) else row['std']:.0f} ({int(row['count'])} seeds); "
                     f"{seconds[method]:.3f} s per 100 documents{paper_time}")
    riemannian = [final.loc[m, "mean"] for m in ("SGRLD", "SGRHMC") if m in final.index]
    euclidean = [final.loc[m, "mean"] for m in ("SGLD", "SGHMC") if m in final.index]
    if riemannian and euclidean:
        holds = max(riemannian) < min(euclidean)
        lines.append(f"- Riemannian samplers below both Euclidean ones at the last evaluation: {'yes' if holds else 'no'} "
                     f"(worst Riemannian {max(riemannian):.0f}, best Euclidean {min(euclidean):.0f}).")
    for first, second in (("SGRHMC", "SGRLD"), ("SGHMC", "SGLD")):
        if first in final.index and second in final.index:
            lines.append(f"- {first} below {second} (the paper's order within the pair): "
                         f"{'yes' if final.loc[first, 'mean'] < final.loc[second, 'mean'] else 'no'}.")
    lines.append("- tuned a: " + ", ".join(f"{SAMPLERS[n]} {a:g}" for n, a in tuned.items()) + f"; SGRLD and SGRHMC a = {RIEMANNIAN_A}.")
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
    tuned, tuning = tune(paper, jobs, batch_size, smoke["tune_documents"] if smoke else TUNE_DOCUMENTS,
                         smoke["grid"] if smoke else TUNING_GRID, extra)
    step_sizes = {**tuned, "sgrld": RIEMANNIAN_A, "sgrhmc": RIEMANNIAN_A}
    rows = run_samplers(paper, jobs, args.seeds, steps(documents, batch_size), step_sizes, extra)
    seeds = [int(s) for s in args.seeds.split(",")]
    baseline_rows, baseline = run_baseline(paper, config, seeds, documents)
    rows = pd.concat([rows, baseline_rows], ignore_index=True)
    draw(curves(paper, rows, baseline), paper.path / "fig3_lda.png", config["target"]["n_topics"])
    text = verdict(rows, tuned)
    body = (rows.drop(columns=["folder"]).to_markdown(index=False, floatfmt=".4g") + "\n\n" + text
            + "\n\nTuning of a (final perplexity after the tuning documents, seed 0):\n\n"
            + tuning.to_markdown(index=False, floatfmt=".4g"))
    paper.write_summary(rows, "Ma, Chen & Fox (2015) Fig. 3: online LDA on Wikipedia", NOTES, body=body)
    paper.finish({"smoke": args.smoke, "seeds": args.seeds, "documents": documents, "step_sizes": step_sizes,
                  "jobs": jobs}, sys.argv)
    print(text)
    print(paper.path)


NOTES = """
Settings (SPEC E3, §4.11): K = 50, α = 0.01, β = 1e−4, minibatches of 50 documents, 50 Gibbs sweeps per
document (the last 25 averaged), D = 3.3·10⁶ in the gradient, ε_t = a(1 + t/1000)^−0.55, reflection θ ← |θ|,
θ₀ ~ Gamma(1, 1). Stream: the 15,340 Wikipedia articles of the data folder, cleaned as Hoffman's code does,
mapped to the 7,702-word vocabulary, shuffled by stream seed 0 (the same documents in the same order for every
sampler and seed); the first 1,000 are held out (every 10th word of each is a test word). Perplexity every
500 documents, the predictive averaged over the evaluations (SPEC §3). One chain per run; the seeds change
the samplers' random numbers, not the stream. Seconds per 100 documents exclude the perplexity evaluations
(as [R]'s runtime table reports sampling time); the baseline's exclude its scoring too.
"""


if __name__ == "__main__":
    main()
