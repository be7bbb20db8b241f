"""Speed benchmarks (``make bench``), written to a JSON report; speed goals live here, never in the unit tests:

1. seconds per 10⁶ steps of SGHMC, SGNHT and CCAdL as run for Shang et al. (2015) Table 1 on the
   Normal-Gamma target, for 1 chain and for 10 vectorised chains;
2. logistic regression on MNIST 7 vs 9 (Fig. 2 settings, 4 chains): steps per second of each sampler with
   the full 100×100 running covariance (on its compiled data blocks where it has them: ``compiled``), and its
   ratio to the bare minibatch gradient (gather the minibatch,
   per-example gradients, their sum), the floor for this work (issue goal: CCAdL ≤ 4×). Needs the MNIST
   files (``SGMCMC_DATA``); skipped with the reason otherwise. ``make bench`` pins BLAS to one thread (the
   batched 100×100 products ran 10-20× slower with oversubscribed OpenBLAS threads on a busy 2-core machine).
   Each row also has the CPU-time ratio and how many of SGHMC's clipped draws needed an eigendecomposition
   (``sgmcmc.noise.clip_counters``; at h = 1e-4 every one does: each chain has negative eigenvalues every step).
3. discriminative RBMs (Fig. 3 settings, 1 chain, diagonal running estimate): passes over the data per
   second of each sampler on letter and connect-4 (skipped without the LIBSVM files);
4. every sampler config × every synthetic target at its defaults, 1 and 1,000 chains: chain-steps per
   second and peak numpy memory (``benchmarks.toy_grid``);
5. online LDA: seconds per 100 documents of SGLD, SGHMC, SGRLD, SGRHMC and the peak memory after 2,000 and
   10,000 documents (``benchmarks.lda``, one process each);
6. the SGHMC paper's real-data targets, the BNN on MNIST and BPMF (MovieLens-1M, or the full-size synthetic set):
   steps per second and peak memory of SGD, SGD with momentum, SGLD and SGHMC (``benchmarks.sghmc_real``);
7. the gradient estimators (minibatch, control variates, SVRG) with SGLD and SGHMC, and pSGLD, BAOAB, BADODAB: seconds
   per step against plain minibatch SGLD in the same run (``benchmarks.estimators``).

Each measurement runs ``--steps`` steps through :func:`sgmcmc.runner.run_chains` (the same path as a
real run: minibatch draw, per-example gradients, running covariance, clipping, reflection, sample
storage) after a short warm-up, and scales the wall time to 10⁶ steps.

    python -m benchmarks.run [--steps 20000] [--output results/bench/<run-id>.json] [--only PART ...]

``--only`` runs a subset of the parts (``table1``, ``logistic``, ``drbm``, ``lda``, ``toy``, ``sghmc``, ``estimators``; default all): the
report then holds only their keys, and ``parts`` lists what ran. The report goes to
``results/bench/<UTC time>-<hex>.json`` (``results/bench/LATEST`` names the newest).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from benchmarks.timing import timed, timed_steps
from sgmcmc.data import DataError
from sgmcmc.engine.blocks import kernel_of
from sgmcmc.noise import clip_counters
from sgmcmc.results import provenance
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

# the Table 1 settings of configs/sampler/*_shang2015.yaml at h = 0.001, A = 1
TABLE1_SAMPLERS = {
    "sghmc": dict(friction=1.0, noise_estimate="running", noise_clip=True, finite_population=False, integrator="theta_first"),
    "sgnht": dict(diffusion=1.0, noise_estimate="zero", integrator="theta_first"),
    "ccadl": dict(diffusion=1.0, noise_estimate="running", finite_population=False, integrator="theta_first"),
}
STEP_SIZE = 0.001
PARTS = ("table1", "logistic", "drbm", "lda", "toy", "sghmc", "estimators")


def seconds_per_million_steps(name: str, n_chains: int, n_steps: int) -> dict:
    target = make_target("normal_gamma", data_seed=0)
    sampler = make_sampler(name, target, **TABLE1_SAMPLERS[name])
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=0, eval_every=n_steps + 1, progress=False)
    run_chains(sampler, Constant(STEP_SIZE), RunOptions(n_steps=200, n_chains=n_chains, burn_in=0, progress=False),
               np.random.default_rng(1))  # warm-up
    start = time.perf_counter()
    outcome = run_chains(sampler, Constant(STEP_SIZE), settings, np.random.default_rng(0))
    elapsed = time.perf_counter() - start
    per_million = elapsed * 1e6 / n_steps
    return {"sampler": name, "n_chains": n_chains, "steps_timed": n_steps, "status": outcome.status,
            "seconds_per_million_steps": per_million,
            "seconds_per_million_samples": per_million / n_chains}


def logistic_step_costs(n_steps: int, n_chains: int = 4) -> list[dict]:
    """Seconds per step of each Fig. 2 sampler (h = 1e-4, A = 1, full running covariance) against the bare
    minibatch gradient on the same chains (wall and CPU time: ``cpu_*`` fields)."""
    from sgmcmc.targets.logistic_regression import logistic_mnist79

    target = logistic_mnist79()
    rng = np.random.default_rng(0)
    theta = target.initial_position(n_chains, rng)
    for _ in range(20):
        target.minibatch_gradient(theta, rng)

    def gradients():
        for _ in range(n_steps):
            target.minibatch_gradient(theta, rng)

    gradient, gradient_cpu = timed(gradients, n_steps)
    rows = []
    for name, params in TABLE1_SAMPLERS.items():
        before = clip_counters.snapshot()
        sampler = make_sampler(name, target, **params)
        step, cpu = timed_steps(sampler, theta, 1e-4, n_steps, warm_up=20)
        draws, fallbacks = np.subtract(clip_counters.snapshot(), before).tolist()
        rows.append({"sampler": name, "n_chains": n_chains, "steps_timed": n_steps, "seconds_per_step": step,
                     "compiled": kernel_of(sampler) is not None,
                     "steps_per_second": 1.0 / step, "bare_gradient_seconds": gradient, "ratio_to_bare_gradient": step / gradient,
                     "cpu_seconds_per_step": cpu, "bare_gradient_cpu_seconds": gradient_cpu,
                     "cpu_ratio_to_bare_gradient": cpu / gradient_cpu,
                     # full-covariance clipped draws (chain-steps, warm-up included) and those that needed eigh
                     "clipped_draws": draws, "clipped_draw_eigendecompositions": fallbacks})
    return rows


def drbm_passes_per_second(n_steps: int) -> list[dict]:
    """Passes per second (steps/s × n/N) of each Fig. 3 sampler on the DRBM, 1 chain, h = 1e-3, A = 10 (wall time;
    ``cpu_passes_per_second`` from the process's CPU time)."""
    from sgmcmc.targets.drbm import drbm

    rows = []
    for dataset in ("letter", "connect4"):
        target = drbm(dataset)
        for name, params in TABLE1_SAMPLERS.items():
            params = {**params, **({"running_form": "diagonal"} if params.get("noise_estimate") == "running" else {})}
            params = {key: (10.0 if key in ("friction", "diffusion") else value) for key, value in params.items()}
            theta = target.initial_position(1, np.random.default_rng(0))
            step, cpu = timed_steps(make_sampler(name, target, **params), theta, 1e-3, n_steps, warm_up=3)
            rows.append({"dataset": dataset, "sampler": name, "dim": target.dim, "steps_timed": n_steps,
                         "seconds_per_step": step, "passes_per_second": target.batch_size / target.n_data / step,
                         "cpu_seconds_per_step": cpu, "cpu_passes_per_second": target.batch_size / target.n_data / cpu})
    return rows


def new_report_path(folder: Path) -> Path:
    """``folder/<UTC time>-<hex>.json``, never an existing file."""
    import datetime
    import secrets

    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    return folder / f"{stamp}-{secrets.token_hex(4)}.json"


def _measure_part(report: dict, key: str, label: str, measure, describe, errors=(DataError, OSError)) -> None:
    """``report[key] = measure()`` (a list of rows, each printed by ``describe``), or ``{"skipped": reason}`` when the
    part's data are absent (``errors``)."""
    try:
        report[key] = measure()
    except errors as error:
        report[key] = {"skipped": str(error)}
        print(f"{label} skipped: {error}")
        return
    for row in report[key]:
        print(describe(row), flush=True)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20000, help="steps timed per measurement")
    parser.add_argument("--output", default=None, help="report path (default results/bench/<run-id>.json)")
    parser.add_argument("--only", nargs="+", choices=PARTS, default=list(PARTS), metavar="PART",
                        help=f"run only these parts ({', '.join(PARTS)}; default all)")
    args = parser.parse_args(argv)
    parts = [part for part in PARTS if part in args.only]
    report = {
        "benchmark": "normal_gamma Table 1 samplers (Shang et al. 2015)",
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                    "numpy": np.__version__},
        "provenance": provenance(seed=0, argv=None),
        "parts": parts,
    }
    estimate = None
    if "table1" in parts:
        rows = []
        for name in TABLE1_SAMPLERS:
            for n_chains in (1, 10):
                row = seconds_per_million_steps(name, n_chains, args.steps)
                rows.append(row)
                print(f"{name:6s} {n_chains:3d} chains: {row['seconds_per_million_steps']:7.1f} s per 10^6 steps, "
                      f"{row['seconds_per_million_samples']:6.1f} s per 10^6 samples", flush=True)
        table_cells = 12
        ten_chains = [r for r in rows if r["n_chains"] == 10]
        estimate = table_cells / len(ten_chains) * sum(r["seconds_per_million_samples"] * 1.1 for r in ten_chains)
        report["results"] = rows
        report["table1_estimate_seconds_one_process"] = estimate
    if "logistic" in parts:
        _measure_part(report, "logistic_mnist79", "logistic regression", lambda: logistic_step_costs(max(50, args.steps // 40)),
                      lambda row: f"logistic {row['sampler']:6s} {row['n_chains']} chains{' compiled' if row['compiled'] else ''}: "
                                  f"{row['steps_per_second']:7.1f} "
                                  f"steps/s, {row['ratio_to_bare_gradient']:.2f}x the bare minibatch gradient "
                                  f"(CPU time {row['cpu_ratio_to_bare_gradient']:.2f}x)"
                                  + (f"; {row['clipped_draw_eigendecompositions']} of {row['clipped_draws']} clipped draws "
                                     "eigendecomposed" if row["clipped_draws"] else ""))
    if "drbm" in parts:
        _measure_part(report, "drbm", "drbm", lambda: drbm_passes_per_second(max(10, args.steps // 400)),
                      lambda row: f"drbm {row['dataset']:8s} {row['sampler']:6s}: {row['passes_per_second']:.3f} passes/s "
                                  f"({row['seconds_per_step'] * 1e3:.1f} ms per step; CPU time {row['cpu_passes_per_second']:.3f} passes/s)")
    if "lda" in parts:
        from benchmarks.lda import run_all

        _measure_part(report, "lda", "lda", run_all,
                      lambda row: f"lda {row['sampler']:6s} {row['documents']:6d} documents: {row['seconds_per_100_documents']:.3f} "
                                  f"s per 100 documents, peak RSS {row['peak_rss_mb']:.0f} MB ({row['numba_threads']} numba threads)",
                      errors=(RuntimeError, OSError))  # e.g. the Wikipedia sample is absent offline
    if "toy" in parts:
        from benchmarks.toy_grid import run_all as toy_grid

        sampler_configs = sorted(path.stem for path in (Path(__file__).resolve().parent.parent / "configs" / "sampler").glob("*.yaml"))
        report["toy_targets"] = toy_grid(sampler_configs)
        measured = [row for row in report["toy_targets"] if "skipped" not in row]
        print(f"toy targets: {len(measured)} sampler x target x chains measurements, "
              f"{len(report['toy_targets']) - len(measured)} combinations refused by their config", flush=True)
    if "sghmc" in parts:
        from benchmarks.sghmc_real import run_all as sghmc_real

        _measure_part(report, "sghmc_real_data", "sghmc real data", lambda: sghmc_real(max(200, args.steps // 20)),
                      lambda row: f"{row['target']:14s} skipped: {row['skipped']}" if "skipped" in row else
                                  f"{row['target']:14s} {row['sampler']:12s}: {row['steps_per_second']:7.1f} steps/s, "
                                  f"{row['ratio_to_bare_gradient']:.2f}x the bare minibatch gradient, peak numpy "
                                  f"{row['peak_numpy_mb']:.0f} MB")
    if "estimators" in parts:
        from benchmarks.estimators import run_all as estimators

        _measure_part(report, "estimators", "estimators", lambda: estimators(max(200, args.steps // 10)),
                      lambda row: f"estimators {row['label']:30s} skipped: {row['skipped']}" if "skipped" in row else
                                  f"estimators {row['label']:30s}: {row['seconds_per_step'] * 1e6:8.1f} us/step, "
                                  f"{row['ratio_to_sgld']:.2f}x SGLD ({'engine' if row['engine'] else 'numpy steps'})")
    report["blas_threads"] = {key: os.environ.get(key) for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    path = Path(args.output) if args.output else new_report_path(Path("results/bench"))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    if args.output is None:
        (path.parent / "LATEST").write_text(path.name + "\n")
    if estimate is not None:
        print(f"Table 1 (12 cells x 10^6 samples, 10 chains) estimated {estimate:.0f} s in one process")
    print(path)


if __name__ == "__main__":
    main()
