"""Output folders of the paper reproductions: ``<root>/<figure-id>/<run-id>/`` (never reused), holding
the figure(s) as PNG, ``summary.csv`` / ``summary.md`` (our numbers beside the published ones),
``provenance.json`` (this reproduction's and that of every run used) and ``runs/`` (one result folder
per run, as :func:`sgmcmc.experiment.run_experiment` writes them).

Plain Python, no Hydra; the experiment modules in ``experiments/`` drive it.
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from sgmcmc.results import new_run_folder, provenance, write_json, write_table, write_text

DEFAULT_ROOT = Path("results/paper")


@dataclass
class PaperFolder:
    """One reproduction of one figure or table: a fresh folder and the runs it used."""

    figure_id: str
    path: Path
    runs: list = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)  # this invocation's start, for ``wall_seconds``
    started_utc: str = field(default_factory=lambda: _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))

    @classmethod
    def create(cls, figure_id: str, root: str | Path = DEFAULT_ROOT, label: str = "") -> "PaperFolder":
        """Make ``root/figure_id/<UTC time>-<label>-<hex>/`` with an empty ``runs/`` inside."""
        folder = new_run_folder(Path(root) / figure_id, label or figure_id)
        (folder / "runs").mkdir()
        return cls(figure_id, folder)

    @property
    def runs_dir(self) -> Path:
        return self.path / "runs"

    def record_run(self, run_folder: Path, status: str, setting: dict) -> dict:
        """Remember a run used by this reproduction; returns its metrics (``metrics.json``)."""
        metrics = json.loads((Path(run_folder) / "metrics.json").read_text())
        self.runs.append({"folder": str(Path(run_folder).relative_to(self.path)), "status": status, **setting})
        return metrics

    def write_summary(self, table: pd.DataFrame, title: str, notes: str = "", body: Optional[str] = None,
                      float_format: str = ".4g") -> None:
        """``summary.csv`` (the tidy table) and ``summary.md`` (title, ``body`` or the table, notes)."""
        write_table(self.path / "summary.csv", table)
        markdown = body if body is not None else table.to_markdown(index=False, floatfmt=float_format)
        write_text(self.path / "summary.md", f"# {title}\n\n{markdown.strip()}\n\n{notes.strip()}\n")

    def finish(self, settings: Optional[dict] = None, argv: Optional[list] = None) -> Path:
        """Write ``provenance.json`` (last) and point ``<root>/<figure-id>/LATEST`` at this folder. It holds when this
        invocation started and finished, its ``wall_seconds`` (from :meth:`create`, or from the :class:`PaperFolder`
        made to add to an existing folder) and the ``machine`` it ran on (:func:`sgmcmc.results.machine`, with the
        load average at the end): the README's wall-time table is read from them (``scripts/wall_times.py``)."""
        record = provenance(seed=-1, argv=argv)
        record.pop("seed")
        record["finished_utc"] = record.pop("started_utc")
        record["started_utc"] = self.started_utc
        record["wall_seconds"] = round(time.monotonic() - self.started, 1)
        record["figure_id"] = self.figure_id
        record["settings"] = settings or {}
        record["runs"] = self.runs
        write_json(self.path / "provenance.json", record)
        write_text(self.path.parent / "LATEST", self.path.name + "\n")
        return self.path


def mean_and_sd(frame: pd.DataFrame, by: list[str], column: str) -> pd.DataFrame:
    """Mean, sample standard deviation and count of ``column`` over the groups ``by`` (e.g. seeds)."""
    grouped = frame.groupby(by, sort=False)[column]
    out = grouped.agg(["mean", "std", "count"]).reset_index()
    return out.rename(columns={"mean": f"{column}_mean", "std": f"{column}_sd", "count": "n_runs"})
