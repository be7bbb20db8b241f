"""MNIST (LeCun, Cortes & Burges): the four original IDX files and a loader with an optional digit filter."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence, Union

import numpy as np

from sgmcmc.data.files import DataFile, fetch
from sgmcmc.data.folder import DataError, resolve_data_dir
from sgmcmc.data.idx import read_idx

IMAGE_SIDE = 28
MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "http://yann.lecun.com/exdb/mnist/")
FILE_NAMES = {
    "train_images": "train-images-idx3-ubyte.gz",
    "train_labels": "train-labels-idx1-ubyte.gz",
    "test_images": "t10k-images-idx3-ubyte.gz",
    "test_labels": "t10k-labels-idx1-ubyte.gz",
}
# SHA-256 and size of the decompressed originals (see shared/data/README.md).
_CHECKSUMS = {
    "train_images": ("ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db", 47_040_016),
    "train_labels": ("65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5", 60_008),
    "test_images": ("0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7", 7_840_016),
    "test_labels": ("ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2", 10_008),
}


def mnist_file(key: str, sha256: str, size: int, name: Optional[str] = None) -> DataFile:
    """The DataFile of one MNIST part (``key`` in FILE_NAMES) stored as ``mnist/<name>``."""
    name = name or FILE_NAMES[key]
    return DataFile(
        relative_path=f"mnist/{name}",
        urls=tuple(mirror + name for mirror in MIRRORS),
        sha256=sha256,
        size=size,
        dataset="MNIST",
        companions=tuple(FILE_NAMES.values()),
    )


MNIST_FILES = {key: mnist_file(key, *_CHECKSUMS[key]) for key in FILE_NAMES}


@dataclass(frozen=True, eq=False)
class MnistData:
    """MNIST arrays: images (N, 784) uint8 in 0..255, labels (N,) uint8 in 0..9."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray


def _split(images: np.ndarray, labels: np.ndarray, image_path, label_path) -> tuple:
    """Check one images/labels pair and flatten the images to (N, 784)."""
    if images.ndim != 3 or images.shape[1:] != (IMAGE_SIDE, IMAGE_SIDE):
        raise DataError(f"MNIST images in {image_path} have shape {images.shape}, expected (N, 28, 28)")
    if labels.ndim != 1:
        raise DataError(f"MNIST labels in {label_path} have shape {labels.shape}, expected (N,)")
    if images.shape[0] != labels.shape[0]:
        raise DataError(
            f"MNIST count mismatch: {images.shape[0]} images in {image_path} but {labels.shape[0]} labels in {label_path}"
        )
    if labels.size and labels.max() > 9:
        raise DataError(f"MNIST labels in {label_path} go up to {labels.max()}, expected digits 0..9")
    return images.reshape(images.shape[0], IMAGE_SIDE * IMAGE_SIDE), labels


def _keep_digits(images: np.ndarray, labels: np.ndarray, digits: np.ndarray) -> tuple:
    """The rows whose label is in ``digits``, in their original order."""
    mask = np.isin(labels, digits)
    return images[mask], labels[mask]


def _digit_array(digits: Sequence[int]) -> np.ndarray:
    """Validated digits as an int array (each in 0..9, at least one)."""
    values = np.asarray(list(digits))
    if values.size == 0 or values.ndim != 1 or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(f"digits must be a non-empty sequence of integers, got {digits!r}")
    if values.min() < 0 or values.max() > 9:
        raise ValueError(f"digits must lie in 0..9, got {digits!r}")
    return values


def load_mnist(
    data_dir: Optional[Union[str, os.PathLike]] = None,
    digits: Optional[Sequence[int]] = None,
    files: Optional[Mapping[str, DataFile]] = None,
) -> MnistData:
    """Load MNIST from the data folder (fetching and verifying the files); keep only ``digits`` if given.

    ``files`` maps ``train_images``, ``train_labels``, ``test_images``, ``test_labels`` to DataFiles
    (default: the real MNIST files, MNIST_FILES).
    """
    folder = resolve_data_dir(data_dir)
    files = MNIST_FILES if files is None else files
    missing = [key for key in FILE_NAMES if key not in files]
    if missing:
        raise ValueError(f"files lacks the MNIST parts {missing}")
    paths = {key: fetch(files[key], folder) for key in FILE_NAMES}
    arrays = {key: read_idx(path) for key, path in paths.items()}
    train = _split(arrays["train_images"], arrays["train_labels"], paths["train_images"], paths["train_labels"])
    test = _split(arrays["test_images"], arrays["test_labels"], paths["test_images"], paths["test_labels"])
    if digits is not None:
        keep = _digit_array(digits)
        train, test = _keep_digits(*train, keep), _keep_digits(*test, keep)
    return MnistData(train_images=train[0], train_labels=train[1], test_images=test[0], test_labels=test[1])
