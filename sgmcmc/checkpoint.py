"""Checkpoints: a run's full state, saved atomically so that a killed or interrupted run can continue in its own
folder (``run.resume=<folder>``) and end with samples bit-identical to an uninterrupted run.

File format (version ``FORMAT_VERSION``): ``checkpoint.npz``, a plain (pickle-free) ``numpy.savez`` archive of

- ``meta``: a 0-d unicode array holding one JSON object: ``format_version``, ``config_hash`` (:func:`config_hash`),
  ``step`` and every scalar of the run (counters, the trace rows, the generators' ``bit_generator.state``
  dicts, the target's scalar state, ...), as :meth:`Checkpoint.meta` gives them;
- ``checksum``: a 0-d unicode array, the SHA-256 of ``meta`` and of every other array's name, dtype, shape and
  bytes (:func:`payload_digest`), so a corrupt file is detected;
- the arrays of :meth:`Checkpoint.arrays` under their names (``state.theta``, ``samples``, ``target.<key>``, ...).

A save writes a temporary file in the folder, fsyncs it, moves the last checkpoint to ``checkpoint.prev.npz``
and renames the new file to ``checkpoint.npz``: there is always at least one complete checkpoint, and a resume
falls back to the previous one when the newest is unreadable (:func:`load_latest`).

Targets with mutable state of their own (the LDA document stream and its held-out scorers) take part through
:meth:`~sgmcmc.targets.base.Target.checkpoint_state` (a dict of JSON scalars/lists or numeric arrays; None by default)
and :meth:`~sgmcmc.targets.base.Target.restore_state`. Data targets need nothing: their minibatches come from the run's generator only.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from sgmcmc.config import OPTIONAL_GROUPS
from sgmcmc.keys import resume_free_keys
from sgmcmc.state import SamplerState

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
CHECKPOINT = "checkpoint.npz"
PREVIOUS = "checkpoint.prev.npz"
_STATE_FIELDS = ("theta", "momentum", "xi", "noise", "preconditioner", "gradient")


class CheckpointError(Exception):
    """A checkpoint is missing, unreadable, corrupt or belongs to another config (one line)."""


# ----------------------------------------------------------------------------------------------- the config


def flatten(config: dict, prefix: str = "") -> dict:
    """``{"run": {"n_steps": 3}}`` → ``{"run.n_steps": 3}`` (lists stay values)."""
    out = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


def comparable(config: dict) -> dict:
    """The flattened config without the keys that may differ between a run and its resume (those declared
    ``resume_free``, :func:`sgmcmc.keys.resume_free_keys`: they change neither the samples nor the files; a cache
    folder holds only what is derived again, by key, when it is missing): what must agree between the two."""
    free = resume_free_keys()
    # a group a config may leave out counts as absent when it has its default section (a run folder written before
    # the group existed resumes with today's config, and its hash is the same)
    config = {key: value for key, value in config.items() if not (key in OPTIONAL_GROUPS and value == OPTIONAL_GROUPS[key])}
    return {key: value for key, value in flatten(config).items() if key not in free}


def config_hash(config: dict) -> str:
    """SHA-256 of the resolved config without its resume-free keys (:func:`comparable`; canonical JSON)."""
    text = json.dumps(comparable(config), sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def config_differences(config: dict, other: dict) -> list[str]:
    """The dotted keys (outside the resume-free ones) whose values differ, as ``key=<config> (run: <other>)``."""
    mine, theirs = comparable(config), comparable(other)
    missing = object()
    return [f"{key}={mine.get(key, '<unset>')!r} (run: {theirs.get(key, '<unset>')!r})"
            for key in sorted(set(mine) | set(theirs)) if mine.get(key, missing) != theirs.get(key, missing)]


# ----------------------------------------------------------------------------------------- what is stored


def _jsonable(value):
    """A generator state or a target scalar as JSON: arrays become ``{"__array__": list, "dtype": str}``."""
    if isinstance(value, dict):
        return {key: _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, np.ndarray):
        return {"__array__": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return value.item()
    return value


def _from_json(value):
    if isinstance(value, dict):
        if set(value) == {"__array__", "dtype"}:
            return np.asarray(value["__array__"], dtype=value["dtype"])
        return {key: _from_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_from_json(item) for item in value]
    return value


def generator_state(rng: Optional[np.random.Generator]):
    """``rng.bit_generator.state`` as JSON (None for None)."""
    return None if rng is None else _jsonable(rng.bit_generator.state)


def restore_generator(saved, rng: Optional[np.random.Generator] = None) -> Optional[np.random.Generator]:
    """Set ``rng`` (a new PCG64 generator when None) to a :func:`generator_state`; None for None."""
    if saved is None:
        return None
    rng = np.random.default_rng() if rng is None else rng
    try:
        rng.bit_generator.state = _from_json(saved)
    except (TypeError, ValueError, KeyError) as error:
        raise CheckpointError(f"the saved generator state does not fit this run's generator: {error}") from None
    return rng


def encode_state(state: SamplerState) -> tuple[dict, dict]:
    """(arrays ``state.<field>``, scalars) of a sampler state."""
    arrays, scalars = {}, {"noise_count": int(state.noise_count)}
    for name in _STATE_FIELDS:
        value = getattr(state, name)
        if value is not None:
            arrays[f"state.{name}"] = np.asarray(value)
    return arrays, scalars


def decode_state(arrays: dict, scalars: dict) -> SamplerState:
    """Inverse of :func:`encode_state`."""
    parts = {name: arrays.get(f"state.{name}") for name in _STATE_FIELDS}
    return SamplerState(**parts, noise_count=int(scalars["noise_count"]))


def split_target_state(state: dict) -> tuple[dict, dict]:
    """A target's ``checkpoint_state()`` as (arrays ``target.<key>``, JSON scalars)."""
    arrays = {f"target.{key}": value for key, value in state.items() if isinstance(value, np.ndarray)}
    scalars = {key: _jsonable(value) for key, value in state.items() if not isinstance(value, np.ndarray)}
    return arrays, scalars


