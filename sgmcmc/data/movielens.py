"""MovieLens-1M ratings (Harper & Konstan 2015) for the online BPMF of the SGHMC paper (SPEC §2 T12, §3 E8, §5).

``ratings.dat`` holds one rating per line, ``UserID::MovieID::Rating::Timestamp`` (ratings 1–5; 1,000,209 lines, 6,040
users, 3,706 rated movies). :func:`read_ratings` reads it into arrays in FILE ORDER, with the user and movie ids mapped
to contiguous 0-based indices in the order of their first appearance (what the authors' ``mf/python/mkdata.py`` in
tqchen/ML-SGHMC does; MovieLens-1M's file is sorted by user, so its user indices follow the ids).

Where the file is: ``<data_dir>/movielens/ml-1m/ratings.dat`` (:func:`ratings_path`), or any file of the same format
given as ``ratings_file`` (e.g. a synthetic one, :mod:`sgmcmc.data.synthetic_ratings`). When the default file is
missing, :func:`load_movielens` fetches GroupLens's canonical archive ``ml-1m.zip`` into
``<data_dir>/movielens/ml-1m.zip`` (through :func:`sgmcmc.data.files.download_into`, which never leaves a partial file
under the archive's name), checks it and extracts ``ml-1m/ratings.dat``; an archive already in that place is used
without a download. The archive's check: GroupLens publishes its MD5 (:data:`ARCHIVE_MD5`), while the project's
:class:`~sgmcmc.data.files.DataFile` knows only SHA-256 checksums (of decompressed content), so the DataFile here has
none and the MD5 of the archive is checked in this module (:func:`check_archive`). The licence of MovieLens forbids
redistribution: the file is not stored with the project, and offline (or when the download fails) the loader stops
with a one-line :class:`~sgmcmc.data.folder.DataError` naming where to put the file and the command that writes a
synthetic stand-in.

The folds (:func:`fold_mask`) are the authors' ``mf/python/mknfold.py``: ``random.seed(0)``, then for every line in
file order ``random.randint(1, nfold) == fold`` puts it in the test set. That script is Python 2, whose
``randint(1, n)`` is ``1 + int(random() * n)`` (one ``random()`` per line; Python 3's ``randint`` draws with
``getrandbits`` and rejection and gives another split), and whose ``random.seed(0)`` seeds the Mersenne Twister
exactly as Python 3's ``random.Random(0)`` does; so the split is
``1 + int(random.Random(0).random() * n_folds) == fold`` line by line, here computed in one call as
``np.random.RandomState([0]).random_sample(n)`` (the same generator, seeding and 53-bit doubles as Python's
``random``, pinned by the tests to the loop with ``random.Random(0)``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np

from sgmcmc.data.files import DataFile, copy_url, download_into, reason, remove_empty
from sgmcmc.data.folder import DataError, resolve_data_dir

ARCHIVE_URL = "https://files.grouplens.org/datasets/movielens/ml-1m.zip"
# GroupLens's published MD5 of ml-1m.zip (https://files.grouplens.org/datasets/movielens/ml-1m.zip.md5)
ARCHIVE_MD5 = "c4d9eecfca2ab87c1945afe126590906"
ARCHIVE_MEMBER = "ml-1m/ratings.dat"
RATINGS_PATH = "movielens/ml-1m/ratings.dat"  # relative to the data folder
# No SHA-256 is published (sha256=None): the MD5 is checked by check_archive, the content by the parser.
ARCHIVE = DataFile("movielens/ml-1m.zip", (ARCHIVE_URL,), None, 0, "MovieLens-1M", ("ml-1m.zip", "ratings.dat"))
SYNTHETIC_COMMAND = "python -m sgmcmc.data.synthetic_ratings --size full --out"

PathLike = Union[str, os.PathLike]


@dataclass(frozen=True, eq=False)
class MovieLensRatings:
    """Ratings in file order: ``users`` and ``items`` (N,) int64 0-based indices, ``ratings`` (N,) int64 in 1..5;
    ``user_ids`` / ``item_ids`` the file's id of every index (index → id); ``path`` the file read."""

    users: np.ndarray
    items: np.ndarray
    ratings: np.ndarray
    user_ids: np.ndarray
    item_ids: np.ndarray
    path: Path

    @property
    def n_users(self) -> int:
        return int(self.user_ids.size)

    @property
    def n_items(self) -> int:
        return int(self.item_ids.size)

    def __len__(self) -> int:
        return int(self.ratings.size)


# ---------------------------------------------------------------------------------------------------- reading


