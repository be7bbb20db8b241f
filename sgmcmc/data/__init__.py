"""Data layer: the data and cache folders, known files (download + checksum), IDX reading and MNIST.

Only the folders' names (:class:`DataError`, :func:`resolve_data_dir`, :func:`resolve_cache_dir`) are imported with
the package; the rest on first use, so that a run that reads no data file does not import the download and IDX
machinery.
"""

from sgmcmc import lazy_exports
from sgmcmc.data.folder import DataError, resolve_cache_dir, resolve_data_dir

_LAZY = {
    "DataFile": "sgmcmc.data.files",
    "fetch": "sgmcmc.data.files",
    "verify": "sgmcmc.data.files",
    "read_idx": "sgmcmc.data.idx",
    "write_idx": "sgmcmc.data.idx",
    "MNIST_FILES": "sgmcmc.data.mnist",
    "MnistData": "sgmcmc.data.mnist",
    "load_mnist": "sgmcmc.data.mnist",
}


__getattr__ = lazy_exports(globals(), _LAZY)


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "DataError",
    "resolve_data_dir",
    "resolve_cache_dir",
    "DataFile",
    "fetch",
    "verify",
    "read_idx",
    "write_idx",
    "MNIST_FILES",
    "MnistData",
    "load_mnist",
]
