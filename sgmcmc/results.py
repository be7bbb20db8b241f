"""Versioned result folders: a new folder per run (never reused), files written atomically
(write to a temporary name, then rename), and the provenance of every run. ``load_run`` and ``load_sweep``
read result folders back (:mod:`sgmcmc.run_results`, imported on first use).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import secrets
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np

from sgmcmc import RESULTS_SCHEMA_VERSION, __version__, lazy_exports

MANIFEST = "manifest.json"  # a sweep's list of its jobs (written by sgmcmc_cli.sweep, read by sgmcmc.collect)
PACKAGES = ("numpy", "scipy", "pandas", "matplotlib", "scikit-learn", "hydra-core", "omegaconf", "tqdm", "arviz")
# reading result folders back (sgmcmc.run_results: ArviZ, xarray, pandas) is imported on first use, not at a run's start
__getattr__ = lazy_exports(globals(), {"load_run": "sgmcmc.run_results", "load_sweep": "sgmcmc.run_results"})


def new_run_folder(root: str | Path, label: str) -> Path:
    """Create and return a fresh folder ``root/<UTC time>-<label>-<random hex>``; never an existing one,
    also when runs start in the same second or in parallel (``mkdir`` is atomic)."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    stamp = _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    while True:
        folder = root / f"{stamp}-{label}-{secrets.token_hex(4)}"
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue


def _atomic(path: Path, write) -> None:
    path = Path(path)
    temporary = path.with_name(f".{path.name}.tmp{os.getpid()}")
    write(temporary)
    os.replace(temporary, path)


def write_json(path: Path, payload: dict) -> None:
    """``payload`` as JSON that every reader takes: a number that is not finite (NaN, ±inf), which JSON has no word
    for, is written as null."""
    def write(target):
        target.write_text(json.dumps(_finite(payload), indent=2, sort_keys=False, allow_nan=False) + "\n")

    _atomic(path, write)


def write_text(path: Path, text: str) -> None:
    _atomic(path, lambda target: target.write_text(text))


def write_samples(path: Path, **arrays: np.ndarray) -> None:
    """``arrays`` as an ``.npz`` file, uncompressed: samples are float64 noise, which zlib shrinks by little and slowly
    (measured on a run's 50,000 × 20 draws: 0.23 s, more than the sampling of those steps)."""

    def write(target):
        with open(target, "wb") as handle:
            np.savez(handle, **arrays)

    _atomic(path, write)


def write_table(path: Path, frame) -> None:
    _atomic(path, lambda target: frame.to_csv(target, index=False))


def write_rows(path: Path, rows: list[dict]) -> None:
    """``rows`` (dicts, as a run's trace) as CSV, the text ``pd.DataFrame(rows).to_csv(index=False)`` writes, without
    importing pandas (about 0.15 s of a run's start-up) when every value is a number, a bool or missing (None, NaN
    or an absent key); other values are left to pandas."""
    text = rows_csv(rows)
    if text is None:
        import pandas as pd

        write_table(path, pd.DataFrame(rows))
    else:
        write_text(path, text)


def rows_csv(rows: list[dict]) -> str | None:
    """The CSV text of :func:`write_rows`, or None when a value is neither a number, a bool nor missing.

    As pandas: the columns in the order their keys first appear, a column of ints only (none missing) as ints, of
    numpy floats only (none missing) in their own type (float32 as float32), of other numbers as float64 (numpy's
    shortest round-trip text; an int as ``3.0``), of bools as ``True``/``False``, a missing value as an empty field;
    Python's csv writer (minimal quoting, ``\\n``), which pandas uses too."""
    import csv
    import io

    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = []
    for column in columns:
        values = [row.get(column) for row in rows]
        missing = [value is None or (isinstance(value, (float, np.floating)) and value != value) for value in values]
        present = [value for value, gone in zip(values, missing) if not gone]
        if all(isinstance(value, (bool, np.bool_)) for value in present):
            cells.append(["" if gone else str(bool(value)) for value, gone in zip(values, missing)])
        elif not all(isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
                     for value in present):
            return None  # text, arrays, bools among numbers (an object column): pandas
        elif not any(missing) and all(isinstance(value, (int, np.integer)) for value in values):
            if not all(-2**63 <= value < 2**63 for value in values):
                return None
            cells.append([str(int(value)) for value in values])
        elif any(isinstance(value, np.floating) and value.itemsize > 8 for value in present):
            return None  # long double
        elif not any(missing) and all(isinstance(value, np.floating) for value in values):
            cells.append(np.array(values, dtype=np.result_type(*values)).astype(str).tolist())  # float32 stays
        else:
            text = np.array([np.nan if gone else float(value) for value, gone in zip(values, missing)]).astype(str)
            cells.append(["" if gone else field for field, gone in zip(text.tolist(), missing)])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows(zip(*cells) if columns else ([] for _ in rows))
    return buffer.getvalue()


def _finite(value):
    """``value`` with numpy's scalars and arrays as Python's, tuples as lists and every float that is not finite as
    None, at any depth of dicts and lists."""
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    if isinstance(value, np.ndarray):
        return _finite(value.tolist())
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def _git(*args: str, directory: Path | None = None) -> str | None:
    try:
        result = subprocess.run(["git", *args], capture_output=True, text=True, timeout=10,
                                cwd=directory or Path(__file__).parent)
    except (OSError, subprocess.SubprocessError):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def code_is_dirty(directory: Path | None = None) -> bool | None:
    """Whether tracked files of the repository at ``directory`` (default: this package's) differ from its commit
    outside ``results/``: the outputs a reproduction writes there (a new folder, LATEST) do not make the code that
    produced them dirty. None outside a git repository."""
    status = _git("status", "--porcelain", "--untracked-files=no", "--", ":(top)", ":(top,exclude)results",
                  directory=directory)
    return None if status is None else bool(status)


def provenance(seed: int, argv: list[str] | None = None) -> dict:
    """Git commit and dirty flag (:func:`code_is_dirty`), package versions, command line, seed and the
    results-schema version."""
    versions = {}
    for package in PACKAGES:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return {
        "results_schema_version": RESULTS_SCHEMA_VERSION,
        "sgmcmc_version": __version__,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": code_is_dirty(),
        "command_line": list(sys.argv if argv is None else argv),
        "seed": seed,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "packages": versions,
        "started_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
    }


def machine() -> dict:
    """What a wall time was measured on: cores, the CPU's model name (Linux's /proc/cpuinfo; else
    ``platform.processor()``), memory in GiB, and the load average when asked (a shared machine runs slower)."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    try:
        memory = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1)
    except (ValueError, OSError, AttributeError):
        memory = None
    load = list(os.getloadavg()) if hasattr(os, "getloadavg") else None
    return {"cores": os.cpu_count(), "cpu": model, "memory_gib": memory, "load_average": load}
