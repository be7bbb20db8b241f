"""IDX files (the MNIST format): big-endian header ``0 0 type ndim`` + ndim uint32 dims, then raw data.

Only the unsigned-byte type (0x08) is supported; ``.gz`` files are read and written through gzip.
"""

from __future__ import annotations

import gzip
import os
import struct
import zlib
from pathlib import Path
from typing import BinaryIO

import numpy as np

from sgmcmc.data.folder import DataError

UBYTE = 0x08
_TYPE_NAMES = {0x08: "unsigned byte", 0x09: "signed byte", 0x0B: "short", 0x0C: "int", 0x0D: "float", 0x0E: "double"}
_STREAM_ERRORS = (EOFError, OSError, zlib.error)


def _open(path: Path, mode: str) -> BinaryIO:
    """Open ``path`` in binary ``mode``, through gzip when its suffix is ``.gz``."""
    if path.suffix.lower() == ".gz":
        return gzip.open(path, mode) if "r" in mode else gzip.GzipFile(path, mode, mtime=0)
    return open(path, mode)


def _read_exactly(stream: BinaryIO, out: memoryview) -> int:
    """Fill ``out`` from ``stream``; the number of bytes read (less than len(out) at end of data)."""
    filled = 0
    while filled < len(out):
        count = stream.readinto(out[filled:])
        if not count:
            break
        filled += count
    return filled


def _parse_header(stream: BinaryIO, path: Path) -> tuple:
    """Read the magic and dims; return the declared shape."""
    magic = stream.read(4)
    if len(magic) < 4:
        raise DataError(f"IDX file {path} is truncated: {len(magic)} bytes, no complete header")
    zero, kind, ndim = struct.unpack(">HBB", magic)
    if zero != 0 or ndim == 0:
        raise DataError(f"{path} is not an IDX file (magic bytes {magic.hex()})")
    if kind != UBYTE:
        name = _TYPE_NAMES.get(kind, "unknown")
        raise DataError(f"IDX file {path} has data type 0x{kind:02x} ({name}); only unsigned byte (0x08) is supported")
    raw = stream.read(4 * ndim)
    if len(raw) < 4 * ndim:
        raise DataError(f"IDX file {path} is truncated inside its header ({ndim} dimensions declared)")
    return struct.unpack(f">{ndim}I", raw)


def read_idx(path: os.PathLike) -> np.ndarray:
    """Read an unsigned-byte IDX file (plain or ``.gz``) into a uint8 array of the declared shape."""
    path = Path(path)
    try:
        with _open(path, "rb") as stream:
            shape = _parse_header(stream, path)
            data = np.empty(int(np.prod(shape, dtype=np.int64)), dtype=np.uint8)
            filled = _read_exactly(stream, memoryview(data))
            extra = stream.read(1)
    except FileNotFoundError as exc:
        raise DataError(f"IDX file {path} does not exist") from exc
    except _STREAM_ERRORS as exc:
        raise DataError(f"cannot read IDX file {path}: {exc} (file corrupt or truncated)") from exc
    if filled < data.size:
        raise DataError(f"IDX file {path} is truncated: {filled} data bytes, shape {shape} needs {data.size}")
    if extra:
        raise DataError(f"IDX file {path} has extra bytes after the {data.size} data bytes of shape {shape}")
    return data.reshape(shape)


def write_idx(path: os.PathLike, array: np.ndarray) -> Path:
    """Write a uint8 array as an IDX file (gzip-compressed when the suffix is ``.gz``)."""
    path = Path(path)
    array = np.asarray(array)
    if array.dtype != np.uint8:
        raise ValueError(f"write_idx writes uint8 arrays only, got {array.dtype}")
    if not 1 <= array.ndim <= 255:
        raise ValueError(f"write_idx needs 1 to 255 dimensions, got {array.ndim}")
    header = struct.pack(f">HBB{array.ndim}I", 0, UBYTE, array.ndim, *array.shape)
    with _open(path, "wb") as stream:
        stream.write(header)
        stream.write(np.ascontiguousarray(array).tobytes())
    return path
