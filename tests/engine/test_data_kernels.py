"""The data kernels' minibatch selection (sgmcmc.engine.data_kernels.smallest_keys) against a stable sort.

The truth is written independently: a row's minibatch is the indices of its n smallest keys, of equal keys the lower
index first (``np.argsort(kind="stable")``), in ascending order. The cases take each branch of the kernel: candidates
below the cut-off sorted by insertion (n = 10 of 100) or partitioned (200 of 2,000), no candidate at all (keys above the
cut-off: the whole row), n = 1 and n = N − 1, and ties.
"""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.data_kernels import smallest_keys
from sgmcmc.targets.normal_gamma import NormalGamma


def stable_smallest(keys: np.ndarray, batch: int) -> np.ndarray:
    return np.sort(np.argsort(keys, axis=2, kind="stable")[:, :, :batch], axis=2)


def selected(keys: np.ndarray, batch: int) -> np.ndarray:
    out = np.full(keys.shape[:2] + (batch,), -1, dtype=np.int64)
    smallest_keys(keys, batch, out)
    return out


@pytest.mark.parametrize("n_data, batch", [(100, 10), (100, 1), (100, 99), (100, 100), (2000, 200), (7, 3)])
def test_uniform_keys_give_the_indices_of_the_smallest_in_ascending_order(n_data, batch):
    keys = np.random.default_rng(n_data + batch).random((6, 50, n_data))
    np.testing.assert_array_equal(selected(keys, batch), stable_smallest(keys, batch))


@pytest.mark.parametrize("n_data, batch", [(100, 10), (2000, 200)])
def test_keys_above_the_cutoff_take_the_whole_row(n_data, batch):
    keys = 0.9 + 0.1 * np.random.default_rng(1).random((3, 20, n_data))
    np.testing.assert_array_equal(selected(keys, batch), stable_smallest(keys, batch))


@pytest.mark.parametrize("n_data, batch", [(100, 10), (2000, 200)])
def test_equal_keys_go_in_lowest_index_first(n_data, batch):
    keys = np.random.default_rng(2).integers(0, 8, size=(3, 20, n_data)) / 64.0  # every key below the cut-off, tied
    np.testing.assert_array_equal(selected(keys, batch), stable_smallest(keys, batch))


def test_the_numpy_steps_minibatch_is_the_smallest_keys_of_its_draw():
    """``DataTarget.minibatch`` (the numpy steps') takes the n smallest of ``rng.random((c, N))``, in ascending order."""
    target = NormalGamma()
    index = target.minibatch(np.random.default_rng(4), 300)
    keys = np.random.default_rng(4).random((1, 300, target.n_data))
    np.testing.assert_array_equal(index, stable_smallest(keys, target.batch_size)[0])
