"""The memory a run's big arrays need, estimated before any of them exists, against the memory available.

What grows with chains × steps × d or chains × d² (every number 8 bytes):

- the kept samples (:class:`~sgmcmc.observers.SampleStore`): n_chains × n_kept × d, n_kept as
  :attr:`~sgmcmc.runner.RunOptions.n_kept` counts it (post-burn-in steps, every ``thin``-th); its per-draw
  statistics (ξ, clipped, acceptance, reflections: up to 4 × n_chains × n_kept where the sampler reports them, which
  is known only once it runs) are left out of the lower bound;
- the snapshots of ``run.snapshot_every`` (:class:`~sgmcmc.observers.Snapshots`): n_chains × (1 + snapshot steps) × d;
- the per-chain running covariance of the moments (:class:`~sgmcmc.observers.RunningMoments`, d ≤
  ``MOMENT_COVARIANCE_MAX_DIM``): its scatter matrix and the covariance written to moments.npz, 2 × n_chains × d²;
- the running gradient-noise estimate Î of ``noise_estimate=running`` with ``running_form=full``: the state's Î and a
  step's working matrices (the new Î, Σ̂ = c·Î, and then ε(2D − εΣ̂) and its factor or CCAdL's friction (ε/2)Σ̂):
  at least 4 × n_chains × d² at the peak of a step
  (measured: CCAdL 4; the samplers that subtract Σ̂ from the injected noise 5, and 7 with ``noise_clip``);
- the known V(θ) of a data target (``noise_estimate=known``): V and the matrix made from it in a step, at least
  2 × n_chains × d².

The total is a lower bound (the temporaries of a gradient, of the noise draw and of the final scores come on top),
so that the guard never refuses a run that would fit; a run that then runs out of memory fails with status
``failed`` and one line (:func:`sgmcmc.experiment.run_experiment`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from sgmcmc.config import ConfigError

BYTES_PER_NUMBER = 8
GIB = 2**30
# the state's Î and a step's working copies of it, the fewest any sampler path holds at once (module docstring)
RUNNING_FULL_MATRICES = 4
KNOWN_DATA_NOISE_MATRICES = 2
MOMENT_MATRICES = 2  # the scatter, and the covariance made from it for moments.npz


class InsufficientMemory(ConfigError):
    """The run's arrays would not fit in the memory available: one line naming the keys to change (exit 2)."""


@dataclass(frozen=True)
class RunShape:
    """The sizes that decide a run's big arrays (:func:`run_shape` reads them from a built run)."""

    n_chains: int
    dim: int
    n_kept: int
    n_snapshots: int = 0
    moment_covariance: bool = False  # per-chain covariance of the moments tracked (d ≤ MOMENT_COVARIANCE_MAX_DIM)
    running_full: bool = False  # noise_estimate=running, running_form=full
    known_data_noise: bool = False  # noise_estimate=known on a data target: V(θ) per chain


@dataclass(frozen=True)
class ArrayEstimate:
    """One of a run's big arrays: what it is, its bytes, and the config keys that shrink it."""

    what: str
    nbytes: int
    keys: tuple[str, ...]


def snapshot_count(n_steps: int, every: int, until: Optional[int]) -> int:
    """θ's kept by :class:`~sgmcmc.observers.Snapshots` with ``every`` ≥ 1 (else none): step 0 (also in a resumed
    run, whose checkpoint holds it) and every ``every``-th step up to ``until`` (None: the last step)."""
    if every < 1:
        return 0
    last = n_steps if until is None else min(until, n_steps)
    return 1 + max(0, last) // every


def big_arrays(shape: RunShape) -> list[ArrayEstimate]:
    """The run's big arrays (module docstring), the largest first; those of zero bytes left out."""
    c, d = shape.n_chains, shape.dim
    matrices = c * d * d * BYTES_PER_NUMBER
    arrays = [ArrayEstimate(f"kept samples (chains {c} x kept {shape.n_kept} x dim {d})",
                            c * shape.n_kept * d * BYTES_PER_NUMBER, ("run.n_chains", "run.thin", "run.n_steps"))]
    if shape.n_snapshots:
        arrays.append(ArrayEstimate(f"snapshots (chains {c} x snapshots {shape.n_snapshots} x dim {d})",
                                    c * shape.n_snapshots * d * BYTES_PER_NUMBER,
                                    ("run.n_chains", "run.snapshot_every", "run.snapshot_until")))
    if shape.moment_covariance:
        arrays.append(ArrayEstimate(f"moment covariances ({MOMENT_MATRICES} x chains {c} x dim {d}^2)",
                                    MOMENT_MATRICES * matrices, ("run.n_chains",)))
    if shape.running_full:
        arrays.append(ArrayEstimate(f"full running noise estimate ({RUNNING_FULL_MATRICES} x chains {c} x dim {d}^2)",
                                    RUNNING_FULL_MATRICES * matrices, ("run.n_chains", "sampler.running_form=diagonal")))
    if shape.known_data_noise:
        arrays.append(ArrayEstimate(f"known gradient-noise covariance ({KNOWN_DATA_NOISE_MATRICES} x chains {c} x dim {d}^2)",
                                    KNOWN_DATA_NOISE_MATRICES * matrices,
                                    ("run.n_chains", "sampler.noise_estimate=zero")))
    return sorted((array for array in arrays if array.nbytes), key=lambda array: -array.nbytes)


