"""Data layer: the data folder, known files (download + checksum), IDX reading and MNIST."""

from sgmcmc.data.folder import DataError, resolve_data_dir
from sgmcmc.data.files import DataFile, fetch, verify
from sgmcmc.data.idx import read_idx, write_idx
from sgmcmc.data.mnist import MNIST_FILES, MnistData, load_mnist

__all__ = [
    "DataError",
    "resolve_data_dir",
    "DataFile",
    "fetch",
    "verify",
    "read_idx",
    "write_idx",
    "MNIST_FILES",
    "MnistData",
    "load_mnist",
]
