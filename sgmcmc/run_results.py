"""Result folders read back: a run folder (:mod:`sgmcmc.experiment`) as a :class:`RunResult`, a sweep folder
(``manifest.json``, :mod:`sgmcmc_cli.sweep`) as a :class:`SweepResult`, and both as ``arviz.InferenceData``.

``load_run(folder).to_inference_data()`` has the groups

- ``posterior``: ``theta`` (chain, draw, parameter), as samples.npz holds it; the ``draw`` coordinate is the step
  of each kept sample (burn_in + thin·k, k = 1, 2, …), ``parameter`` is samples.npz's ``parameter_names`` where a
  user model wrote them, else 0, 1, …, dim − 1. Its attrs: the run's identity (below) and metrics.json's scalar
  entries and ``final`` entries, flattened (``status``, ``steps_done``, ``final.kl_pq``, …; null values left out);
- ``sample_stats`` (chain, draw): ``step_size`` and, where the sampler reports them, ``xi`` (the thermostat of SGNHT,
  CCAdL, …), ``clipped`` (clipped noise variances), ``acceptance_rate`` (ArviZ's name for samples.npz's
  ``accept_probability``: HMC's and SGHMC-MH's Metropolis test)
  and ``reflected`` (coordinates reflected at a boundary), as :class:`~sgmcmc.observers.SampleStore` kept them. A
  folder written before samples.npz held them gets the step sizes from the config's schedule (the step to t uses
  ε_{t−1}) and nothing else;
- ``trace`` (step): trace.csv's columns, indexed by its ``step`` column (a group outside ArviZ's scheme, which
  ArviZ 0.23 accepts without a warning).

A group without variables (no sample statistics, no trace rows) is left out, as ArviZ leaves out empty groups.

Every group's attrs hold the run's identity: ``sampler``, ``target``, ``schedule``, ``seed``, ``git_commit``,
``git_dirty`` (0/1), ``sgmcmc_version``, ``created_at`` (when the run started), ``inference_library`` = ``sgmcmc``, ``arviz_version``
and ``run_folder``.

A run that failed or was interrupted loads with the samples it has: samples.npz, else (a killed run, which wrote
none) the kept samples of its newest usable checkpoint, else none (zero draws, and dimension 0 when nothing says
it). A folder without config.yaml is not a run folder: a one-line :class:`ValueError`.

``load_sweep(folder)`` reads the sweep's manifest: ``runs`` maps each job number with a run folder to its
:class:`RunResult` (``skipped``: the other jobs, with why), ``table()`` is :func:`sgmcmc.collect.collect`'s
table, ``to_inference_data()`` one InferenceData per job, and ``to_inference_data(combined=True)`` one with the runs
stacked along a new first dimension ``run`` (its coordinate the job numbers, with each job's ``overrides`` and
``run_folder`` as coordinates along it): ``posterior`` and the ``sample_stats`` that every run has need the same
shapes and coordinates in every run (else a one-line ValueError naming the first difference); ``trace`` rows (when
every run has some) are aligned on their steps, a step or column that a run lacks is NaN there.

Command line: ``python -m sgmcmc.run_results <run or sweep folder> [--netcdf]`` prints ``arviz.summary`` of the
posterior (per job for a sweep) and, with ``--netcdf``, writes each run's InferenceData to ``samples.nc`` in its
folder.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import arviz as az
import numpy as np
import pandas as pd
import xarray as xr
import yaml

from sgmcmc.observers import SampleStore
from sgmcmc.results import MANIFEST

NETCDF = "samples.nc"
# samples.npz's names that ArviZ's schema names otherwise (its sample_stats conventions: PyMC's and Stan's
# converters write the Metropolis acceptance probability as acceptance_rate)
ARVIZ_NAMES = {"accept_probability": "acceptance_rate"}
SUMMARY_MAX_PARAMETERS = 50  # the command line's az.summary shows at most this many parameters
PARAMETER_DIM = "parameter"
INFERENCE_LIBRARY = "sgmcmc"
# the sample statistics samples.npz may hold besides theta (and parameter_names)
SAMPLE_STATISTICS = ("step_size", *SampleStore.STATISTICS)


@dataclass
class RunResult:
    """One run folder's contents. ``samples`` is (n_chains, n_draws, dim); ``sample_stats`` maps each known
    statistic to a (n_chains, n_draws) array; ``draw_steps`` (n_draws,) is the step of each draw; ``metrics`` is
    empty when the run never wrote metrics.json (killed, or still running); ``samples_source`` names the file the
    samples came from (samples.npz, checkpoint.npz or checkpoint.prev.npz), None when there were none."""

    folder: Path
    config: dict
    metrics: dict
    provenance: dict
    trace: pd.DataFrame
    samples: np.ndarray
    sample_stats: dict
    draw_steps: np.ndarray
    parameter_names: Optional[np.ndarray] = None
    samples_source: Optional[str] = None

    @property
    def status(self) -> str:
        """metrics.json's status; ``interrupted`` for a run without one (killed, or still running)."""
        return self.metrics.get("status") or "interrupted"

    def attrs(self) -> dict:
        """The run's identity, as every group of its InferenceData carries it."""
        config, provenance = self.config, self.provenance
        attrs = {"sampler": config["sampler"]["name"], "target": config["target"]["name"],
                 "schedule": config["schedule"]["name"], "seed": config["seed"],
                 "git_commit": provenance.get("git_commit"), "git_dirty": provenance.get("git_dirty"),
                 "sgmcmc_version": provenance.get("sgmcmc_version"),
                 "created_at": provenance.get("started_utc"), "inference_library": INFERENCE_LIBRARY,
                 "arviz_version": az.__version__, "run_folder": str(self.folder)}
        return _netcdf_attrs(attrs)

    def metric_attrs(self) -> dict:
        """metrics.json's scalar entries and its ``final`` entries, flattened (``final.kl_pq``), nulls left out."""
        if not self.metrics:
            return {}
        flat = pd.json_normalize(self.metrics, sep=".").iloc[0].to_dict()
        scalars = (str, int, float, bool, np.number, np.bool_)
        return _netcdf_attrs({key: value for key, value in flat.items() if isinstance(value, scalars)})

    def to_inference_data(self) -> az.InferenceData:
        """The run as ``arviz.InferenceData`` (groups posterior, sample_stats, trace: see the module's docstring)."""
        n_chains, n_draws, dim = self.samples.shape
        parameters = self.parameter_names if self.parameter_names is not None else np.arange(dim)
        coords = {"chain": np.arange(n_chains), "draw": self.draw_steps}
        attrs = self.attrs()
        posterior = xr.Dataset({"theta": (("chain", "draw", PARAMETER_DIM), self.samples)},
                               coords={**coords, PARAMETER_DIM: parameters}, attrs={**attrs, **self.metric_attrs()})
        sample_stats = xr.Dataset({ARVIZ_NAMES.get(name, name): (("chain", "draw"), values)
                                   for name, values in self.sample_stats.items()}, coords=coords, attrs=attrs)
        trace = self.trace.set_index("step").to_xarray() if "step" in self.trace else xr.Dataset(coords={"step": []})
        trace.attrs = dict(attrs)
        return az.InferenceData(posterior=posterior, sample_stats=sample_stats, trace=trace)

    def to_netcdf(self, path: str | Path | None = None) -> Path:
        """Write :meth:`to_inference_data` as netCDF to ``path`` (default ``samples.nc`` in the run folder),
        atomically (a temporary name, then a rename: also over a file that a reader still has open); return the
        path."""
        from sgmcmc.results import _atomic

        path = Path(path) if path is not None else self.folder / NETCDF
        data = self.to_inference_data()
        _atomic(path, lambda temporary: data.to_netcdf(str(temporary)))
        return path