def run_shape(sampler, settings) -> RunShape:
    """The :class:`RunShape` of a built sampler (its target) and the run's checked ``run.*`` keys
    (:class:`~sgmcmc.config.RunOptions`)."""
    from sgmcmc.observers import MOMENT_COVARIANCE_MAX_DIM
    from sgmcmc.targets.data import DataTarget

    dim = sampler.target.dim
    running_full = sampler.noise_estimate == "running" and sampler.running_form == "full" and _keeps_full_estimate(sampler)
    # the d×d V(θ) of DataTarget.noise_covariance (a target that keeps it unknown, d in the hundreds of thousands, has none)
    from sgmcmc.gradient_estimators import SVRG

    known_data_noise = (sampler.noise_estimate == "known" and isinstance(sampler.target, DataTarget)
                        and type(sampler.target).noise_covariance in (DataTarget.noise_covariance, SVRG.noise_covariance))
    snapshots = snapshot_count(settings.n_steps, settings.snapshot_every, settings.snapshot_until)
    return RunShape(settings.n_chains, dim, settings.n_kept, snapshots, dim <= MOMENT_COVARIANCE_MAX_DIM,
                    running_full, known_data_noise)


def _keeps_full_estimate(sampler) -> bool:
    """Whether the sampler's state carries a full Î (c, d, d): one chain's initial state tells (HMC and naive SGHMC
    accept ``noise_estimate=running`` but keep none). Its zero Î is not written, so the memory is not touched."""
    rng = np.random.default_rng(0)
    try:
        state = sampler.init(sampler.target.initial_position(1, rng), rng)
    except MemoryError:  # one chain's Î (d, d) alone does not fit (the BNN's d = 79,510): it keeps the full estimate
        return True
    return state.noise is not None and np.ndim(state.noise) == 3


def available_memory(meminfo: str | Path = "/proc/meminfo", cgroup: str | Path = "/sys/fs/cgroup") -> Optional[int]:
    """Bytes of memory available to a new allocation: Linux's MemAvailable (``meminfo``; else the free physical
    pages), and no more than the limit of a cgroup v2 (``cgroup``) leaves; None when neither is known."""
    available = None
    try:
        for line in Path(meminfo).read_text().splitlines():
            if line.startswith("MemAvailable:"):
                value, unit = line.split()[1:3]
                available = int(value) * {"kB": 1024}.get(unit, 1)
                break
    except (OSError, ValueError, IndexError):
        pass
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (AttributeError, ValueError, OSError):
            pass
    left = _cgroup_left(Path(cgroup))
    if left is not None:
        available = left if available is None else min(available, left)
    return available


def _cgroup_left(root: Path) -> Optional[int]:
    """memory.max − memory.current of the cgroup v2 at ``root`` (a container's own is mounted at /sys/fs/cgroup), or
    None without a limit."""
    try:
        limit = (root / "memory.max").read_text().strip()
        if limit == "max":
            return None
        return max(0, int(limit) - int((root / "memory.current").read_text().strip()))
    except (OSError, ValueError):
        return None


def memory_problem(arrays: list[ArrayEstimate], available: Optional[int]) -> Optional[str]:
    """One line when the arrays need more than ``available`` bytes: the estimate and the memory available in GiB, the
    arrays that make up most of it and the keys to change; None when they fit (or nothing is known)."""
    needed = sum(array.nbytes for array in arrays)
    if available is None or needed <= available:
        return None
    main = [array for array in arrays if array.nbytes >= needed / 100]  # arrays of 1 % or more of the total
    parts = ", ".join(f"{array.what} {array.nbytes / GIB:.1f} GiB" for array in main)
    keys = list(dict.fromkeys(key for array in main for key in array.keys))
    return (f"the run needs at least {needed / GIB:.1f} GiB of memory and {available / GIB:.1f} GiB is available: "
            f"{parts}; change {', '.join(keys)}")


def check_run_fits(sampler, settings, available: Optional[int] = None) -> None:
    """:class:`InsufficientMemory` when the run's :func:`big_arrays` exceed ``available`` (default
    :func:`available_memory`)."""
    arrays = big_arrays(run_shape(sampler, settings))
    problem = memory_problem(arrays, available_memory() if available is None else available)
    if problem is not None:
        raise InsufficientMemory(problem)
