"""What every paper experiment shares: the command line (``--smoke``, ``--root``, ``--jobs``), config
composition through the same Hydra configs as ``run.py`` (``configs/experiment/*.yaml``), and running a
list of settings or the jobs of a sweep (:func:`multirun`) through the Python API (in parallel processes when
``--jobs`` > 1) into one :class:`~sgmcmc.paper.PaperFolder`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path
from typing import NoReturn

import matplotlib

matplotlib.use("Agg")

from sgmcmc.config import ConfigError  # noqa: E402
from sgmcmc.experiment import RunFailed, error_line, run_experiment  # noqa: E402
from sgmcmc.keys import validate_config  # noqa: E402
from sgmcmc.paper import PaperFolder  # noqa: E402
from sgmcmc_cli.sweep import expand  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO / "configs"
# Thread pools of BLAS and of numba (LDA's Gibbs kernels): one thread per process when sweeps' runs run in parallel.
THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")


@dataclass(frozen=True)
class Setting:
    """One run of an experiment: Hydra overrides plus the labels it is reported under."""

    overrides: tuple
    labels: tuple  # ((key, value), ...): what the summary groups by

    @property
    def label_dict(self) -> dict:
        return dict(self.labels)


def setting(overrides, **labels) -> Setting:
    return Setting(tuple(overrides), tuple(labels.items()))


def parse_args(description: str, argv=None, **options) -> argparse.Namespace:
    """The shared options, plus ``name=(default, help)`` string options of the experiment's own."""
    parser = argparse.ArgumentParser(description=description)
    for name, (default, text) in options.items():
        parser.add_argument(f"--{name.replace('_', '-')}", default=default, help=text)
    parser.add_argument("--smoke", action="store_true", help="tiny settings that run in seconds (CI, make smoke)")
    parser.add_argument("--root", default="results/paper", help="folder that receives <figure-id>/<run-id>/")
    parser.add_argument("--jobs", type=int, default=2, help="runs in parallel processes (default 2)")
    return parser.parse_args(argv)


def integers(option: str, text: str) -> list[int]:
    """The comma-separated integers of ``--<option>``, or one line on stderr and exit 2."""
    try:
        values = [int(part) for part in str(text).split(",")]
    except ValueError:
        print(f"error: --{option.replace('_', '-')}={text!r}: expected integers separated by commas", file=sys.stderr)
        sys.exit(2)
    if any(value < 0 for value in values):
        print(f"error: --{option.replace('_', '-')}={text!r}: expected integers >= 0", file=sys.stderr)
        sys.exit(2)
    return values


def compose(overrides) -> dict:
    """The resolved config for ``overrides``, composed exactly as ``python run.py <overrides>`` would."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        config = hydra_compose(config_name="config", overrides=list(overrides))
        container = OmegaConf.to_container(config, resolve=True)
    container.pop("hydra", None)
    return container


def _run_one(overrides, runs_dir: str) -> tuple[str, str]:
    config = compose(list(overrides) + [f"run.results_dir={runs_dir}", "run.progress=false"])
    folder, status = run_experiment(config, argv=["run.py", *overrides])
    return str(folder), status


def fail(message: str, code: int) -> NoReturn:
    """One line on stderr, exit ``code``."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def check_configs(overrides_lists) -> None:
    """Every run's config composed and validated before anything runs; a config error is one line, exit 2."""
    try:
        for overrides in overrides_lists:
            validate_config(compose(overrides))
    except ConfigError as error:
        fail(str(error), 2)


@contextmanager
def one_thread_each():
    """Processes started inside get one BLAS and numba thread each (:data:`THREAD_VARIABLES`): parallel runs share
    the cores (oversubscribed OpenBLAS threads ran 10-20x slower)."""
    saved = {key: os.environ.get(key) for key in THREAD_VARIABLES}
    os.environ.update({key: "1" for key in THREAD_VARIABLES})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def run_in_processes(function, overrides_lists: list, runs_dir: str, jobs: int) -> list:
    """``function(overrides, runs_dir)`` for each list of overrides, results in order: here when ``jobs`` is 1, else in
    ``jobs`` fresh processes with one thread each (:func:`one_thread_each`; fresh, so that their BLAS reads it)."""
    if jobs <= 1 or len(overrides_lists) <= 1:
        return [function(overrides, runs_dir) for overrides in overrides_lists]
    with one_thread_each(), ProcessPoolExecutor(max_workers=jobs, mp_context=get_context("spawn")) as pool:
        return list(pool.map(function, overrides_lists, [runs_dir] * len(overrides_lists)))


