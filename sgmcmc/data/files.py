"""Known data files: where they come from, how to check them, and fetching them into the data folder.

A file is checked by the SHA-256 and size of its *decompressed* content, so a re-compressed copy of the
original data passes. Passed checks are remembered per process by (path, size, mtime, inode).
"""

from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import tempfile
import urllib.error
import urllib.request
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Dict, Optional, Tuple

from sgmcmc.data.folder import ENV_VAR, DataError

DOWNLOAD_TIMEOUT = 20.0
CHUNK = 1 << 20

# Compressors for a download whose URL serves the file uncompressed (e.g. LIBSVM's letter, connect-4).
_WRITERS: Dict[str, Callable[[BinaryIO], BinaryIO]] = {
    ".gz": lambda f: gzip.GzipFile(fileobj=f, mode="wb", mtime=0),
    ".bz2": lambda f: bz2.BZ2File(f, "wb", compresslevel=9),
    ".xz": lambda f: lzma.LZMAFile(f, "wb"),
}
_OPENERS: Dict[str, Callable[[Path], BinaryIO]] = {
    ".gz": lambda p: gzip.open(p, "rb"),
    ".bz2": lambda p: bz2.open(p, "rb"),
    ".xz": lambda p: lzma.open(p, "rb"),
}
# What a broken compressed stream raises (truncation gives EOFError).
STREAM_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError)

_verified: set = set()


class FolderNotWritable(Exception):
    """The data folder refuses a new file; no URL can help."""


@dataclass(frozen=True)
class DataFile:
    """A file of a data set: its path in the data folder, download URLs and decompressed checksum."""

    relative_path: str
    urls: Tuple[str, ...]
    sha256: Optional[str]  # of the decompressed content; None: unknown (only the stream and the parser check it)
    size: int  # decompressed bytes (ignored without a checksum)
    dataset: str = ""  # e.g. "MNIST", used in messages
    companions: Tuple[str, ...] = ()  # file names of the whole set, used in messages

    @property
    def name(self) -> str:
        """The file name (last part of the relative path)."""
        return Path(self.relative_path).name


def open_decompressed(path: Path, like: str = "") -> BinaryIO:
    """Open ``path`` for reading its decompressed bytes; the suffix of ``like`` (else of path) picks the codec."""
    suffix = Path(like or str(path)).suffix.lower()
    opener = _OPENERS.get(suffix)
    return opener(Path(path)) if opener else open(path, "rb")


def content_digest(path: Path, like: str = "") -> Tuple[str, int]:
    """SHA-256 hex digest and length of the decompressed content, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    try:
        stream = open_decompressed(path, like)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc}") from exc
    try:
        with stream:
            for chunk in iter(lambda: stream.read(CHUNK), b""):
                digest.update(chunk)
                size += len(chunk)
    except STREAM_ERRORS as exc:
        if Path(like or str(path)).suffix.lower() not in _OPENERS:
            raise DataError(f"cannot read {path}: {exc}") from exc
        raise DataError(
            f"corrupt compressed file {path}: {exc} (file corrupt or truncated; delete it to download again)"
        ) from exc
    return digest.hexdigest(), size


def verify(path: os.PathLike, data_file: DataFile) -> Path:
    """Check the decompressed SHA-256 and size of ``path`` against ``data_file``; raise DataError if they differ.
    Without a known checksum, only that the compressed stream decompresses to its end."""
    path = Path(path)
    got, size = content_digest(path, data_file.relative_path)
    if data_file.sha256 is None:
        return path
    if got != data_file.sha256.lower() or size != data_file.size:
        sizes = "" if size == data_file.size else f", {size} bytes instead of {data_file.size}"
        raise DataError(
            f"checksum mismatch for {path}: expected {data_file.sha256} got {got}{sizes} "
            "(file corrupt or truncated; delete it to download again)"
        )
    return path


def _cache_key(path: Path, data_file: DataFile) -> tuple:
    """What identifies one version of a file on disk, for the per-process verification cache."""
    stat = path.stat()
    return (str(path.resolve()), stat.st_size, stat.st_mtime_ns, stat.st_ino, (data_file.sha256 or "").lower(), data_file.size)


def verify_cached(path: os.PathLike, data_file: DataFile) -> Path:
    """Like :func:`verify`, but skip the hashing when this process already checked the same file version
    (a file without a known checksum is taken as it is: its parser checks it)."""
    path = Path(path)
    if data_file.sha256 is None:
        return path
    key = _cache_key(path, data_file)
    if key not in _verified:
        verify(path, data_file)
        _verified.add(key)
    return path


def copy_url(url: str, out: BinaryIO) -> None:
    """Write the bytes served at ``url`` to ``out``."""
    request = urllib.request.Request(url, headers={"User-Agent": "sgmcmc-data/0.1"})
    with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT) as response:
        for chunk in iter(lambda: response.read(CHUNK), b""):
            out.write(chunk)


def download_into(target: Path, data_file: DataFile, write: Callable[[BinaryIO], None], compress: bool) -> None:
    """Fill a temporary file next to ``target`` with ``write(out)`` (compressed on the way by the target's
    suffix when ``compress``), verify it against ``data_file``, then move it into place: a failed or
    interrupted download never leaves a file under the target's name."""
    try:
        handle, temp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise FolderNotWritable(f"cannot write to {target.parent}: {reason(exc)}") from exc
    temp = Path(temp_name)
    try:
        compressor = _WRITERS.get(target.suffix) if compress else None
        with os.fdopen(handle, "wb") as raw, (compressor(raw) if compressor else raw) as out:
            write(out)
        try:
            verify(temp, data_file)
        except DataError as exc:
            raise DataError(f"the downloaded file is not the expected one: {exc}") from exc
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)


