"""The manifest of a sweep (Hydra multirun): ``<hydra.sweep.dir>/manifest.json`` lists every job with its
number, overrides, run folder, status (completed / diverged / interrupted / failed, or pending while it has
not reported) and, when it did not complete, its one-line error.

Jobs may run in parallel processes or on other machines (joblib, Ray, SLURM): each job writes its own
record ``.jobs/<num>.json`` in the sweep folder, then merges all records into ``manifest.json`` under a file
lock; the end of the sweep merges once more and removes ``.jobs/`` (a sweep that never ended keeps it).
Every file is written atomically (temporary name, rename), so a reader never sees half a manifest. Remote
jobs need the sweep folder on a shared file system, as their run folders do. :mod:`sgmcmc_cli.hydra_callbacks`
calls this module from Hydra; the module itself keeps no Hydra state and only needs Hydra to parse a
sweep's overrides (:func:`expand`: the jobs in the basic sweeper's order).
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import shutil
from contextlib import contextmanager
from pathlib import Path

from sgmcmc.results import MANIFEST  # noqa: F401  (the manifest's file name, read by sgmcmc.collect too)

RECORDS = ".jobs"
PLAN = "plan.json"
PENDING, FAILED = "pending", "failed"
# exit code of a whole sweep (run.py -m): 1 if a job failed or never reported, else 130 if one was
# interrupted, else 0 (diverged runs are results of a sweep, not failures)
SWEEP_EXIT_FAILED, SWEEP_EXIT_INTERRUPTED = 1, 130
# the sweep folders finished in this process, in order: how a sweep that hydra.main ran tells run.py -m where its
# manifest is (hydra.main returns nothing of a multirun)
FINISHED: list[Path] = []


def error_line(error) -> str | None:
    """One line describing ``error`` (an exception or a message): the first line of its text, with the
    exception's type unless it is a :class:`~sgmcmc.config.ConfigError` (whose text names the key)."""
    if error is None:
        return None
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(error, BaseException):
        from sgmcmc.config import ConfigError

        if not isinstance(error, ConfigError) or not text:
            text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text


