"""MNIST loading on small generated files, plus one check on the real files when they are present."""

import gzip
import hashlib
from pathlib import Path

import numpy as np
import pytest

from sgmcmc.data import MNIST_FILES, DataError, DataFile, load_mnist, write_idx

SHARED_DATA = Path(__file__).parents[2].parent / "shared/data"


def _generated(tmp_path, n_train=30, n_test=12, n_train_labels=None, side=28):
    """Write small MNIST-like files under tmp_path/mnist; return (files, arrays)."""
    rng = np.random.default_rng(3)
    arrays = {
        "train_images": rng.integers(0, 256, (n_train, side, side), dtype=np.uint8),
        "train_labels": rng.integers(0, 10, n_train if n_train_labels is None else n_train_labels, dtype=np.uint8),
        "test_images": rng.integers(0, 256, (n_test, side, side), dtype=np.uint8),
        "test_labels": rng.integers(0, 10, n_test, dtype=np.uint8),
    }
    files = {}
    (tmp_path / "mnist").mkdir()
    for key, array in arrays.items():
        real = MNIST_FILES[key]
        path = write_idx(tmp_path / real.relative_path, array)
        content = gzip.decompress(path.read_bytes())
        files[key] = DataFile(real.relative_path, (), hashlib.sha256(content).hexdigest(), len(content))
    return files, arrays


def test_registry_paths_and_urls():
    assert MNIST_FILES["train_images"].relative_path == "mnist/train-images-idx3-ubyte.gz"
    assert MNIST_FILES["test_labels"].relative_path == "mnist/t10k-labels-idx1-ubyte.gz"
    assert MNIST_FILES["train_images"].size == 47_040_016
    urls = MNIST_FILES["train_labels"].urls
    assert urls == (
        "https://ossci-datasets.s3.amazonaws.com/mnist/train-labels-idx1-ubyte.gz",
        "http://yann.lecun.com/exdb/mnist/train-labels-idx1-ubyte.gz",
    )


def test_load_generated_files(tmp_path):
    files, arrays = _generated(tmp_path)
    data = load_mnist(tmp_path, files=files)
    assert data.train_images.shape == (30, 784) and data.train_images.dtype == np.uint8
    assert data.test_images.shape == (12, 784) and data.test_labels.shape == (12,)
    np.testing.assert_array_equal(data.train_images, arrays["train_images"].reshape(30, 784))
    np.testing.assert_array_equal(data.test_labels, arrays["test_labels"])


def test_digit_filter_keeps_original_order(tmp_path, monkeypatch):
    files, arrays = _generated(tmp_path)
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path))
    data = load_mnist(digits=(7, 9), files=files)
    keep = np.isin(arrays["train_labels"], [7, 9])
    np.testing.assert_array_equal(data.train_labels, arrays["train_labels"][keep])
    np.testing.assert_array_equal(data.train_images, arrays["train_images"][keep].reshape(-1, 784))
    assert set(np.unique(data.test_labels)) <= {7, 9}
    assert len(data.test_labels) == np.isin(arrays["test_labels"], [7, 9]).sum()


def test_count_mismatch_is_a_data_error(tmp_path):
    files, _ = _generated(tmp_path, n_train_labels=29)
    with pytest.raises(DataError, match="count mismatch") as error:
        load_mnist(tmp_path, files=files)
    assert "train-labels-idx1-ubyte.gz" in str(error.value)


def test_wrong_image_size_is_a_data_error(tmp_path):
    files, _ = _generated(tmp_path, side=27)
    with pytest.raises(DataError, match="28, 28"):
        load_mnist(tmp_path, files=files)


def test_bad_digits_are_refused(tmp_path):
    files, _ = _generated(tmp_path)
    with pytest.raises(ValueError):
        load_mnist(tmp_path, digits=(7, 10), files=files)


def test_missing_real_files_offline_gives_one_line_error(tmp_path):
    unreachable = {
        key: DataFile(f.relative_path, ("http://127.0.0.1:9/nothing",), f.sha256, f.size, f.dataset, f.companions)
        for key, f in MNIST_FILES.items()
    }
    with pytest.raises(DataError) as error:
        load_mnist(tmp_path, files=unreachable)
    message = str(error.value)
    assert "\n" not in message
    assert message.startswith("MNIST file mnist/train-images-idx3-ubyte.gz is not in " + str(tmp_path))
    assert "t10k-labels-idx1-ubyte.gz" in message and str(tmp_path / "mnist") in message


@pytest.mark.skipif(not (SHARED_DATA / "mnist").is_dir(), reason="shared MNIST folder not present")
def test_real_mnist_sevens_and_nines():
    data = load_mnist(SHARED_DATA, digits=(7, 9))
    assert data.train_images.shape == (12_214, 784) and data.test_images.shape == (2_037, 784)
    assert np.bincount(data.train_labels, minlength=10)[[7, 9]].tolist() == [6265, 5949]
    assert np.bincount(data.test_labels, minlength=10)[[7, 9]].tolist() == [1028, 1009]
