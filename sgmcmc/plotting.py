"""Figures of one run (PNG, matplotlib's Agg backend): histogram or contour against the exact
density, traces of the chains, and the metric trace against steps.

Imported by the runs that draw figures only (:func:`sgmcmc.experiment._figures`): importing it loads matplotlib,
with the Agg backend."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

if TYPE_CHECKING:
    from sgmcmc.targets.base import Target


def _save(figure, path: Path) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


def histogram_1d(samples: np.ndarray, target: Target, path: Path, title: str = "") -> Path:
    """Density histogram of pooled 1D samples on the KL grid, with the exact density."""
    edges = target.histogram_edges()
    figure, axes = plt.subplots(figsize=(6, 4))
    axes.hist(samples.reshape(-1), bins=edges, density=True, alpha=0.6, label="samples")
    grid = np.linspace(edges[0], edges[-1], 1000)
    axes.plot(grid, np.exp(target.log_density(grid[:, None])), "k-", lw=1.5, label="exact density")
    axes.set_xlabel("θ")
    axes.set_ylabel("density")
    axes.set_title(title)
    axes.legend()
    return _save(figure, path)


def contour_2d(samples: np.ndarray, target: Target, path: Path, title: str = "", n_path: int = 10) -> Path:
    """Contours of the exact 2D density with the first ``n_path`` samples of chain 0 joined as a path,
    beside a 2D histogram of the pooled samples."""
    edges_x, edges_y = target.histogram_edges()
    x, y = np.meshgrid(np.linspace(edges_x[0], edges_x[-1], 200), np.linspace(edges_y[0], edges_y[-1], 200))
    density = np.exp(target.log_density(np.column_stack([x.ravel(), y.ravel()]))).reshape(x.shape)
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    left.contour(x, y, density, levels=8, cmap="Greys")
    first = samples[0, :n_path]
    left.plot(first[:, 0], first[:, 1], "o-", color="tab:red", ms=4, label=f"first {len(first)} samples")
    left.set_title(title or "exact density")
    left.legend()
    pooled = samples.reshape(-1, 2)
    right.hist2d(pooled[:, 0], pooled[:, 1], bins=[edges_x, edges_y], density=True, cmap="viridis")
    right.contour(x, y, density, levels=8, colors="white", linewidths=0.6)
    right.set_title("samples (2D histogram) and exact contours")
    for axes in (left, right):
        axes.set_xlabel("θ₁")
        axes.set_ylabel("θ₂")
    return _save(figure, path)


# the most points a trace line draws: a longer chain is drawn at every k-th sample (a 7-inch panel shows no more)
TRACE_POINTS = 2000


def chain_traces(samples: np.ndarray, path: Path, first_step: int, thin: int, n_chains: int = 4,
                 max_coordinates: int = 6) -> Path:
    """θ against step for the first few chains, one panel per coordinate (the first ``max_coordinates``), each line at
    most :data:`TRACE_POINTS` points (every k-th sample of a longer chain)."""
    dim = min(samples.shape[2], max_coordinates)
    figure, axes = plt.subplots(dim, 1, figsize=(7, 2.5 * dim), squeeze=False)
    every = -(-samples.shape[1] // TRACE_POINTS)
    samples = samples[:, ::every]
    steps = first_step + thin * every * np.arange(samples.shape[1])
    for coordinate in range(dim):
        for chain in range(min(n_chains, samples.shape[0])):
            axes[coordinate, 0].plot(steps, samples[chain, :, coordinate], lw=0.6)
        axes[coordinate, 0].set_ylabel(f"θ{coordinate + 1}" if dim > 1 else "θ")
    axes[-1, 0].set_xlabel("step")
    return _save(figure, path)


# Data targets' metrics (SPEC §3 E3, E5, E6) and the trace column they are drawn against.
DATA_METRICS = ("perplexity", "test_log_likelihood", "test_error", "test_accuracy")


def _trace_columns(trace, names: tuple[str, ...]) -> dict[str, np.ndarray]:
    """Those of ``names`` that the trace has, as float arrays (NaN where a row has no value); ``trace`` is a run's
    rows (dicts, as :class:`~sgmcmc.observers.TraceObserver` keeps them: no pandas needed) or a DataFrame."""
    if isinstance(trace, list):
        keys = {key for row in trace for key in row}
        return {name: np.array([np.nan if row.get(name) is None else row[name] for row in trace], dtype=float)
                for name in names if name in keys}
    return {name: np.asarray(trace[name], dtype=float) for name in names if name in trace}


def _drawn(columns: dict[str, np.ndarray], names: tuple[str, ...]) -> list[str]:
    return [name for name in names if name in columns and not np.isnan(columns[name]).all()]


def data_metric_trace(trace, path: Path) -> Path | None:
    """The data targets' metrics (held-out perplexity, test log-likelihood, test error) against documents
    seen, passes over the data or steps, one panel each; None if the trace (rows or a DataFrame) has none."""
    table = _trace_columns(trace, (*DATA_METRICS, "documents", "passes", "step"))
    columns = _drawn(table, DATA_METRICS)
    if not columns:
        return None
    x = next(c for c in ("documents", "passes", "step") if c in table)
    figure, axes = plt.subplots(len(columns), 1, figsize=(6, 3.2 * len(columns)), squeeze=False)
    for ax, column in zip(axes[:, 0], columns):
        ax.plot(table[x], table[column], marker=".")
        ax.set_ylabel(column.replace("_", " "))
    axes[-1, 0].set_xlabel({"documents": "documents seen", "passes": "passes over the data"}.get(x, x))
    return _save(figure, path)


def metric_trace(trace, path: Path) -> Path | None:
    """KL (both directions), W1 and the kernel Stein discrepancy against step count, log scale, from the trace (rows or
    a DataFrame); for data targets their own metrics (:func:`data_metric_trace`)."""
    table = _trace_columns(trace, ("kl_pq", "kl_qp", "w1", "ksd", "step"))
    columns = _drawn(table, ("kl_pq", "kl_qp", "w1", "ksd"))
    if not columns:
        return data_metric_trace(trace, path)
    figure, axes = plt.subplots(figsize=(6, 4))
    for column in columns:
        values = np.maximum(table[column], 1e-8)  # NaN stays NaN (a gap), as pandas' clip
        axes.semilogy(table["step"], values, marker=".", label=column)
    axes.set_xlabel("step")
    axes.set_ylabel("metric (pooled post-burn-in samples)")
    axes.legend()
    return _save(figure, path)