def overrides_parser(config_loader=None):
    """Hydra's override parser; with a config loader (``GlobalHydra.instance().config_loader()``) it can also expand
    ``glob(...)`` over config groups."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    return OverridesParser.create(config_loader=config_loader)


def expand(overrides: list[str], params: dict | None = None, config_loader=None) -> list[list[str]]:
    """The jobs of a multirun on Hydra's basic sweeper, in its order (job ``i`` gets list ``i``):
    ``hydra.sweeper.params`` first, then the command line's overrides, as the sweeper combines them (a key's last
    override wins, in the place of its first; the product of the keys' values, the last key varying fastest).
    A sweep the basic sweeper cannot run (``interval(...)``) raises ValueError."""
    arguments = [f"{key}={value}" for key, value in (params or {}).items()] + list(overrides)
    values: dict[str, list[str]] = {}
    for override in overrides_parser(config_loader).parse_overrides(arguments):
        key = override.get_key_element()
        if not override.is_sweep_override():
            values[key] = [f"{key}={override.get_value_element_as_str()}"]
        elif override.is_discrete_sweep():
            values[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
        else:
            raise ValueError(f"the basic sweeper cannot sweep {override.input_line}: it sweeps lists, choices and "
                             f"ranges")
    return [list(job) for job in itertools.product(*values.values())]


def plan(sweep_dir: str | Path, jobs: list[list[str]] | None, launcher: str) -> dict:
    """Start a sweep's manifest: forget the records of an earlier sweep in the same folder and list the
    planned jobs (``None`` when the sweeper decides them as it goes) as pending."""
    records = Path(sweep_dir) / RECORDS
    records.mkdir(parents=True, exist_ok=True)
    for stale in records.glob("*.json"):
        stale.unlink()
    _write_json(records / PLAN, {"launcher": launcher, "jobs": jobs})
    return merge(sweep_dir)


def record(sweep_dir: str | Path, num: int, overrides: list[str], status: str, run_folder: str | None = None,
           error: str | None = None) -> dict:
    """Write job ``num``'s record and merge the manifest. A run that wrote ``metrics.json`` without an error
    given here takes the error from there (e.g. the non-finite value that stopped a diverged run)."""
    if error is None and run_folder is not None and status != "completed":
        metrics = Path(run_folder) / "metrics.json"
        if metrics.is_file():
            error = error_line(json.loads(metrics.read_text()).get("error"))
    entry = {"job": int(num), "overrides": list(overrides), "run_folder": run_folder, "status": status,
             "error": error_line(error), "ended_utc": _now()}
    records = Path(sweep_dir) / RECORDS
    records.mkdir(parents=True, exist_ok=True)
    _write_json(records / f"{int(num)}.json", entry)
    return merge(sweep_dir)


def merge(sweep_dir: str | Path) -> dict:
    """Rebuild ``manifest.json`` from the plan and the job records; return it."""
    sweep_dir = Path(sweep_dir)
    records = sweep_dir / RECORDS
    records.mkdir(parents=True, exist_ok=True)
    with _locked(records / "lock"):
        plan_path = records / PLAN
        planned = json.loads(plan_path.read_text()) if plan_path.is_file() else {}
        jobs = {num: {"job": num, "overrides": overrides, "run_folder": None, "status": PENDING, "error": None}
                for num, overrides in enumerate(planned.get("jobs") or [])}
        for path in records.glob("*.json"):
            if path.stem.isdigit():
                entry = json.loads(path.read_text())
                jobs[entry["job"]] = entry
        ordered = [jobs[num] for num in sorted(jobs)]
        counts: dict[str, int] = {}
        for job in ordered:
            counts[job["status"]] = counts.get(job["status"], 0) + 1
        manifest = {"sweep_dir": str(sweep_dir.resolve()), "launcher": planned.get("launcher"), "updated_utc": _now(),
                    "counts": counts, "jobs": ordered}
        _write_json(sweep_dir / MANIFEST, manifest)
    return manifest


def finish(sweep_dir: str | Path) -> dict:
    """The last merge, at the end of the sweep (the job records are then dropped: the manifest holds them).
    ``run.py -m`` then reads the manifest from the sweep folder (:data:`FINISHED`, :func:`read`) for the sweep's
    :func:`exit_code`."""
    manifest = merge(sweep_dir)
    shutil.rmtree(Path(sweep_dir) / RECORDS, ignore_errors=True)
    FINISHED.append(Path(sweep_dir))
    return manifest


def read(path: str | Path) -> dict:
    """A manifest, from its file or its sweep folder."""
    path = Path(path)
    return json.loads((path / MANIFEST if path.is_dir() else path).read_text())


def exit_code(manifest: dict) -> tuple[int, str | None]:
    """The sweep's exit code and, when it is not 0, one line for stderr naming the first bad job."""
    jobs = manifest["jobs"]
    failed = [job for job in jobs if job["status"] in (FAILED, PENDING)]
    interrupted = [job for job in jobs if job["status"] == "interrupted"]
    where = Path(manifest["sweep_dir"]) / MANIFEST
    if failed:
        first = failed[0]
        reason = first["error"] or "it never reported (killed or lost)"
        return SWEEP_EXIT_FAILED, (f"error: {len(failed)} of {len(jobs)} jobs failed (job {first['job']}: {reason}); "
                                   f"see {where}")
    if interrupted:
        return SWEEP_EXIT_INTERRUPTED, f"error: {len(interrupted)} of {len(jobs)} jobs were interrupted; see {where}"
    return 0, None


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _write_json(path: Path, payload: dict) -> None:
    from sgmcmc.results import write_json

    write_json(path, payload)


@contextmanager
def _locked(path: Path):
    """An exclusive lock across processes (``fcntl.flock``; where it is missing, the atomic writes alone)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