def _first_appearance(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indices (N,), ids of the indices): every distinct id gets the index of its rank by first appearance."""
    unique, first, inverse = np.unique(ids, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")  # the distinct ids by first appearance
    rank = np.empty(unique.size, dtype=np.int64)
    rank[order] = np.arange(unique.size)
    return rank[inverse.reshape(-1)], unique[order]


def _bad_line(path: Path, text: bytes) -> DataError:
    """The DataError naming the first line that is not ``int::int::int::int`` (the slow scan after a failed fast
    one)."""
    for number, line in enumerate(text.split(b"\n"), start=1):
        if not line.strip():
            continue
        fields = line.strip().split(b"::")
        try:
            ok = len(fields) == 4 and len([int(field) for field in fields]) == 4
        except ValueError:
            ok = False
        if not ok:
            shown = line.strip()[:80].decode("utf-8", "replace")
            return DataError(f"{path}, line {number}: expected UserID::MovieID::Rating::Timestamp (integers), "
                             f"got {shown!r}")
    return DataError(f"{path}: not in the UserID::MovieID::Rating::Timestamp format")


def read_ratings(path: PathLike) -> MovieLensRatings:
    """The ratings of a ``ratings.dat`` file (module docstring); a one-line DataError naming the file (and the line)
    when it cannot be read, is not in the format, has a rating outside 1..5 or has no ratings."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {path}: {reason(exc)}") from exc
    n_lines = sum(1 for line in text.split(b"\n") if line.strip())
    if n_lines == 0:
        raise DataError(f"{path} has no ratings (empty file)")
    try:
        values = np.array(text.replace(b"::", b" ").split(), dtype=np.int64)
    except (ValueError, OverflowError):
        raise _bad_line(path, text) from None
    if values.size != 4 * n_lines or text.count(b"::") != 3 * n_lines:
        raise _bad_line(path, text)
    rows = values.reshape(n_lines, 4)
    ratings = rows[:, 2]
    bad = (ratings < 1) | (ratings > 5)
    if np.any(bad):
        first = int(np.argmax(bad))
        raise DataError(f"{path}: rating {ratings[first]} of rating number {first + 1} is outside 1..5")
    users, user_ids = _first_appearance(rows[:, 0])
    items, item_ids = _first_appearance(rows[:, 1])
    return MovieLensRatings(users, items, np.ascontiguousarray(ratings), user_ids, item_ids, path)


# ---------------------------------------------------------------------------------------------------- the folds


def fold_mask(n_lines: int, fold: int, n_folds: int = 5) -> np.ndarray:
    """Test-set mask (n_lines,) bool of fold ``fold`` in 1..n_folds: the authors' mknfold.py (module docstring), line i
    in the test set iff ``1 + int(u_i · n_folds) == fold`` with u_i the i-th ``random.Random(0).random()``."""
    n_lines, n_folds, fold = int(n_lines), int(n_folds), int(fold)
    if n_lines < 0 or n_folds < 1 or not 1 <= fold <= n_folds:
        raise ValueError(f"fold must be in 1..n_folds and n_lines >= 0; got fold={fold}, n_folds={n_folds}, "
                         f"n_lines={n_lines}")
    uniforms = np.random.RandomState([0]).random_sample(n_lines)  # Python's random.Random(0).random(), n times
    return (uniforms * n_folds).astype(np.int64) + 1 == fold


# ---------------------------------------------------------------------------------------------------- fetching


# MovieLens-1M's ratings.dat: ratings, users, rated movies (GroupLens's README; a synthetic file of the full size has the
# same counts, but its timestamps are 0)
MOVIELENS_1M_COUNTS = (1_000_209, 6040, 3706)


def check_movielens_1m(data: MovieLensRatings, path: PathLike) -> None:
    """A one-line DataError unless ``data`` read from ``path`` is MovieLens-1M: its counts
    (:data:`MOVIELENS_1M_COUNTS`) and a first line with a real timestamp (the synthetic writer's are 0), so that a
    stand-in is never reported beside the published numbers."""
    counts = (len(data), data.n_users, data.n_items)
    with open(path, "rb") as stream:
        first = stream.readline().decode("latin-1").strip().split("::")
    synthetic = len(first) == 4 and first[3] == "0"
    if counts != MOVIELENS_1M_COUNTS or synthetic:
        why = "its timestamps are 0, as in a synthetic stand-in" if synthetic else \
            f"{counts[0]:,} ratings of {counts[1]:,} users and {counts[2]:,} movies, not {MOVIELENS_1M_COUNTS[0]:,} " \
            f"of {MOVIELENS_1M_COUNTS[1]:,} and {MOVIELENS_1M_COUNTS[2]:,}"
        raise DataError(f"{path} is not MovieLens-1M's ratings.dat ({why}); put GroupLens's file there, or use the "
                        "synthetic set (--ratings synthetic, or target.ratings_file=FILE)")


