"""What every paper experiment shares: the command line (``--smoke``, ``--root``, ``--jobs``), config
composition through the same Hydra configs as ``run.py`` (``configs/experiment/*.yaml``), and running a
list of settings (in parallel processes when ``--jobs`` > 1) into one :class:`~sgmcmc.paper.PaperFolder`.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from sgmcmc.config import ConfigError  # noqa: E402
from sgmcmc.paper import PaperFolder  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO / "configs"
# Thread pools of BLAS and of numba (LDA's Gibbs kernels): one thread per process when jobs run in parallel.
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
    from sgmcmc.experiment import run_experiment

    config = compose(list(overrides) + [f"run.results_dir={runs_dir}", "run.progress=false"])
    folder, status = run_experiment(config, argv=["run.py", *overrides])
    return str(folder), status


def run_settings(paper: PaperFolder, settings: list[Setting], jobs: int = 1) -> list[tuple[Setting, dict]]:
    """Run every setting into ``paper.runs_dir``; return (setting, metrics.json) in the given order.

    A config error stops the whole experiment with one line (exit 2) before anything runs.
    """
    try:
        from sgmcmc.keys import validate_config

        for item in settings:
            validate_config(compose(item.overrides))
    except ConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(2)
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
    """One Hydra multirun ``python run.py -m +experiment=<experiment> <overrides>`` into ``runs/<sweep>/``
    (the joblib launcher when ``jobs`` > 1); returns the run folders it wrote. A failing sweep stops the
    experiment with its last error line (exit 2 for a config error)."""
    runs_dir = paper.runs_dir / sweep
    command = [sys.executable, str(REPO / "run.py"), "-m", f"+experiment={experiment}", *overrides,
               f"run.results_dir={runs_dir}", "run.progress=false", "run.figures=false",
               f"hydra.sweep.dir={paper.path / 'sweeps' / sweep}"]
    if jobs > 1:
        command += ["hydra/launcher=joblib", f"hydra.launcher.n_jobs={jobs}"]
    command += list(extra)
    print(f"  sweep {sweep}: {' '.join(command[2:])}", flush=True)
    # parallel jobs share the cores: one BLAS/numba thread each (oversubscribed OpenBLAS threads ran 10-20x slower)
    env = {**os.environ, **({key: "1" for key in THREAD_VARIABLES} if jobs > 1 else {})}
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        lines = (result.stderr.strip() or result.stdout.strip() or "no output").splitlines()
        print(f"error: sweep {sweep} failed: {lines[-1]}", file=sys.stderr)
        sys.exit(result.returncode if result.returncode == 2 else 1)
    return sorted(path for path in runs_dir.iterdir() if path.is_dir())


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