@dataclass
class SweepResult:
    """A sweep folder: its manifest, ``runs`` {job number: :class:`RunResult`} of the jobs with a run folder,
    ``skipped`` {job number: why it has none} of the others, and ``overrides`` {job number: its overrides}."""

    folder: Path
    manifest: dict
    runs: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    overrides: dict = field(default_factory=dict)

    def table(self) -> pd.DataFrame:
        """One row per run below the sweep folder and per job of its manifest (:func:`sgmcmc.collect.collect`)."""
        from sgmcmc.collect import collect

        return collect(self.folder)

    def to_inference_data(self, combined: bool = False):
        """{job number: InferenceData}; with ``combined``, one InferenceData of the runs stacked along ``run`` (see
        the module's docstring; a one-line ValueError when their shapes or coordinates differ)."""
        datasets = {job: run.to_inference_data() for job, run in self.runs.items()}
        if not combined:
            return datasets
        if not datasets:
            raise ValueError(f"{self.folder}: no job of the sweep has a run folder, nothing to combine")
        return _stack_runs(datasets, self.overrides, {job: str(run.folder) for job, run in self.runs.items()})


def load_run(folder: str | Path) -> RunResult:
    """Read a run folder (see the module's docstring); a one-line FileNotFoundError or ValueError when ``folder`` is
    not one."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    config = _read(folder / "config.yaml", yaml.safe_load, required="not a run folder (no config.yaml)")
    if not isinstance(config, dict) or not {"sampler", "target", "schedule", "run", "seed"} <= set(config):
        raise ValueError(f"{folder / 'config.yaml'} is not a run's config (it needs sampler, target, schedule, run "
                         "and seed)")
    provenance = _read(folder / "provenance.json", json.loads) or {}
    metrics = _read(folder / "metrics.json", json.loads) or {}
    arrays, source = _kept_arrays(folder, config)
    run = config["run"]
    n_chains = int(run["n_chains"])
    samples = arrays.get("theta", np.empty((n_chains, 0, 0)))
    n_draws = samples.shape[1]
    draw_steps = run["burn_in"] + run.get("thin", 1) * np.arange(1, n_draws + 1)
    sample_stats = {}
    for name in SAMPLE_STATISTICS:
        if name in arrays:
            sample_stats[name] = np.broadcast_to(arrays[name], samples.shape[:2]).copy()
    if "step_size" not in sample_stats and n_draws:  # an older folder: the schedule's ε_{t−1} of each draw's step t
        sample_stats = {"step_size": np.broadcast_to(_schedule_step_sizes(config, draw_steps), samples.shape[:2]).copy(),
                        **sample_stats}
    names = arrays.get("parameter_names")
    return RunResult(folder=folder, config=config, metrics=metrics, provenance=provenance, trace=_read_trace(folder),
                     samples=samples, sample_stats=sample_stats, draw_steps=draw_steps,
                     parameter_names=None if names is None else np.asarray(names).astype(str), samples_source=source)


def load_sweep(folder: str | Path) -> SweepResult:
    """Read a sweep folder's manifest.json and each job's run folder (also one moved below ``folder``); a one-line
    FileNotFoundError or ValueError when ``folder`` is not a sweep folder."""
    from sgmcmc.collect import _find_run

    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: no such folder")
    manifest = _read(folder / MANIFEST, json.loads, required=f"not a sweep folder (no {MANIFEST})")
    if not isinstance(manifest, dict) or not isinstance(manifest.get("jobs"), list):
        raise ValueError(f"{folder / MANIFEST} is not a sweep manifest (no list of jobs)")
    sweep = SweepResult(folder=folder, manifest=manifest)
    for job in manifest["jobs"]:
        number = int(job["job"])
        sweep.overrides[number] = list(job.get("overrides", []))
        run = _find_run(job.get("run_folder"), folder)
        if run is None:
            sweep.skipped[number] = f"{job.get('status')}: {job.get('error') or 'no run folder'}"
        else:
            sweep.runs[number] = load_run(run)
    return sweep


def _read(path: Path, parse, required: Optional[str] = None):
    """``parse`` of the file's text; None when it is missing (a ValueError saying ``required`` if it must exist) and
    a one-line ValueError when it cannot be parsed."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        if required is not None:
            raise ValueError(f"{path.parent} is {required}") from None
        return None
    try:
        return parse(text)
    except (ValueError, yaml.YAMLError) as error:
        raise ValueError(f"{path} is unreadable: {str(error).strip().splitlines()[0]}") from None


