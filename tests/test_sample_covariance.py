"""The chunked S² against numpy's sample covariance of all the rows at once."""

import numpy as np
import pytest

from sgmcmc.sample_covariance import chunked_sample_covariance


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("size", [1, 7, 50])
def test_the_chunked_sum_is_the_sample_covariance_of_all_the_rows(diagonal, size):
    """Two points' 50 rows in chunks of ``size`` rows, far from 0 (1e6: a plain Σh² − Nh̄² loses every digit there)."""
    rows = 1e6 + np.random.default_rng(3).standard_normal((2, 50, 3)) @ np.diag([1.0, 2.0, 0.5])
    chunks = (rows[:, start:start + size] for start in range(0, 50, size))
    expected = np.array([np.cov(point, rowvar=False) for point in rows])
    if diagonal:
        expected = np.diagonal(expected, axis1=1, axis2=2)
    np.testing.assert_allclose(chunked_sample_covariance(chunks, 50, diagonal), expected, rtol=1e-7, atol=1e-9)
