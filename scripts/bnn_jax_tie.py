#!/usr/bin/env python
"""The SGHMC paper's BNN written in jax.numpy (``examples/bnn_jax.py``) against the hand-written ``bnn_mnist``
(issue 35): the same network and prior (λ = 1 kept: ``target.gibbs_every=0``), SGHMC at the paper's setting
(configs/by_target/bnn_mnist/sghmc.yaml), one chain, 20 epochs of 100 minibatches of 500, the same seeds.

    python scripts/bnn_jax_tie.py [--seeds 0 1 2 3 4] [--epochs 20] [--burn-in-epochs 10]

Each run is ``python run.py …`` as a user types it; one sample per epoch after the burn-in is kept (``run.thin``), and
the test error of the predictive probabilities averaged over them is computed from each run's samples.npz by the same
evaluator for both (``bnn_mnist``'s forward pass and metrics: for the hand-written runs it is checked to give the
test error their metrics.json records). The verdict is SPEC §4.15's, paired by seed
(:func:`sgmcmc.diagnostics.comparison.compare_paired`). Writes results/jax/bnn-tie-<commit>.json and .md.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sgmcmc.diagnostics.comparison import compare, compare_paired  # noqa: E402
from sgmcmc.results import provenance  # noqa: E402
from sgmcmc.targets.bnn import bnn_mnist  # noqa: E402

STEPS_PER_EPOCH, BATCH = 100, 500
SAMPLER = ["sampler=sghmc", "sampler.step_size=1.41421e-3", "sampler.friction=7.07107", "sampler.noise_estimate=zero"]
MODELS = {
    "jax": ["target=custom", "target.model=examples/bnn_jax.py:BayesianNeuralNetwork", f"target.batch_size={BATCH}",
            "tune=off"],
    "by_hand": ["target=bnn_mnist", "target.gibbs_every=0"],
}


def run(model: str, seed: int, epochs: int, burn_in_epochs: int, folder: Path) -> tuple[Path, float]:
    """The run folder of ``model`` at ``seed`` and its wall time."""
    n_steps, burn_in = epochs * STEPS_PER_EPOCH, burn_in_epochs * STEPS_PER_EPOCH
    seeded = [f"+target.options.seed={seed}"] if model == "jax" else []
    command = [sys.executable, "run.py", *MODELS[model], *seeded, *SAMPLER, f"seed={seed}", "run.n_chains=1",
               f"run.n_steps={n_steps}", f"run.burn_in={burn_in}", f"run.thin={STEPS_PER_EPOCH}",
               f"run.eval_every={STEPS_PER_EPOCH}", "run.progress=false", f"run.results_dir={folder}"]
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
    seconds = time.perf_counter() - start
    (run_folder,) = folder.glob("*/metrics.json")
    return run_folder.parent, seconds


def test_error(network, run_folder: Path) -> tuple[float, int]:
    """The test error of the predictive probabilities averaged over the run's kept samples, and their number."""
    theta = np.load(run_folder / "samples.npz")["theta"][0]  # (samples, d): one chain
    prediction = np.mean(network.predict(theta), axis=0, keepdims=True)
    return float(network.predictive_metrics(prediction)["test_error"][0]), theta.shape[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--burn-in-epochs", type=int, default=10)
    parser.add_argument("--output", default="results/jax")
    arguments = parser.parse_args()
    network = bnn_mnist()
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        for seed in arguments.seeds:
            for model in MODELS:
                folder, seconds = run(model, seed, arguments.epochs, arguments.burn_in_epochs,
                                      Path(scratch) / f"{model}-{seed}")
                error, kept = test_error(network, folder)
                recorded = json.loads((folder / "metrics.json").read_text()).get("final", {}).get("test_error")
                if recorded is not None and abs(recorded - error) > 1e-12:
                    raise SystemExit(f"the evaluator gives {error} where the run's metrics.json has {recorded}")
                rows.append({"model": model, "seed": seed, "test_error": error, "samples_averaged": kept,
                             "wall_seconds": seconds})
                print(f"{model} seed {seed}: test error {error:.4f} ({kept} samples, {seconds:.0f} s)", flush=True)
    errors = {model: [row["test_error"] for row in rows if row["model"] == model] for model in MODELS}
    paired, unpaired = compare_paired(errors["jax"], errors["by_hand"]), compare(errors["jax"], errors["by_hand"])
    record = {"what": "test error of the BNN in jax.numpy against the hand-written bnn_mnist (scripts/bnn_jax_tie.py)",
              "epochs": arguments.epochs, "burn_in_epochs": arguments.burn_in_epochs, "sampler": SAMPLER,
              "models": MODELS, "runs": rows,
              "mean": {model: float(np.mean(values)) for model, values in errors.items()},
              "standard_error": {model: float(np.std(values, ddof=1) / np.sqrt(len(values)))
                                 for model, values in errors.items()},
              "paired": {"difference": paired.difference, "standard_error": paired.standard_error,
                         "verdict": paired.verdict},
              "unpaired": {"difference": unpaired.difference, "standard_error": unpaired.standard_error,
                           "verdict": unpaired.verdict},
              "provenance": provenance(arguments.seeds[0], sys.argv)}
    output = ROOT / arguments.output
    output.mkdir(parents=True, exist_ok=True)
    stem = output / f"bnn-tie-{record['provenance']['git_commit'][:8]}"
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [f"# The BNN in JAX against the hand-written one ({stem.name})", "",
             f"`python scripts/bnn_jax_tie.py --seeds {' '.join(map(str, arguments.seeds))} --epochs "
             f"{arguments.epochs} --burn-in-epochs {arguments.burn_in_epochs}`: SGHMC at the paper's setting, one chain, "
             f"{arguments.epochs} epochs, the predictive averaged over one sample per epoch after "
             f"{arguments.burn_in_epochs}; the prior's precisions kept at 1 on both.", "",
             "| seed | JAX test error | hand-written test error | JAX s | hand-written s |", "|---|---|---|---|---|"]
    for seed in arguments.seeds:
        jax_row, hand_row = (next(row for row in rows if row["model"] == model and row["seed"] == seed)
                             for model in MODELS)
        lines.append(f"| {seed} | {jax_row['test_error']:.4f} | {hand_row['test_error']:.4f} | "
                     f"{jax_row['wall_seconds']:.0f} | {hand_row['wall_seconds']:.0f} |")
    lines += ["", f"Mean: JAX {record['mean']['jax']:.4f} ± {record['standard_error']['jax']:.4f}, hand-written "
                  f"{record['mean']['by_hand']:.4f} ± {record['standard_error']['by_hand']:.4f} (s.e. over seeds).",
              f"Paired by seed: {paired.sentence('JAX', 'hand-written', digits=4)}.",
              f"Unpaired: {unpaired.sentence('JAX', 'hand-written', digits=4)}."]
    stem.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print(stem.with_suffix(".md").read_text())


if __name__ == "__main__":
    main()