def join_target_state(arrays: dict, scalars: dict) -> dict:
    """Inverse of :func:`split_target_state`."""
    state = {key[len("target."):]: value for key, value in arrays.items() if key.startswith("target.")}
    state.update(_from_json(scalars))
    return state


@dataclass
class Checkpoint:
    """A run's state after ``meta["step"]`` steps: named arrays and JSON-able ``meta``."""

    arrays: dict = field(default_factory=dict)
    meta: dict = field(default_factory=dict)

    @property
    def step(self) -> int:
        return int(self.meta["step"])


def payload_digest(meta_text: str, arrays: dict) -> str:
    """SHA-256 over the meta JSON and every array's name, dtype, shape and bytes (names sorted)."""
    digest = hashlib.sha256(meta_text.encode())
    for name in sorted(arrays):
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"\0{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        digest.update(array.data if array.size else b"")
    return digest.hexdigest()


# --------------------------------------------------------------------------------------------- the files


def _check_arrays(arrays: dict) -> None:
    for name, array in arrays.items():
        if name in ("meta", "checksum") or array.dtype.hasobject:
            raise ValueError(f"checkpoint array {name!r}: reserved name or object dtype")


def write_checkpoint(folder: Path, checkpoint: Checkpoint, hash_: str) -> Path:
    """Save ``checkpoint`` atomically as ``folder/checkpoint.npz``, the former one becoming ``checkpoint.prev.npz``."""
    folder = Path(folder)
    arrays = {name: np.asarray(array) for name, array in checkpoint.arrays.items()}
    _check_arrays(arrays)
    meta_text = json.dumps({**checkpoint.meta, "format_version": FORMAT_VERSION, "config_hash": hash_})
    temporary = folder / f".{CHECKPOINT}.tmp{os.getpid()}"
    try:
        with open(temporary, "wb") as handle:
            np.savez(handle, meta=np.array(meta_text), checksum=np.array(payload_digest(meta_text, arrays)), **arrays)
            handle.flush()
            os.fsync(handle.fileno())
        if (folder / CHECKPOINT).exists():
            os.replace(folder / CHECKPOINT, folder / PREVIOUS)
        os.replace(temporary, folder / CHECKPOINT)
    finally:
        temporary.unlink(missing_ok=True)
    _sync_folder(folder)
    return folder / CHECKPOINT