def _download(url: str, target: Path, data_file: DataFile) -> None:
    """Download ``url`` into ``target`` (:func:`download_into`); when the target is compressed (.gz/.bz2/.xz)
    and the URL does not end in that suffix, the bytes are compressed on the way."""
    download_into(target, data_file, lambda out: copy_url(url, out), compress=not url.endswith(target.suffix))


def reason(exc: BaseException) -> str:
    """A short one-line description of why a download failed."""
    if isinstance(exc, urllib.error.HTTPError):
        text = str(exc)
    elif isinstance(exc, urllib.error.URLError):
        text = str(exc.reason)
    else:
        text = str(exc)
    return " ".join((text or type(exc).__name__).split())


def missing_message(data_file: DataFile, data_dir: Path, attempts: str) -> str:
    """The one-line error for a file that is neither in the folder nor downloadable."""
    label = f"{data_file.dataset} file" if data_file.dataset else "data file"
    names = ", ".join(data_file.companions or (data_file.name,))
    target_dir = (data_dir / data_file.relative_path).parent
    return (
        f"{label} {data_file.relative_path} is not in {data_dir} and could not be downloaded {attempts}; "
        f"put the original files ({names}) into {target_dir}{os.sep} or set {ENV_VAR} / data_dir "
        "to a folder that has them"
    )


def fetch(data_file: DataFile, data_dir: os.PathLike) -> Path:
    """Path of ``data_file`` in ``data_dir``, verified; download it first (trying each URL) when missing."""
    data_dir = Path(data_dir)
    target = data_dir / data_file.relative_path
    if target.exists():
        return verify_cached(target, data_file)
    created = make_folders(target.parent, data_file, data_dir)
    failures = []
    for url in data_file.urls:
        try:
            _download(url, target, data_file)
        except DataError as exc:
            failures.append(f"{url} ({exc})")
        except FolderNotWritable as exc:
            failures.append(f"{url} ({exc})")
            break
        except Exception as exc:  # noqa: BLE001 - any network/IO failure means: try the next URL
            failures.append(f"{url} ({reason(exc)})")
        else:
            return verify_cached(target, data_file)
    remove_empty(created)
    attempts = "from " + " or ".join(failures) if failures else "(no download URL known)"
    raise DataError(missing_message(data_file, data_dir, attempts))


def make_folders(folder: Path, data_file: DataFile, data_dir: Path) -> list:
    """Create ``folder`` and its missing parents; the ones created, deepest first."""
    missing = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        remove_empty(missing)
        why = f"(cannot create {folder}: {reason(exc)})"
        raise DataError(missing_message(data_file, data_dir, why)) from exc
    return missing


def remove_empty(folders: list) -> None:
    """Remove the given folders (deepest first) where they are still empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return
