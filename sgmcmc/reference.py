"""Reference posteriors from long exact-MCMC runs (full-data HMC): stored once with their provenance,
loaded by the experiments that compare against them (SPEC §4.9: the HMC reference of Shang et al. 2015 §4.2).

A reference lives in ``<root>/<name>/<run-id>/reference.npz`` with ``<root>/<name>/LATEST`` naming the
current one (the layout of :class:`~sgmcmc.paper.PaperFolder`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sgmcmc.results import write_samples

DEFAULT_ROOT = Path("results/reference")


class ReferenceMissing(FileNotFoundError):
    """No stored reference: the message says which make target builds it."""


@dataclass(frozen=True)
class Reference:
    """Mean (d,), covariance (d, d) and thinned draws (m, d) of a reference posterior, with its diagnostics."""

    mean: np.ndarray
    covariance: np.ndarray
    draws: np.ndarray
    rhat: np.ndarray
    ess: np.ndarray
    folder: Path


def save_reference(folder: Path, mean, covariance, draws, rhat, ess) -> Path:
    path = Path(folder) / "reference.npz"
    write_samples(path, mean=np.asarray(mean), covariance=np.asarray(covariance), draws=np.asarray(draws),
                  rhat=np.asarray(rhat), ess=np.asarray(ess))
    return path


def load_reference(name: str, root: str | Path = DEFAULT_ROOT, make_target: str = "") -> Reference:
    """The current reference ``<root>/<name>`` (via ``LATEST``); :class:`ReferenceMissing` if there is none."""
    base = Path(root) / name
    latest = base / "LATEST"
    hint = f": run `make {make_target}`" if make_target else ""
    if not latest.exists():
        raise ReferenceMissing(f"no reference posterior {name!r} under {base}{hint}")
    folder = base / latest.read_text().strip()
    path = folder / "reference.npz"
    if not path.exists():
        raise ReferenceMissing(f"reference posterior {path} is missing{hint}")
    with np.load(path) as data:
        return Reference(data["mean"], data["covariance"], data["draws"], data["rhat"], data["ess"], folder)
