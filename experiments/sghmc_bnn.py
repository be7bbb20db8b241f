"""Chen, Fox & Guestrin (2014) §4.2, the Bayesian neural network on MNIST (SPEC T11, E11): test error of the averaged
predictive against epochs for SGD, SGD with momentum, SGLD and SGHMC, several seeds each.

Every run is ``python run.py target=bnn_mnist sampler=<method> seed=<s>`` at the authors' settings: 100 steps per
epoch of minibatches of 500, the training set (shuffled once by the split seed) swept in order
(``target.minibatch_order=sweep``), the first epoch without the injected noise (``run.noise_free_steps``: the code's
``start_sample = 1``), the Gamma(1, 1) precisions of W1, b1, W2 and b2 (one each, the code's gibbs-sep)
Gibbs-resampled once per epoch (the optimisers keep them at 1), and the predictive probabilities of the test set
averaged over one sample per epoch after the burn-in epochs (the optimisers: the current point's own).

Each method's learning rate is chosen first on the validation split (SPEC §4.14, symmetric tuning): one grid
:data:`LEARNING_RATES` of the code's per-example η (the authors give 0.1 for SGHMC) for every method, seed 0,
``--tune-epochs`` epochs, the predictive scored on the validation images (``target.evaluate_on=validation``); the η with
the lowest final validation error is run on every seed. η/N is SGD's and SGLD's ε; the momentum methods take
ε = √(η/N) and C = α/ε with the code's momentum decay α = 0.01 (not tuned). Writes ``fig_bnn_test_error.png`` (test error and test log-likelihood against epochs, mean over
seeds with the range), ``summary.csv`` / ``summary.md`` (final values per method, mean ± sd over seeds, and the
comparisons as verdicts from the seed spread, SPEC §4.15) under ``results/paper/sghmc-bnn/<run-id>/``.

    python -m experiments.sghmc_bnn [--smoke] [--root results/paper] [--jobs 2] [--seeds 0,1,2] [--epochs 800]
                                    [--burn-in-epochs 50] [--tune-epochs 50]
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
from sgmcmc.diagnostics.comparison import compare
from sgmcmc.paper import PaperFolder
from sgmcmc.targets import make_target

FIGURE_ID = "sghmc-bnn"
METHODS = {"sgd": "SGD", "sgd_momentum": "SGD with momentum", "sgld": "SGLD", "sghmc": "SGHMC"}
COLORS = {"SGD": "tab:gray", "SGD with momentum": "tab:orange", "SGLD": "tab:blue", "SGHMC": "tab:red"}
# SPEC §4.14: one grid for every method, the code's per-example learning rate η (its SGHMC demo: 0.1), and its momentum
# decay α for the momentum methods
LEARNING_RATES = (0.025, 0.05, 0.1, 0.2, 0.4)
MOMENTUM_DECAY = 0.01
# the authors' training: the fixed shuffled minibatches swept in order, the first epoch without noise (start_sample = 1)
AUTHORS = ["target.minibatch_order=sweep"]
# --smoke (CI): 1,000 training and 500 test images, minibatches of 100 (10 steps per epoch), 4 epochs, 2 burn-in; a
# grid of two rates tuned over 2 epochs
SMOKE = dict(epochs=4, burn_in_epochs=2, tune_epochs=2, grid=(0.05, 0.1),
             overrides=["target.max_train=1000", "target.max_test=500", "target.batch_size=100"])


def rate_overrides(name: str, rate: float, n_data: int) -> list[str]:
    """The sampler's keys for the code's learning rate η (per example) on N training images: ε = η/N for SGD and SGLD;
    ε = √(η/N) and C = α/ε for SGD with momentum and SGHMC (the code's v ← (1 − α)v − η∇Ũ/N + N(0, 2αη/N))."""
    eta = rate / n_data
    if name in ("sgd", "sgld"):
        return [f"sampler.step_size={eta:.6g}"]
    step = math.sqrt(eta)
    return [f"sampler.step_size={step:.6g}", f"sampler.friction={MOMENTUM_DECAY / step:.6g}"]


def common(epochs: int, burn_in_epochs: int, steps_per_epoch: int, extra: list) -> list[str]:
    """The overrides of every run: its epochs as steps, a trace row per epoch, one kept sample (the last step's) for a
    sampler, the authors' training."""
    n_steps, burn_in = epochs * steps_per_epoch, burn_in_epochs * steps_per_epoch
    return [f"run.n_steps={n_steps}", f"run.burn_in={burn_in}", f"run.eval_every={steps_per_epoch}",
            f"run.thin={max(1, n_steps - burn_in)}", f"run.noise_free_steps={steps_per_epoch}", *AUTHORS, *extra]


def tuning_settings(grid, epochs: int, steps_per_epoch: int, n_data: int, extra: list) -> list:
    """One run per (method, η) at seed 0, scored on the validation split; burn-in half its epochs."""
    shared = common(epochs, epochs // 2, steps_per_epoch, extra)
    return [setting(["target=bnn_mnist", f"sampler={name}", "seed=0", *rate_overrides(name, rate, n_data), *shared,
                     "target.evaluate_on=validation"], method=label, rate=rate)
            for name, label in METHODS.items() for rate in grid]


def chosen_rates(results, grid) -> tuple[dict, pd.DataFrame]:
    """Each method's η with the lowest final validation error among its completed runs (the authors' 0.1 where none
    completed), and the table of every tuning run."""
    rows = [{"method": item.label_dict["method"], "rate": item.label_dict["rate"], "status": metrics.get("status"),
             "validation_error": metrics.get("final", {}).get("test_error")} for item, metrics in results]
    table = pd.DataFrame(rows)
    chosen = {}
    for name, label in METHODS.items():
        part = table[(table.method == label) & (table.status == "completed") & table.validation_error.notna()]
        chosen[name] = float(part.loc[part.validation_error.idxmin(), "rate"]) if len(part) else 0.1
    return chosen, table


def settings(seeds: list[int], epochs: int, burn_in_epochs: int, steps_per_epoch: int, n_data: int, rates: dict,
             extra: list) -> list:
    """One run per (method, seed) at the method's chosen η."""
    shared = common(epochs, burn_in_epochs, steps_per_epoch, extra)
    return [setting(["target=bnn_mnist", f"sampler={name}", f"seed={seed}", *rate_overrides(name, rates[name], n_data),
                     *shared], method=label, seed=seed)
            for name, label in METHODS.items() for seed in seeds]


def curves(paper: PaperFolder, results, steps_per_epoch: int) -> pd.DataFrame:
    """Every run's trace (test error and log-likelihood per epoch) with its method and seed: ``results`` are the last
    runs recorded (run_settings records the runs in the settings' order)."""
    frames = []
    for (item, _), run in zip(results, paper.runs[len(paper.runs) - len(results):]):
        labels = item.label_dict
        trace_path = paper.path / run["folder"] / "trace.csv"
        if not trace_path.is_file():
            continue
        trace = pd.read_csv(trace_path).dropna(subset=["test_error"])
        trace["epoch"] = trace["step"] / steps_per_epoch
        frames.append(trace.assign(method=labels["method"], seed=labels["seed"]))
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def draw(trace: pd.DataFrame, path: Path, burn_in_epochs: int, steps_per_epoch: int, batch_size: int) -> None:
    """Test error (left) and mean test log-likelihood (right) against epochs: the mean over seeds, the range shaded."""
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for column, axis in zip(("test_error", "test_log_likelihood"), axes):
        for method in METHODS.values():
            part = trace[trace.method == method]
            if part.empty:
                continue
            grouped = part.groupby("epoch")[column]
            mean, low, high = grouped.mean(), grouped.min(), grouped.max()
            axis.plot(mean.index, mean.values, color=COLORS[method], label=f"{method} ({part.seed.nunique()} seeds)")
            axis.fill_between(mean.index, low.values, high.values, color=COLORS[method], alpha=0.2, linewidth=0)
        axis.axvline(burn_in_epochs, color="black", linewidth=0.6, linestyle=":")
        axis.set_xlabel(f"epoch ({steps_per_epoch} minibatches of {batch_size})")
        axis.grid(alpha=0.3)
    errors = trace.test_error.dropna() if len(trace) else pd.Series(dtype=float)
    if len(errors):  # the paper's figure: the error range of the converged methods
        axes[0].set_ylim(max(0.0, errors.min() * 0.9), min(1.0, max(errors.quantile(0.5) * 2.5, errors.min() * 1.5)))
    axes[0].set_ylabel("test error of the averaged predictive")
    axes[1].set_ylabel("mean test log-likelihood")
    axes[0].legend(fontsize=8)
    figure.suptitle("SGHMC paper §4.2: Bayesian neural network 784-100-10 on MNIST (dotted: end of burn-in)")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def final_rows(trace: pd.DataFrame, results) -> pd.DataFrame:
    """One row per run: the last epoch's test error and log-likelihood, its status and speed."""
    rows = []
    for item, metrics in results:
        labels = item.label_dict
        part = trace[(trace.method == labels["method"]) & (trace.seed == labels["seed"])] if len(trace) else trace
        last = part.iloc[-1] if len(part) else None
        rows.append({**labels, "status": metrics.get("status"),
                     "epochs": None if last is None else float(last.epoch),
                     "test_error": None if last is None else float(last.test_error),
                     "test_log_likelihood": None if last is None else float(last.test_log_likelihood),
                     "best_test_error": None if last is None else float(part.test_error.min()),
                     "steps_per_second": metrics.get("steps_per_second")})
    return pd.DataFrame(rows)


def verdicts(rows: pd.DataFrame) -> str:
    """Final test error per method (mean ± sd over seeds) and the comparisons as verdicts from the spread."""
    done = rows[rows.status == "completed"]
    values = {method: part.test_error.to_numpy() for method, part in done.groupby("method", sort=False)}
    lines = ["Final test error of the averaged predictive (the optimisers: of the current point), mean ± sd over seeds:"]
    for method, errors in values.items():
        spread = errors.std(ddof=1) if errors.size > 1 else math.nan
        lines.append(f"- {method}: {errors.mean():.4f} ± {spread:.4f} ({errors.size} seeds)")
    lines.append("")
    lines.append("Comparisons (\"below\" only past 2 combined standard errors over seeds, else tie; SPEC §4.15):")
    for first, second in (("SGHMC", "SGD with momentum"), ("SGHMC", "SGLD"), ("SGHMC", "SGD"), ("SGLD", "SGD")):
        if first in values and second in values:
            lines.append(f"- {compare(values[first], values[second]).sentence(first, second, digits=3)}")
    return "\n".join(lines)


def notes(config: dict, epochs: int, burn_in_epochs: int, tune_epochs: int, grid, rates: dict) -> str:
    """The settings paragraph, from the composed config and the tuning (no number typed in by hand), and the authors'
    own note."""
    target = config["target"]
    edges = (min(grid), max(grid))
    chosen = ", ".join(f"{METHODS[name]} {rate:g}" + (" (edge of the grid)" if rate in edges else "")
                       for name, rate in rates.items())
    return f"""
Settings (SPEC T11, from the runs' config): {target['n_hidden']} sigmoid hidden units, softmax output, pixels/256,
the 60,000 training images shuffled by split seed {target['split_seed']} into {target['n_validation']} validation and
the rest for training, swept in that order in minibatches of {target['batch_size']} (the authors' fixed shuffled
minibatches), the first epoch without the injected noise (the code's start_sample = 1), θ₀ ~ N(0,
{target['initial_scale']}²) for the weights and 0 for the biases; W1, b1, W2, b2 each have a
Gamma({target['hyper_shape']:g}, {target['hyper_rate']:g}) precision, Gibbs-resampled once per epoch (the optimisers
keep λ = 1, the code's weight decay). {epochs} epochs, the predictive averaged over one sample per epoch after epoch
{burn_in_epochs}. Learning rates (the code's per-example η; ε = η/N for SGD and SGLD, ε = √(η/N) and C = α/ε with
α = {MOMENTUM_DECAY:g} for the momentum methods) chosen on the validation split from one grid for every method
({', '.join(f'{rate:g}' for rate in grid)}; seed 0, {tune_epochs} epochs, lowest final validation error; the tuning
table above): {chosen}.

The authors' README (tqchen/ML-SGHMC bayesnn/): "experiments of bayesian NN on SGHMC is not statistically significant
in terms of the performance of Bayesian-NN vs SGDMOM method ... by change different random seed".
"""


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv, seeds=("0,1,2", "seeds of every method"),
                      epochs=("800", "epochs (the paper: 800)"), burn_in_epochs=("50", "burn-in epochs (the paper: 50)"),
                      tune_epochs=("50", "epochs of each tuning run on the validation split"))
    smoke = SMOKE if args.smoke else None
    epochs = smoke["epochs"] if smoke else integers("epochs", args.epochs)[0]
    burn_in_epochs = smoke["burn_in_epochs"] if smoke else integers("burn_in_epochs", args.burn_in_epochs)[0]
    tune_epochs = smoke["tune_epochs"] if smoke else integers("tune_epochs", args.tune_epochs)[0]
    grid = smoke["grid"] if smoke else LEARNING_RATES
    if not 0 <= burn_in_epochs < epochs:
        print(f"error: --burn-in-epochs={burn_in_epochs} must be below --epochs={epochs}", file=sys.stderr)
        sys.exit(2)
    extra = smoke["overrides"] if smoke else []
    seeds = integers("seeds", args.seeds)
    config = compose(["target=bnn_mnist", "sampler=sghmc", *extra])
    try:  # the data once, up front: without MNIST one line, before any folder is made
        target = make_target("bnn_mnist", **{key: value for key, value in config["target"].items() if key != "name"})
    except DataError as error:
        print(f"error: data_dir: {error}", file=sys.stderr)
        sys.exit(2)
    steps_per_epoch = max(1, target.n_data // target.batch_size)
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    tuning = run_settings(paper, tuning_settings(grid, tune_epochs, steps_per_epoch, target.n_data, extra), args.jobs)
    rates, tuning_table = chosen_rates(tuning, grid)
    results = run_settings(paper, settings(seeds, epochs, burn_in_epochs, steps_per_epoch, target.n_data, rates, extra),
                           args.jobs)
    trace = curves(paper, results, steps_per_epoch)
    draw(trace, paper.path / "fig_bnn_test_error.png", burn_in_epochs, steps_per_epoch, config["target"]["batch_size"])
    rows = final_rows(trace, results)
    text = verdicts(rows)
    body = (rows.to_markdown(index=False, floatfmt=".4g") + "\n\n" + text + "\n\nTuning on the validation split "
            "(seed 0; the final validation error of the averaged predictive, the optimisers' of their point):\n\n"
            + tuning_table.to_markdown(index=False, floatfmt=".4g"))
    paper.write_summary(rows, "Chen, Fox & Guestrin (2014) §4.2: Bayesian neural network on MNIST",
                        notes(config, epochs, burn_in_epochs, tune_epochs, grid, rates), body=body)
    paper.finish({"smoke": args.smoke, "seeds": seeds, "epochs": epochs, "burn_in_epochs": burn_in_epochs,
                  "tune_epochs": tune_epochs, "learning_rates": rates, "steps_per_epoch": steps_per_epoch,
                  "jobs": args.jobs}, sys.argv)
    print(text)
    print(paper.path)


if __name__ == "__main__":
    main()