def _kept_arrays(folder: Path, config: dict) -> tuple[dict, Optional[str]]:
    """samples.npz's arrays, else those of the newest usable checkpoint's sample store (a killed run), else none;
    and the file they came from."""
    if (folder / "samples.npz").is_file():
        try:
            with np.load(folder / "samples.npz", allow_pickle=False) as archive:
                return {name: archive[name] for name in archive.files}, "samples.npz"
        except Exception as error:  # a truncated or corrupt archive (zipfile's, numpy's or zlib's errors)
            raise ValueError(f"{folder / 'samples.npz'} is unreadable: "
                             f"{(str(error).strip().splitlines() or [type(error).__name__])[0]}") from None
    from sgmcmc.checkpoint import CheckpointError, config_hash, load_latest

    if not any(folder.glob("checkpoint*.npz")):
        return {}, None
    try:
        checkpoint, name = load_latest(folder, config_hash(config))
    except CheckpointError as error:  # a killed run whose checkpoints cannot be used: say so, not "no draws"
        raise ValueError(f"{folder}: no samples.npz, and its checkpoint is unusable ({error})") from None
    prefix = f"observer.{SampleStore.name}."
    arrays = {key[len(prefix):]: value for key, value in checkpoint.arrays.items() if key.startswith(prefix)}
    if "samples" not in arrays:
        return {}, None
    arrays["theta"] = arrays.pop("samples")
    return arrays, name


def _schedule_step_sizes(config: dict, steps: np.ndarray) -> np.ndarray:
    """ε_{t−1} of the config's schedule for each step t (the step size of the step that reached t)."""
    from sgmcmc.schedules import make_schedule

    parameters = {key: value for key, value in config["schedule"].items() if key != "name"}
    schedule = make_schedule(config["schedule"]["name"], config["sampler"]["step_size"], config["run"]["n_steps"],
                             **parameters)
    return np.array([schedule(int(t) - 1) for t in steps], dtype=float)