def _sync_folder(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


def read_checkpoint(path: Path, hash_: Optional[str] = None) -> Checkpoint:
    """Load and verify one checkpoint file (format version, payload checksum and, given ``hash_``, the config)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
        meta_text, checksum = str(arrays.pop("meta")), str(arrays.pop("checksum"))
        meta = json.loads(meta_text)
    except FileNotFoundError:
        raise CheckpointError(f"{path.name} does not exist") from None
    except Exception as error:  # noqa: BLE001 - zip, zlib, npy-header and JSON errors all mean a damaged file
        raise CheckpointError(f"{path.name} is unreadable ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''})") from None
    if payload_digest(meta_text, arrays) != checksum:
        raise CheckpointError(f"{path.name} is corrupt (payload checksum mismatch)")
    if meta.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path.name} has format version {meta.get('format_version')!r}; this code reads {FORMAT_VERSION}")
    if hash_ is not None and meta.get("config_hash") != hash_:
        raise CheckpointError(f"{path.name} was written by a run with another config (config hash differs)")
    return Checkpoint(arrays, meta)


def load_latest(folder: Path, hash_: str) -> tuple[Checkpoint, str]:
    """The newest usable checkpoint of ``folder`` and its file name: ``checkpoint.npz``, else (one warning) the
    previous one. A :class:`CheckpointError` naming every problem when neither is usable."""
    folder = Path(folder)
    problems = []
    for name in (CHECKPOINT, PREVIOUS):
        try:
            checkpoint = read_checkpoint(folder / name, hash_)
        except CheckpointError as error:
            problems.append(str(error))
            continue
        if problems and (folder / CHECKPOINT).exists():
            log.warning("%s: resuming from %s (step %d) instead", problems[0], name, checkpoint.step)
        elif problems:  # killed between the two renames of a save: the previous file is the newest
            log.info("no %s: resuming from %s (step %d)", CHECKPOINT, name, checkpoint.step)
        return checkpoint, name
    if not (folder / CHECKPOINT).exists() and not (folder / PREVIOUS).exists():
        raise CheckpointError(f"{folder} has no checkpoint ({CHECKPOINT}) to resume from: the run stopped before its "
                              "first one (run.checkpoint_every_s / run.checkpoint_every_steps) or already finished")
    raise CheckpointError(f"no usable checkpoint in {folder}: " + "; ".join(problems))


def remove_checkpoints(folder: Path) -> None:
    """Delete the checkpoints of a finished run (and temporary files a killed save left)."""
    folder = Path(folder)
    for path in [folder / CHECKPOINT, folder / PREVIOUS, *folder.glob(f".{CHECKPOINT}.tmp*")]:
        path.unlink(missing_ok=True)


class Checkpointer:
    """Where and how often a run saves its state: every ``every_steps`` steps and/or every ``every_s`` seconds of
    wall time (0 = off); the runner asks :meth:`next_due` once per checkpoint, not per step."""

    def __init__(self, folder: Path, hash_: str, every_s: float = 0.0, every_steps: int = 0):
        self.folder, self.hash = Path(folder), hash_
        self.every_s, self.every_steps = float(every_s), int(every_steps)
        self.saved_step: Optional[int] = None
        self.saves = 0

    def next_due(self, step: int) -> tuple[float, float]:
        """(step, perf_counter time) of the next periodic checkpoint after ``step``; inf when off."""
        due_step = step + self.every_steps if self.every_steps else float("inf")
        due_time = time.perf_counter() + self.every_s if self.every_s else float("inf")
        return due_step, due_time

    def save(self, checkpoint: Checkpoint) -> bool:
        """Write ``checkpoint``; a failed write (disk full, ...) is logged and the run goes on. True if written."""
        try:
            path = write_checkpoint(self.folder, checkpoint, self.hash)
        except OSError as error:
            log.warning("checkpoint at step %d not written: %s", checkpoint.step, error)
            return False
        self.saved_step = checkpoint.step
        self.saves += 1
        log.info("checkpoint at step %d: %s", checkpoint.step, path)
        return True
