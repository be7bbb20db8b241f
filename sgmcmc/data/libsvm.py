"""LIBSVM multiclass data sets for the DRBM experiments (SPEC §2 T9, §4.10): letter, connect-4, acoustic.

Files are stored bzip2-compressed under ``libsvm/`` in the data folder (shared/data/README.md §2) and read
with scikit-learn's ``load_svmlight_file`` into dense float64 arrays. Labels are mapped to 0..C−1 in the
order of their sorted values.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Tuple, Union

import numpy as np

from sgmcmc.data.files import DataFile, fetch
from sgmcmc.data.folder import DataError, resolve_data_dir

SITE = "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/"


def libsvm_file(
    relative_path: str, remote_name: str, sha256: Optional[str], size: int, dataset: str, companions: Tuple[str, ...]
) -> DataFile:
    """A LIBSVM collection file; ``sha256=None`` means no checksum is known (accepted after format checks)."""
    return DataFile(relative_path, (SITE + remote_name,), sha256, size, dataset, companions)  # type: ignore[arg-type]


_LETTER = ("letter.scale.tr.bz2", "letter.scale.t.bz2")
_ACOUSTIC = ("acoustic_scale.bz2", "acoustic_scale.t.bz2")
# Decompressed SHA-256 and size, computed from shared/data/libsvm (they match shared/data/README.md §2).
LIBSVM_FILES: Mapping[str, DataFile] = {
    "letter.scale.tr": libsvm_file(
        "libsvm/letter/letter.scale.tr.bz2", "letter.scale.tr",
        "701e46fa614770d41849b5df32268515df49559463887d50f00d6e1aeeaee7b9", 1_841_833, "LIBSVM letter", _LETTER,
    ),
    "letter.scale.t": libsvm_file(
        "libsvm/letter/letter.scale.t.bz2", "letter.scale.t",
        "07522ccbf54187fae6d560d1712b88c41ea1f7e8d19491c5adcc22ee37a075da", 877_223, "LIBSVM letter", _LETTER,
    ),
    "connect-4": libsvm_file(
        "libsvm/connect-4/connect-4.bz2", "connect-4",
        "6fd5ca7fb3d027ab19412a3ee4af7f9198a699064bc478cfc915b208a7addcac", 14_744_061, "LIBSVM connect-4",
        ("connect-4.bz2",),
    ),
    # Not in shared/data: no checksum known (SPEC §4.10: download when online, else a clear error).
    "acoustic_scale": libsvm_file(
        "libsvm/acoustic/acoustic_scale.bz2", "acoustic_scale.bz2", None, 0, "LIBSVM acoustic", _ACOUSTIC
    ),
    "acoustic_scale.t": libsvm_file(
        "libsvm/acoustic/acoustic_scale.t.bz2", "acoustic_scale.t.bz2", None, 0, "LIBSVM acoustic", _ACOUSTIC
    ),
}


@dataclass(frozen=True)
class LibsvmSet:
    """How one data set is stored and checked.

    ``files`` are (train, test), or a single file split by a seeded permutation into ``split`` = (n_train, n_test);
    ``rows`` is the exact row count of each file; ``labels`` the expected label values (all must occur).
    """

    name: str
    files: Tuple[DataFile, ...]
    rows: Tuple[int, ...]
    n_features: int
    labels: Tuple[int, ...]
    split: Optional[Tuple[int, int]] = None

    def __post_init__(self) -> None:
        if len(self.files) != len(self.rows) or len(self.files) not in (1, 2):
            raise ValueError(f"{self.name}: need 1 or 2 files with one row count each")
        if len(self.files) == 1 and (self.split is None or sum(self.split) != self.rows[0]):
            raise ValueError(f"{self.name}: a single file needs split=(n_train, n_test) summing to its rows")


LIBSVM_SETS: Mapping[str, LibsvmSet] = {
    "letter": LibsvmSet(
        "letter", (LIBSVM_FILES["letter.scale.tr"], LIBSVM_FILES["letter.scale.t"]), (10_500, 5_000), 16,
        tuple(range(1, 27)),
    ),
    "connect4": LibsvmSet(
        "connect4", (LIBSVM_FILES["connect-4"],), (67_557,), 126, (-1, 0, 1), split=(54_046, 13_511)
    ),
    # Labels 1..3 assumed from the LIBSVM SensIT Vehicle files (not checked against a copy here).
    "acoustic": LibsvmSet(
        "acoustic", (LIBSVM_FILES["acoustic_scale"], LIBSVM_FILES["acoustic_scale.t"]), (78_823, 19_705), 50,
        (1, 2, 3),
    ),
}


@dataclass(frozen=True, eq=False)
class LabelledSplit:
    """A train/test split: x (N, D) float64, y (N,) int64 in 0..C−1; class k has file label ``label_values[k]``."""

    train_x: np.ndarray
    train_y: np.ndarray
    test_x: np.ndarray
    test_y: np.ndarray
    n_classes: int
    name: str
    label_values: Tuple[int, ...]


# ---------------------------------------------------------------------------------------------------- fetching


def fetch_libsvm(data_file: DataFile, data_dir: os.PathLike) -> Path:
    """:func:`sgmcmc.data.files.fetch` (a file without a known checksum is checked by its parser)."""
    return fetch(data_file, data_dir)


# ---------------------------------------------------------------------------------------------------- reading


def read_libsvm(
    path: Path, data_file: DataFile, rows: int, n_features: int, labels: Tuple[int, ...]
) -> Tuple[np.ndarray, np.ndarray]:
    """Dense float64 x (rows, n_features) and the file's labels as int64; DataError naming the file if wrong."""
    from sklearn.datasets import load_svmlight_file

    what = f"{data_file.dataset or 'LIBSVM'} file {path}"
    try:
        x, y = load_svmlight_file(str(path), n_features=n_features, dtype=np.float64, zero_based=False)
    except (ValueError, EOFError, OSError) as exc:
        raise DataError(f"cannot parse {what} as LIBSVM data with {n_features} features: {exc}") from exc
    if x.shape[0] != rows:
        raise DataError(f"{what}: expected {rows:,} rows, found {x.shape[0]:,} (wrong or truncated file)")
    return x.toarray(), _labels(y, labels, what)