def _read_trace(folder: Path) -> pd.DataFrame:
    """trace.csv, or an empty table when it is missing or has no rows."""
    try:
        return pd.read_csv(folder / "trace.csv")
    except (FileNotFoundError, pd.errors.EmptyDataError):
        return pd.DataFrame()
    except (ValueError, pd.errors.ParserError) as error:
        raise ValueError(f"{folder / 'trace.csv'} is unreadable: {str(error).strip().splitlines()[0]}") from None


def _netcdf_attrs(attrs: dict) -> dict:
    """Attributes netCDF can store: nulls left out, bools as 0/1, numpy scalars as Python numbers."""
    out = {}
    for key, value in attrs.items():
        if value is None or (isinstance(value, float) and np.isnan(value)):
            continue
        if isinstance(value, (bool, np.bool_)):
            value = int(value)
        elif isinstance(value, np.generic):
            value = value.item()
        out[key] = value
    return out


def _stack_runs(datasets: dict, overrides: dict, folders: dict) -> az.InferenceData:
    """The runs' InferenceData stacked along a new dimension ``run`` (see :meth:`SweepResult.to_inference_data`)."""
    jobs = list(datasets)
    first = jobs[0]
    common_stats = set.intersection(*(set(data.sample_stats.data_vars) if "sample_stats" in data.groups() else set()
                                      for data in datasets.values()))
    groups = {"posterior": lambda data: data.posterior}
    if common_stats:
        groups["sample_stats"] = lambda data: data.sample_stats[sorted(common_stats)]
    for group, select in groups.items():
        reference = select(datasets[first])
        for job in jobs[1:]:
            difference = _difference(reference, select(datasets[job]))
            if difference is not None:
                raise ValueError(f"cannot combine the sweep's runs: {group} {difference} in job {first} but "
                                 f"{_difference(select(datasets[job]), reference)} in job {job}")
    run = pd.Index(jobs, name="run")
    along = {"overrides": ("run", [" ".join(overrides.get(job, [])) for job in jobs]),
             "run_folder": ("run", [folders[job] for job in jobs])}
    stacked = {}
    if all("trace" in data.groups() for data in datasets.values()):
        groups["trace"] = lambda data: data.trace
    for group, select in groups.items():
        parts = [select(datasets[job]) for job in jobs]
        stacked[group] = xr.concat(parts, dim=run, join="outer", combine_attrs="drop_conflicts").assign_coords(along)
    return az.InferenceData(**stacked)


def _difference(dataset: xr.Dataset, other: xr.Dataset) -> Optional[str]:
    """The first way ``dataset`` differs from ``other`` in shape or coordinates, said of ``dataset`` (its variable's
    sizes, or its coordinate's values); None when they agree."""
    for name, variable in dataset.data_vars.items():
        if name not in other or dict(variable.sizes) != dict(other[name].sizes):
            return f"{name} has sizes {dict(variable.sizes)}"
    for name, coordinate in dataset.coords.items():
        if name not in other.coords or not np.array_equal(coordinate.values, other.coords[name].values):
            values = coordinate.values
            shown = values if values.size <= 6 else f"[{values[0]} ... {values[-1]}] ({values.size} values)"
            return f"coordinate {name} is {shown}"
    return None


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sgmcmc.run_results",
                                     description="Print arviz.summary of a run folder's posterior (of every job's, "
                                                 "for a sweep folder with manifest.json).")
    parser.add_argument("folder", type=Path, help="a run folder (config.yaml, samples.npz, ...) or a sweep folder")
    parser.add_argument("--netcdf", action="store_true",
                        help=f"also write each run's InferenceData to {NETCDF} in its run folder")
    arguments = parser.parse_args(argv)
    try:
        if (arguments.folder / MANIFEST).is_file():
            sweep = load_sweep(arguments.folder)
            runs = {f"job {job} ({' '.join(sweep.overrides[job])})": run for job, run in sweep.runs.items()}
            for job, why in sweep.skipped.items():
                print(f"job {job} ({' '.join(sweep.overrides[job])}): no run folder ({why})")
        else:
            run = load_run(arguments.folder)
            runs = {str(run.folder): run}
    except (OSError, ValueError) as error:
        print(f"error: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return 2
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        for label, run in runs.items():
            print(f"{label}: {run.status}, {run.samples.shape[0]} chains x {run.samples.shape[1]} draws x "
                  f"dim {run.samples.shape[2]}")
            if run.samples.shape[1]:
                data = run.to_inference_data()
                if run.samples.shape[2] > SUMMARY_MAX_PARAMETERS:  # LDA's 385,100: minutes and a table nobody reads
                    print(f"(the first {SUMMARY_MAX_PARAMETERS} of {run.samples.shape[2]} parameters; "
                          f"az.summary(load_run(folder).to_inference_data()) gives any of them)")
                    data = data.isel(parameter=slice(0, SUMMARY_MAX_PARAMETERS), groups="posterior")
                print(az.summary(data))
            if arguments.netcdf:
                print(f"wrote {run.to_netcdf()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