def run_settings(paper: PaperFolder, settings: list[Setting], jobs: int = 1) -> list[tuple[Setting, dict]]:
    """Run every setting into ``paper.runs_dir``; return (setting, metrics.json) in the given order.

    A config error stops the whole experiment with one line (exit 2) before anything runs.
    """
    check_configs([item.overrides for item in settings])
    runs_dir = str(paper.runs_dir)
    if jobs > 1 and len(settings) > 1:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            outcomes = list(pool.map(_run_one, [s.overrides for s in settings], [runs_dir] * len(settings)))
    else:
        outcomes = [_run_one(s.overrides, runs_dir) for s in settings]
    results = []
    for item, (folder, status) in zip(settings, outcomes):
        metrics = paper.record_run(Path(folder), status, {"overrides": list(item.overrides), **item.label_dict})
        results.append((item, metrics))
        print(f"  {status:<10} {' '.join(item.overrides)}", flush=True)
    return results


def load_samples(paper: PaperFolder, run_record: dict):
    """The ``theta`` array of a recorded run."""
    import numpy as np

    with np.load(paper.path / run_record["folder"] / "samples.npz") as data:
        return data["theta"]


def read_json(path: Path) -> dict:
    return json.loads(Path(path).read_text())


def multirun(paper: PaperFolder, experiment: str, sweep: str, overrides: list, jobs: int, extra: list = ()) -> list[Path]:
    """The runs of the sweep ``python run.py -m +experiment=<experiment> <overrides>`` (its jobs as Hydra's basic
    sweeper makes them: :func:`sgmcmc_cli.sweep.expand`), each run through the Python API into ``runs/<sweep>/``,
    ``jobs`` processes at a time (one BLAS and numba thread each) when ``jobs`` > 1; returns the run folders it wrote.
    A config error in any run stops the experiment with one line (exit 2) before anything runs; a run that failed
    stops it once all have run, with its line (exit 1)."""
    runs_dir = paper.runs_dir / sweep
    swept = [f"+experiment={experiment}", *overrides, "run.figures=false", *extra]
    try:
        job_overrides = expand(swept)
    except Exception as error:  # Hydra's grammar errors, a sweep the basic sweeper cannot run
        fail(f"sweep {sweep}: {str(error).strip().splitlines()[0]}", 2)
    print(f"  sweep {sweep}: {len(job_overrides)} runs of {' '.join(swept)}", flush=True)
    check_configs(job_overrides)
    outcomes = run_in_processes(_run_job, job_overrides, str(runs_dir), jobs)
    failed = [(job, line) for job, (_, status, line) in zip(job_overrides, outcomes) if status == "failed"]
    if failed:
        job, line = failed[0]
        fail(f"sweep {sweep} failed: {len(failed)} of {len(job_overrides)} runs ({' '.join(job)}: {line})", 1)
    return sorted(path for path in runs_dir.iterdir() if path.is_dir())


def _run_job(overrides, runs_dir: str) -> tuple[str | None, str, str | None]:
    """One run of a sweep: (its folder or None, its status, the one line of a failure), as a sweep's job of
    ``run.py`` records it (an exception is a failed run, not the end of the sweep)."""
    try:
        folder, status = _run_one(overrides, runs_dir)
    except ConfigError as error:
        return None, "failed", str(error)
    except RunFailed as error:
        return str(error.folder), "failed", error.error
    except Exception as error:
        return None, "failed", error_line(error)
    return folder, status, None


def read_run(folder: Path) -> tuple[dict, str]:
    """A sweep run's resolved config and status ("failed" when it never wrote ``metrics.json``)."""
    import yaml

    config = yaml.safe_load((folder / "config.yaml").read_text())
    metrics_path = folder / "metrics.json"
    return config, read_json(metrics_path)["status"] if metrics_path.is_file() else "failed"


def record(paper: PaperFolder, folder: Path, status: str, setting: dict) -> dict:
    """Record a sweep run in ``paper``; its metrics (empty ones for a run that never finished)."""
    if status == "failed" and not (folder / "metrics.json").is_file():
        paper.runs.append({"folder": str(folder.relative_to(paper.path)), "status": status, **setting})
        return {"final": {}, "n_samples": 0}
    return paper.record_run(folder, status, setting)
