import numpy as np
import pytest
from scipy import stats

from sgmcmc.diagnostics import moment_errors, wasserstein1_to_exact_1d


def logp(theta):
    return stats.norm.logpdf(theta[:, 0])


def test_w1_exact_draws_small():
    rng = np.random.default_rng(10)
    x = rng.standard_normal(100_000)
    assert wasserstein1_to_exact_1d(x, logp, -10.0, 10.0) < 0.01


def test_w1_shifted_draws():
    rng = np.random.default_rng(11)
    x = rng.standard_normal(100_000) + 0.5
    assert wasserstein1_to_exact_1d(x, logp, -10.0, 10.0) == pytest.approx(0.5, abs=0.02)


def test_w1_against_scipy():
    rng = np.random.default_rng(12)
    x = 1.3 * rng.standard_normal(20_000) - 0.2
    # reference: W1 between the sample and a huge quantile sample of N(0, 1)
    q = stats.norm.ppf((np.arange(2_000_000) + 0.5) / 2_000_000)
    ref = stats.wasserstein_distance(x, q)
    assert wasserstein1_to_exact_1d(x[:, None], logp, -10.0, 10.0) == pytest.approx(ref, abs=2e-4)


def test_w1_point_mass_exact():
    # all samples at 0: W1 = E|Z| = sqrt(2/pi), and the grid merge makes the step exact
    val = wasserstein1_to_exact_1d(np.zeros(10), logp, -12.0, 12.0)
    assert val == pytest.approx(np.sqrt(2 / np.pi), abs=1e-5)


def test_moment_errors():
    s = np.array([[1.0, 2.0], [3.0, -2.0]])  # mean (2, 0), E theta^2 (5, 4)
    out = moment_errors(s, exact_mean=[1.5, 0.25], exact_second_moment=[5.0, 5.5])
    assert out == {"mean_error": pytest.approx(0.5), "second_moment_error": pytest.approx(1.5)}
    out1 = moment_errors(np.array([1.0, 2.0, 3.0]), 2.0, 4.0)  # 1D input, E theta^2 = 14/3
    assert out1["mean_error"] == pytest.approx(0.0) and out1["second_moment_error"] == pytest.approx(2 / 3)