def ratings_path(data_dir: Optional[PathLike] = None) -> Path:
    """Where MovieLens-1M's ratings.dat belongs: ``<data_dir>/movielens/ml-1m/ratings.dat``."""
    return resolve_data_dir(data_dir) / RATINGS_PATH


def missing_message(data_dir: Path, why: str) -> str:
    """The one-line error for a ratings.dat that is neither in the data folder nor obtainable."""
    target = data_dir / RATINGS_PATH
    return (f"MovieLens-1M ratings file {target} is missing and {why}; put MovieLens-1M's ratings.dat (from "
            f"{ARCHIVE_URL}; its licence forbids redistribution) at {target}, or ml-1m.zip at "
            f"{data_dir / ARCHIVE.relative_path}, or set SGMCMC_DATA / data_dir to a folder that has it; for a "
            f"synthetic stand-in of the same format, elsewhere: {SYNTHETIC_COMMAND} FILE, then target.ratings_file=FILE")


def file_md5(path: PathLike) -> str:
    """MD5 hex digest of a file, read in chunks."""
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def check_archive(path: PathLike) -> Path:
    """``path`` if its MD5 is GroupLens's :data:`ARCHIVE_MD5`, else a one-line DataError."""
    path = Path(path)
    try:
        got = file_md5(path)
    except OSError as exc:
        raise DataError(f"cannot read {path}: {reason(exc)}") from exc
    if got != ARCHIVE_MD5:
        raise DataError(f"checksum mismatch for {path}: expected MD5 {ARCHIVE_MD5} got {got} (not GroupLens's "
                        "ml-1m.zip, or corrupt or truncated; delete it to download again)")
    return path


def download_archive(data_dir: Path) -> Path:
    """Download ml-1m.zip into ``<data_dir>/movielens/ml-1m.zip`` and check its MD5; a DataError
    (:func:`missing_message`) when that fails, with nothing left behind."""
    target = data_dir / ARCHIVE.relative_path
    created = [folder for folder in (target.parent, *target.parent.parents) if not folder.exists()]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        download_into(target, ARCHIVE, lambda out: copy_url(ARCHIVE_URL, out), compress=False)
    except Exception as exc:  # noqa: BLE001 - any network or file failure: the one-line error
        remove_empty(created)
        raise DataError(missing_message(data_dir, f"could not be downloaded from {ARCHIVE_URL} ({reason(exc)})")) \
            from exc
    try:
        return check_archive(target)
    except DataError as exc:
        target.unlink(missing_ok=True)  # the download just made is not GroupLens's archive
        raise DataError(missing_message(data_dir, f"the download from {ARCHIVE_URL} failed its check: {exc}")) \
            from exc


def extract_ratings(archive: Path, target: Path) -> Path:
    """Extract ``ml-1m/ratings.dat`` of the archive to ``target`` (a temporary file next to it, then renamed)."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise DataError(f"cannot write {target}: {reason(exc)}") from exc
    try:
        with os.fdopen(handle, "wb") as out, zipfile.ZipFile(archive) as bundle, bundle.open(ARCHIVE_MEMBER) as member:
            shutil.copyfileobj(member, out, 1 << 20)
        os.replace(temp, target)
    except (OSError, KeyError, EOFError, zipfile.BadZipFile) as exc:
        raise DataError(f"cannot extract {ARCHIVE_MEMBER} from {archive}: {reason(exc)} (corrupt or not ml-1m.zip; "
                        "delete it to download again)") from exc
    finally:
        Path(temp).unlink(missing_ok=True)
    return target


def fetch_ratings(data_dir: Optional[PathLike] = None) -> Path:
    """The path of ``<data_dir>/movielens/ml-1m/ratings.dat``, extracted from ``ml-1m.zip`` first when missing (the
    archive in the data folder, else downloaded; module docstring)."""
    folder = resolve_data_dir(data_dir)
    target = folder / RATINGS_PATH
    if target.exists():
        return target
    archive = folder / ARCHIVE.relative_path
    archive = check_archive(archive) if archive.exists() else download_archive(folder)
    return extract_ratings(archive, target)


def load_movielens(data_dir: Optional[PathLike] = None, ratings_file: Optional[PathLike] = None) -> MovieLensRatings:
    """The ratings of ``ratings_file`` if given (any file of the format; it must exist), else of MovieLens-1M's
    ratings.dat in the data folder (:func:`fetch_ratings`)."""
    if ratings_file is not None and str(ratings_file) != "":
        path = Path(ratings_file).expanduser()
        if not path.is_file():
            raise DataError(f"ratings_file {path} does not exist; write a synthetic one with: "
                            f"{SYNTHETIC_COMMAND} {path}")
        return read_ratings(path)
    return read_ratings(fetch_ratings(data_dir))
