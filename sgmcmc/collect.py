"""One tidy table of every run below a folder: ``python -m sgmcmc.collect <folder>`` (or :func:`collect`).

A run is a result folder (``config.yaml`` + ``provenance.json``, ``metrics.json`` once it ended); a sweep's
``manifest.json`` (:mod:`sgmcmc_cli.sweep`) adds its jobs, also the run folders it names outside ``<folder>``
and the jobs that failed before making one. One row per run: its folder, status, error, sampler / target /
schedule names, seed, sweep and job number, the config values that differ between the rows (flattened,
``sampler.step_size``), then the final metrics (``metrics.json``'s ``final`` and its scalar entries).
Written to ``<folder>/collected.csv`` and, when pyarrow is importable, ``<folder>/collected.parquet``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

from sgmcmc.results import MANIFEST, write_table

CSV, PARQUET = "collected.csv", "collected.parquet"
NAMES = {"sampler": "sampler.name", "target": "target.name", "schedule": "schedule.name", "seed": "seed"}
IDENTITY = ["run_folder", "status", "error", *NAMES, "sweep", "job", "overrides"]
NOT_METRICS = ("status", "error", "final", "figures", "artifacts")
NO_METRICS = "no metrics.json: the run stopped before its end (or is still running)"


def collect(folder: str | Path) -> pd.DataFrame:
    """The table of every run below ``folder`` (see the module's docstring)."""
    folder = Path(folder)
    rows: dict[str, dict] = {}  # resolved run folder (or "<sweep>#<job>" for a job without one) -> row
    for provenance in sorted(folder.rglob("provenance.json")):
        run = provenance.parent
        if (run / "config.yaml").is_file():
            rows[str(run.resolve())] = _run_row(run, folder)
    for path in sorted(folder.rglob(MANIFEST)):
        manifest = json.loads(path.read_text())
        if not isinstance(manifest, dict) or not isinstance(manifest.get("jobs"), list):
            continue  # another program's manifest.json
        for job in manifest["jobs"]:
            run = _find_run(job.get("run_folder"), folder)
            key = str(run.resolve()) if run is not None else f"{path.parent.resolve()}#{job['job']}"
            if key not in rows:
                rows[key] = _run_row(run, folder) if run is not None else _job_row(job)
            rows[key].update(sweep=_relative(path.parent, folder), job=job["job"], overrides=" ".join(job["overrides"]))
            if run is None or rows[key]["status"] is None:
                rows[key].update(status=job["status"], error=job.get("error"))
    return _table(list(rows.values()))


def _run_row(run: Path, folder: Path) -> dict:
    config = yaml.safe_load((run / "config.yaml").read_text()) or {}
    metrics_path = run / "metrics.json"
    metrics = json.loads(metrics_path.read_text()) if metrics_path.is_file() else None
    row = {"run_folder": _relative(run, folder), "status": metrics["status"] if metrics else None,
           "error": metrics.get("error") if metrics else NO_METRICS, "config": _flatten(config), "metrics": {}}
    if metrics:
        row["metrics"] = {k: v for k, v in metrics.items() if k not in NOT_METRICS and _scalar(v)}
        row["metrics"].update({k: v for k, v in (metrics.get("final") or {}).items() if _scalar(v)})
    return row


def _job_row(job: dict) -> dict:
    """A job that never made a run folder: its config values from its overrides."""
    config = {}
    for override in job["overrides"]:
        key, _, value = override.lstrip("+~").partition("=")
        try:
            config[NAMES.get(key, key)] = yaml.safe_load(value)
        except yaml.YAMLError:
            config[NAMES.get(key, key)] = value
    return {"run_folder": None, "status": job["status"], "error": job.get("error"), "config": config, "metrics": {}}


def _table(rows: list[dict]) -> pd.DataFrame:
    keys = list(dict.fromkeys(key for row in rows for key in row["config"]))

    def differs(key: str) -> bool:  # a job known by its overrides only says nothing of the keys it does not set
        values = {json.dumps(row["config"].get(key), sort_keys=True, default=str) for row in rows
                  if row["run_folder"] is not None or key in row["config"]}
        return len(values) > 1

    varying = sorted(key for key in keys if key not in NAMES.values() and differs(key))
    records = []
    for row in rows:
        record = {"run_folder": row["run_folder"], "status": row["status"] or "failed", "error": row["error"]}
        record.update({name: row["config"].get(key) for name, key in NAMES.items()})
        record.update({key: row.get(key) for key in ("sweep", "job", "overrides")})
        record.update({key: _cell(row["config"].get(key)) for key in varying})
        record.update(row["metrics"])
        records.append(record)
    table = pd.DataFrame.from_records(records, columns=_columns(records, varying))
    table = table.drop(columns=[c for c in ("sweep", "job", "overrides") if table[c].isna().all()])
    return table.sort_values(["sweep", "job", "run_folder"] if "sweep" in table else ["run_folder"],
                             na_position="last", kind="stable").reset_index(drop=True)


def _columns(records: list[dict], varying: list[str]) -> list[str]:
    metrics = [key for record in records for key in record if key not in IDENTITY and key not in varying]
    return IDENTITY + varying + list(dict.fromkeys(metrics))


def _flatten(config: dict, prefix: str = "") -> dict:
    flat = {}
    for key, value in config.items():
        if isinstance(value, dict) and value:
            flat.update(_flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def _cell(value):
    return json.dumps(value) if isinstance(value, (list, dict)) else value


def _scalar(value) -> bool:
    return value is None or isinstance(value, (int, float, str, bool))


def _find_run(recorded: str | None, folder: Path) -> Path | None:
    """A manifest's run folder: where it was written, else a folder of the same name below ``folder``
    (the results were moved)."""
    if not recorded:
        return None
    path = Path(recorded)
    if (path / "config.yaml").is_file():
        return path
    moved = [candidate for candidate in folder.rglob(path.name) if (candidate / "config.yaml").is_file()]
    return moved[0] if moved else None


def _relative(path: Path, folder: Path) -> str:
    try:
        return str(path.resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path.resolve())


def write(folder: str | Path) -> list[Path]:
    """Write ``collected.csv`` (and ``collected.parquet`` with pyarrow) in ``folder``; return their paths."""
    folder = Path(folder)
    table = collect(folder)
    written = [folder / CSV]
    write_table(written[0], table)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return written
    try:  # mixed-type columns as text
        text = {column: "string" for column in table.columns if table[column].dtype == object}
        table.astype(text).to_parquet(folder / PARQUET, index=False)
    except Exception as error:  # the CSV holds the table all the same
        print(f"warning: {PARQUET} not written: {str(error).strip().splitlines()[0]}", file=sys.stderr)
        return written
    return written + [folder / PARQUET]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sgmcmc.collect",
                                     description="One tidy table of every run below a folder: its run folders and "
                                                 "sweep manifests, written to <folder>/collected.csv (and "
                                                 "collected.parquet when pyarrow is importable).")
    parser.add_argument("folder", type=Path, help="the folder to search for runs (result folders, sweep manifests)")
    folder = parser.parse_args(argv).folder
    if not folder.is_dir():
        print(f"error: {folder} is not a folder", file=sys.stderr)
        return 2
    if not any(folder.rglob("provenance.json")) and not any(folder.rglob(MANIFEST)):
        print(f"error: no runs below {folder} (no run folder with config.yaml, no sweep manifest.json)", file=sys.stderr)
        return 2
    for path in write(folder):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
