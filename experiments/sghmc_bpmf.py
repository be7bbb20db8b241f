"""Chen, Fox & Guestrin (2014) §4.2 Table 1, online BPMF on MovieLens-1M (SPEC T12, E8): the test RMSE of SGD, SGD
with momentum, SGLD and SGHMC over the 5 folds of the authors' split, beside the published numbers.

Every run is ``python run.py target=bpmf_movielens sampler=<method> target.fold=<k>`` with the pair's defaults
(``configs/by_target/bpmf_movielens/<method>.yaml``: the authors' η and α in the samplers' (ε, C) form), minibatches of
4,000 ratings, the precisions Gibbs-resampled once per round of ``target.gibbs_every`` = 2,000 steps (SPEC T12's round),
and the test predictions averaged over one sample per round after the burn-in rounds (the optimisers: the current
point's own); the first 2 rounds without the injected noise (``run.noise_free_steps``: the code's start_sample). The
optimisers' settings, which the sources do not give, are chosen first for each fold on a validation split of its own
training ratings (``target.evaluate_on=validation``; ``--tune-rounds``). The paper ran 1,000 rounds (2·10⁶ steps per run);
``--rounds`` sets how many.

The data (``--ratings``):

- ``real`` (default, also with ``--smoke --ratings real``): MovieLens-1M's ``ratings.dat`` in the data folder (``<data_dir>/movielens/ml-1m/ratings.dat``),
  fetched from GroupLens when online; without it the experiment stops with the loader's one line saying where to put
  the file. The summary puts the published RMSE beside ours.
- ``synthetic`` (the default of ``--smoke``, which takes the small set): the full-size synthetic set of :mod:`sgmcmc.data.synthetic_ratings` (6,040 users × 3,706 items,
  ~10⁶ ratings from the BPMF model with known factors; written once into the cache folder). The summary puts the
  noise floor of each fold's test ratings (the RMSE of E[r | u, i] under the generating model) beside ours.

Writes ``fig_bpmf_rmse.png`` (RMSE against rounds, mean over folds with the range), ``summary.csv`` / ``summary.md``
under ``results/paper/sghmc-bpmf/<run-id>/``.

    python -m experiments.sghmc_bpmf [--smoke] [--ratings real|synthetic] [--rounds 1000] [--burn-in-rounds 50]
                                     [--folds 1,2,3,4,5] [--tune-rounds 10] [--root results/paper] [--jobs 2]
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.common import compose, integers, parse_args, run_settings, setting
from sgmcmc.data import DataError
from sgmcmc.diagnostics.comparison import compare_paired
from sgmcmc.paper import PaperFolder

FIGURE_ID = "sghmc-bpmf"
METHODS = {"sgd": "SGD", "sgd_momentum": "SGD with momentum", "sgld": "SGLD", "sghmc": "SGHMC"}
COLORS = {"SGD": "tab:gray", "SGD with momentum": "tab:orange", "SGLD": "tab:blue", "SGHMC": "tab:red"}
# SPEC E8: the SGHMC paper's Table 1, RMSE mean ± sd over the 5 folds
PUBLISHED = {"SGD": (0.8538, 0.0009), "SGD with momentum": (0.8539, 0.0009), "SGLD": (0.8412, 0.0009),
             "SGHMC": (0.8411, 0.0011)}
# the code's start_sample: the first rounds are MAP steps, without the injected noise
NOISE_FREE_ROUNDS = 2
# the optimisers' settings are not in the sources: their learning rate η (the pair default's, SGLD's or SGHMC's) times
# each factor is tried on a validation split of each fold's training ratings, the momentum decay α kept
OPTIMISERS = ("sgd", "sgd_momentum")
FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
# --smoke (CI): the small synthetic set (200 users × 150 items, 6,000 ratings), minibatches of 400, rounds of 20 steps;
# the optimisers tuned on two factors over 2 rounds
SMOKE = dict(rounds=4, burn_in_rounds=2, tune_rounds=2, factors=(0.5, 1.0), size="small",
             overrides=["target.batch_size=400", "target.gibbs_every=20"])


def scaled(name: str, factor: float) -> list[str]:
    """The optimiser's pair default with its learning rate η times ``factor``: SGD's ε = η; SGD with momentum's
    ε = √η and C = α/ε with α = εC of the pair default kept."""
    sampler = compose(["target=bpmf_movielens", f"sampler={name}"])["sampler"]
    if name == "sgd":
        return [f"sampler.step_size={sampler['step_size'] * factor:.6g}"]
    step = sampler["step_size"] * math.sqrt(factor)
    return [f"sampler.step_size={step:.6g}", f"sampler.friction={sampler['step_size'] * sampler['friction'] / step:.6g}"]


def tuning_settings(factors, folds: list[int], rounds: int, steps_per_round: int, extra: list) -> list:
    """One run per (optimiser, fold, factor) on the fold's own validation split (``target.evaluate_on=validation``:
    its test fold left out, since every rating is some fold's test rating), burn-in half its rounds."""
    shared = common(rounds, rounds // 2, steps_per_round, extra)
    return [setting(["target=bpmf_movielens", f"sampler={name}", f"target.fold={fold}", *scaled(name, factor),
                     *shared, "target.evaluate_on=validation"], method=METHODS[name], fold=fold, factor=factor)
            for name in OPTIMISERS for fold in folds for factor in factors]


def chosen_factors(results) -> tuple[dict, pd.DataFrame]:
    """Each (optimiser, fold)'s factor with the lowest final validation RMSE among its completed runs (1: the pair
    default, where none completed), and the table of every tuning run."""
    table = pd.DataFrame([{**item.label_dict, "status": metrics.get("status"),
                           "validation_rmse": metrics.get("final", {}).get("rmse")} for item, metrics in results])
    chosen = {}
    for (method, fold), part in table.groupby(["method", "fold"], sort=False):
        part = part[(part.status == "completed") & part.validation_rmse.notna()]
        name = next(key for key, label in METHODS.items() if label == method)
        chosen[(name, int(fold))] = float(part.loc[part.validation_rmse.idxmin(), "factor"]) if len(part) else 1.0
    return chosen, table


def common(rounds: int, burn_in_rounds: int, steps_per_round: int, extra: list) -> list[str]:
    """Every run's overrides: rounds as steps, a prediction and trace row per round, the first rounds noise-free."""
    n_steps = rounds * steps_per_round
    return [f"run.n_steps={n_steps}", f"run.burn_in={burn_in_rounds * steps_per_round}",
            f"run.eval_every={steps_per_round}", f"target.predict_every={steps_per_round}", f"run.thin={n_steps}",
            f"run.noise_free_steps={NOISE_FREE_ROUNDS * steps_per_round}", *extra]


def synthetic_file(size: str, cache_dir: Path) -> Path:
    """The synthetic ratings.dat of ``size`` (seed 0) in the cache folder, written if absent."""
    from sgmcmc.data.synthetic_ratings import SIZES, draw_ratings, write_ratings_dat

    path = cache_dir / "synthetic_ratings" / f"{size}-seed0" / "ratings.dat"
    if not path.is_file():
        partial = path.with_suffix(".partial")
        write_ratings_dat(draw_ratings(*SIZES[size], seed=0), partial)
        partial.replace(path)
    return path


def noise_floors(size: str, folds: list[int], n_folds: int) -> dict:
    """fold → the RMSE of E[r | u, i] on that fold's test ratings of the synthetic set of ``size`` (seed 0)."""
    from sgmcmc.data.movielens import fold_mask
    from sgmcmc.data.synthetic_ratings import SIZES, draw_ratings, expected_rating

    drawn = draw_ratings(*SIZES[size], seed=0)  # the file's lines, in its order
    best = expected_rating(drawn.mean, drawn.noise_sd)
    out = {}
    for fold in folds:
        test = fold_mask(len(drawn.ratings), fold, n_folds)
        out[fold] = float(np.sqrt(np.mean((best[test] - drawn.ratings[test]) ** 2)))
    return out


def settings(folds: list[int], rounds: int, burn_in_rounds: int, steps_per_round: int, factors: dict,
             extra: list) -> list:
    """One run per (method, fold): the samplers' pair defaults (the authors'), the optimisers' at their chosen
    factor."""
    shared = common(rounds, burn_in_rounds, steps_per_round, extra)
    return [setting(["target=bpmf_movielens", f"sampler={name}", f"target.fold={fold}",
                     *(scaled(name, factors[name, fold]) if (name, fold) in factors else []), *shared], method=label,
                    fold=fold)
            for name, label in METHODS.items() for fold in folds]


def curves(paper: PaperFolder, results, steps_per_round: int) -> pd.DataFrame:
    """Every run's trace (RMSE per round) with its method and fold: ``results`` are the last runs recorded
    (run_settings records the runs in the settings' order)."""
    frames = []
    for (item, _), run in zip(results, paper.runs[len(paper.runs) - len(results):]):
        trace_path = paper.path / run["folder"] / "trace.csv"
        if trace_path.is_file():
            trace = pd.read_csv(trace_path).dropna(subset=["rmse"])
            frames.append(trace.assign(round=trace["step"] / steps_per_round, **item.label_dict))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def draw(trace: pd.DataFrame, path: Path, burn_in_rounds: int, steps_per_round: int, floor: float | None) -> None:
    """Test RMSE against rounds: the mean over folds, the range shaded; the noise floor (synthetic data) dashed."""
    figure, axis = plt.subplots(figsize=(7, 4.2))
    for method in METHODS.values():
        part = trace[trace.method == method] if len(trace) else trace
        if len(part) == 0:
            continue
        grouped = part.groupby("round").rmse
        mean = grouped.mean()
        axis.plot(mean.index, mean.values, color=COLORS[method], label=f"{method} ({part.fold.nunique()} folds)")
        axis.fill_between(mean.index, grouped.min().values, grouped.max().values, color=COLORS[method], alpha=0.2,
                          linewidth=0)
    if floor is not None:
        axis.axhline(floor, color="black", linestyle="--", linewidth=0.8, label="noise floor of the generating model")
    axis.axvline(burn_in_rounds, color="black", linewidth=0.6, linestyle=":")
    if len(trace):
        low = trace.rmse.min() if floor is None else min(floor, trace.rmse.min())
        axis.set_ylim(low - 0.01, min(trace.rmse.max(), low + 0.15))
    axis.set_xlabel(f"round ({steps_per_round} minibatches)")
    axis.set_ylabel("test RMSE (1-5 scale) of the averaged prediction")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title("SGHMC paper §4.2: online BPMF (dotted: end of burn-in)", fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def final_rows(trace: pd.DataFrame, results, floors: dict) -> pd.DataFrame:
    """One row per run: the last round's RMSE, the fold's noise floor (synthetic data), status and speed."""
    rows = []
    for item, metrics in results:
        labels = item.label_dict
        part = trace[(trace.method == labels["method"]) & (trace.fold == labels["fold"])] if len(trace) else trace
        last = part.iloc[-1] if len(part) else None
        rows.append({**labels, "status": metrics.get("status"), "rounds": None if last is None else float(last["round"]),
                     "rmse": None if last is None else float(last.rmse),
                     **({"noise_floor": floors.get(labels["fold"])} if floors else {}),
                     "steps_per_second": metrics.get("steps_per_second")})
    return pd.DataFrame(rows)


def table(rows: pd.DataFrame, real: bool) -> tuple[pd.DataFrame, str]:
    """The RMSE table (mean ± sd over folds per method, beside the published value or the noise floor) and the
    comparisons as verdicts from the fold spread (SPEC §4.15)."""
    done = rows[rows.status == "completed"]
    values = {method: part.rmse.to_numpy() for method, part in done.groupby("method", sort=False)}
    out = []
    for method, rmse in values.items():
        entry = {"method": method, "rmse_mean": rmse.mean(), "rmse_sd": rmse.std(ddof=1) if rmse.size > 1 else math.nan,
                 "folds": rmse.size}
        if real:
            entry["published_mean"], entry["published_sd"] = PUBLISHED[method]
        else:
            floors = done[done.method == method].noise_floor.to_numpy(dtype=float)
            entry["noise_floor_mean"] = floors.mean()
            entry["above_floor"] = rmse.mean() - floors.mean()
        out.append(entry)
    by_fold = {method: dict(zip(part.fold, part.rmse)) for method, part in done.groupby("method", sort=False)}
    lines = ["Comparisons, paired by fold (\"below\" only past 2 standard errors of the mean difference over the folds "
             "both completed, else tie; SPEC §4.15):"]
    for first, second in (("SGHMC", "SGD"), ("SGHMC", "SGD with momentum"), ("SGLD", "SGD"), ("SGHMC", "SGLD")):
        if first in values and second in values:
            shared = sorted(set(by_fold[first]) & set(by_fold[second]))
            result = compare_paired([by_fold[first][k] for k in shared], [by_fold[second][k] for k in shared])
            lines.append(f"- {result.sentence(first, second, digits=3)}")
    if real:
        published = ", ".join(f"{method} {mean:.4f} ± {sd:.4f}" for method, (mean, sd) in PUBLISHED.items())
        lines.append(f"- the paper (mean ± sd over 5 folds): {published}.")
    return pd.DataFrame(out), "\n".join(lines)


def notes(config: dict, rounds: int, burn_in_rounds: int, steps_per_round: int, source: str, n_train: int,
          tune_rounds: int, factors: dict, grid) -> str:
    """The settings paragraph, from the composed config and the tuning (no number typed in by hand)."""
    target = config["target"]
    edges = (min(grid), max(grid))
    chosen = "; ".join(f"{METHODS[name]} " + ", ".join(f"fold {fold} ×{factor:g}" + (" (edge)" if factor in edges else "")
                                                        for (other, fold), factor in factors.items() if other == name)
                       for name in OPTIMISERS)
    return f"""
Settings (SPEC T12, from the runs' config): data {source}; latent dimension {target['latent_dim']} plus user and item
biases, ratings mapped to (r − 1)/4 around base {target['base']}, test fold k of the authors' mknfold.py split
({target['n_folds']} folds, Python 2's random.seed(0) and randint reproduced), minibatches of {target['batch_size']}
ratings drawn without replacement each step (the authors' code sweeps a shuffled order), U, V ~ N(0, {target['initial_scale']}²)
at the start and biases 0; the precisions of U, V, the biases and the ratings have Gamma({target['hyper_shape']:g},
{target['hyper_rate']:g}) priors and are Gibbs-resampled once per round of {steps_per_round} steps (the optimisers keep
them at their initial 1). {rounds} rounds (the paper: 1,000), predictions averaged over one sample per round after round
{burn_in_rounds}, clipped to [1, 5] (the authors' code does not clip). Step sizes: the pair defaults of
configs/by_target/bpmf_movielens/ (SGHMC η = 0.4/N and α = 0.05, SGLD η = 8/N, for N = 800,000 ratings; here
N = {n_train:,} in fold 1). The optimisers' settings are not in the sources: their pair default's learning rate (SGD:
SGLD's η; SGD with momentum: SGHMC's η and α) times one of {', '.join(f'{factor:g}' for factor in grid)}, chosen for
each fold on a validation split of its own training ratings (its test fold left out; {tune_rounds} rounds, lowest final
RMSE; the tuning table above; "edge": at the edge of the grid): {chosen}. SGHMC's momentum factor is 1 − εC = 1 − α where the code has e^(−α). The optimisers
keep every precision at 1 (with the conditional's mode, the code's MAP update, λ_U and λ_V reach their largest value
n/2 with U = V = 0: a biases-only model). The first {NOISE_FREE_ROUNDS} rounds run without the injected noise (the
code's start_sample).
"""


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, ratings=(None, "real (MovieLens-1M in the data folder; the default) "
                                                              "or synthetic (the default of --smoke)"),
                      rounds=("1000", "rounds of gibbs_every steps (the paper: 1000)"),
                      burn_in_rounds=("50", "burn-in rounds (the paper: 50)"), folds=("1,2,3,4,5", "test folds"),
                      tune_rounds=("10", "rounds of each run that tunes an optimiser on a fold's validation split"))
    if args.ratings is None:
        args.ratings = "synthetic" if args.smoke else "real"
    if args.ratings not in ("real", "synthetic"):
        print(f"error: --ratings={args.ratings!r}: expected real or synthetic", file=sys.stderr)
        sys.exit(2)
    smoke = SMOKE if args.smoke else None
    rounds = smoke["rounds"] if smoke else integers("rounds", args.rounds)[0]
    burn_in_rounds = smoke["burn_in_rounds"] if smoke else integers("burn_in_rounds", args.burn_in_rounds)[0]
    folds = integers("folds", args.folds)
    tune_rounds = smoke["tune_rounds"] if smoke else integers("tune_rounds", args.tune_rounds)[0]
    grid = smoke["factors"] if smoke else FACTORS
    if not 0 <= burn_in_rounds < rounds:
        print(f"error: --burn-in-rounds={burn_in_rounds} must be below --rounds={rounds}", file=sys.stderr)
        sys.exit(2)
    real = args.ratings == "real"
    extra = list(smoke["overrides"]) if smoke else []
    config = compose(["target=bpmf_movielens", "sampler=sghmc", *extra])
    from sgmcmc.data.folder import resolve_cache_dir

    if real:
        from sgmcmc.data.movielens import check_movielens_1m, fetch_ratings, read_ratings

        try:
            path = fetch_ratings(config["target"]["data_dir"])
            check_movielens_1m(read_ratings(path), path)
        except DataError as error:
            print(f"error: {error} (or run on the synthetic set: python -m experiments.sghmc_bpmf --ratings synthetic)",
                  file=sys.stderr)
            sys.exit(2)
        source, floors = "MovieLens-1M (ratings.dat of the data folder)", {}
    else:
        size = smoke["size"] if smoke else "full"
        path = synthetic_file(size, resolve_cache_dir(config.get("cache_dir")))
        extra.append(f"target.ratings_file={path}")
        source = f"the {size} synthetic set of sgmcmc.data.synthetic_ratings (seed 0)"
        floors = noise_floors(size, folds, config["target"]["n_folds"])
    steps_per_round = config["target"]["gibbs_every"]
    from sgmcmc.targets import make_target

    params = {key: value for key, value in config["target"].items() if key != "name"}
    fold_target = make_target("bpmf_movielens", **{**params, "ratings_file": None if real else str(path)})
    n_train = fold_target.n_data  # of fold 1 (the others differ by < 0.2%), for the notes
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    tuning = run_settings(paper, tuning_settings(grid, folds, tune_rounds, steps_per_round, extra), args.jobs)
    factors, tuning_table = chosen_factors(tuning)
    results = run_settings(paper, settings(folds, rounds, burn_in_rounds, steps_per_round, factors, extra), args.jobs)
    trace = curves(paper, results, steps_per_round)
    floor = float(np.mean(list(floors.values()))) if floors else None
    draw(trace, paper.path / "fig_bpmf_rmse.png", burn_in_rounds, steps_per_round, floor)
    rows = final_rows(trace, results, floors)
    summary, text = table(rows, real)
    body = ("RMSE on the 1-5 scale, mean ± sd over folds:\n\n" + summary.to_markdown(index=False, floatfmt=".4f")
            + "\n\n" + text + "\n\nRuns:\n\n" + rows.to_markdown(index=False, floatfmt=".4g")
            + "\n\nThe optimisers tuned on each fold's validation split (final RMSE of the current point):\n\n"
            + tuning_table.to_markdown(index=False, floatfmt=".4g"))
    paper.write_summary(rows, "Chen, Fox & Guestrin (2014) Table 1: online BPMF",
                        notes(config, rounds, burn_in_rounds, steps_per_round, source, n_train, tune_rounds, factors,
                              grid), body=body)
    paper.finish({"smoke": args.smoke, "ratings": "real" if real else "synthetic", "folds": folds, "rounds": rounds,
                  "burn_in_rounds": burn_in_rounds, "steps_per_round": steps_per_round, "tune_rounds": tune_rounds,
                  "optimiser_factors": {name: {str(fold): factor for (other, fold), factor in factors.items()
                                               if other == name} for name in OPTIMISERS}, "jobs": args.jobs}, sys.argv)
    print(summary.to_string(index=False))
    print(text)
    print(paper.path)


if __name__ == "__main__":
    main()