def _labels(y: np.ndarray, expected: Tuple[int, ...], what: str) -> np.ndarray:
    """The labels as int64, checked to be whole numbers from ``expected``."""
    bad = ~np.isin(y, np.asarray(expected, dtype=np.float64))
    if bad.any():
        raise DataError(f"{what}: label {y[bad][0]:g} outside the expected set {sorted(expected)}")
    return y.astype(np.int64)


def _class_indices(
    train_y: np.ndarray, test_y: np.ndarray, expected: Tuple[int, ...], name: str
) -> Tuple[Tuple[int, ...], np.ndarray, np.ndarray]:
    """Label values (sorted union of train and test, which must be all expected labels) and y mapped to 0..C−1."""
    values = np.union1d(train_y, test_y)
    missing = sorted(set(expected) - set(values.tolist()))
    if missing:
        raise DataError(f"LIBSVM {name}: labels {missing} never occur; the files are not the expected data set")
    return tuple(int(v) for v in values), np.searchsorted(values, train_y), np.searchsorted(values, test_y)


def seeded_split(n_rows: int, n_train: int, split_seed: int) -> Tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test): ``default_rng(split_seed).permutation(n_rows)`` cut after n_train (SPEC §4.10)."""
    order = np.random.default_rng(split_seed).permutation(n_rows)
    return order[:n_train], order[n_train:]


def load_libsvm(
    name: str,
    data_dir: Optional[Union[str, os.PathLike]] = None,
    split_seed: int = 0,
    spec: Optional[LibsvmSet] = None,
) -> LabelledSplit:
    """Load ``name`` in {"letter", "connect4", "acoustic"} (fetching files as needed) as a LabelledSplit.

    letter: train letter.scale.tr, test letter.scale.t; acoustic: acoustic_scale / acoustic_scale.t;
    connect4: the one file split 54,046/13,511 by ``split_seed`` (ignored by the others). ``spec`` replaces the
    registry entry (tests).
    """
    if spec is None:
        if name not in LIBSVM_SETS:
            raise ValueError(f"unknown LIBSVM data set {name!r}; allowed: {', '.join(sorted(LIBSVM_SETS))}")
        spec = LIBSVM_SETS[name]
    folder = resolve_data_dir(data_dir)
    paths = [fetch_libsvm(data_file, folder) for data_file in spec.files]
    parts = [
        read_libsvm(path, data_file, rows, spec.n_features, spec.labels)
        for path, data_file, rows in zip(paths, spec.files, spec.rows)
    ]
    if len(parts) == 1:
        (x, y), (train, test) = parts[0], seeded_split(spec.rows[0], spec.split[0], split_seed)
        parts = [(x[train], y[train]), (x[test], y[test])]
    (train_x, train_y), (test_x, test_y) = parts
    values, train_c, test_c = _class_indices(train_y, test_y, spec.labels, name)
    return LabelledSplit(train_x, train_c, test_x, test_c, len(values), name, values)
