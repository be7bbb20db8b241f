import numpy as np
import pytest
from scipy import signal

from sgmcmc.diagnostics import autocorrelation, effective_sample_size, integrated_autocorrelation_time, split_rhat


def ar1(rng, phi, n_chains, n_draws, dim=1):
    e = rng.standard_normal((n_chains, n_draws, dim))
    u = np.sqrt(1.0 - phi**2) * e
    u[:, 0, :] = e[:, 0, :]  # start in the stationary N(0, 1)
    return signal.lfilter([1.0], [1.0, -phi], u, axis=1)


def expected_tau(rho, n_draws, threshold=0.05):
    s = 1
    total = 1.0
    while s < n_draws and rho(s) >= threshold:
        total += 2.0 * (1.0 - s / n_draws) * rho(s)
        s += 1
    return total


def test_autocorrelation_matches_brute_force():
    rng = np.random.default_rng(20)
    x = rng.standard_normal((3, 50, 2)).cumsum(axis=1)
    rho = autocorrelation(x)
    assert rho.shape == (50, 2)
    n = x.shape[1]
    expected = np.zeros((n, 2))
    for c in range(3):
        for d in range(2):
            y = x[c, :, d] - x[c, :, d].mean()
            c0 = y @ y / n
            for s in range(n):
                expected[s, d] += (y[: n - s] @ y[s:] / (n - s)) / c0 / 3
    np.testing.assert_allclose(rho, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rho[0], 1.0)


def test_tau_ar1():
    rng = np.random.default_rng(21)
    phi, n_chains, n_draws = 0.9, 200, 5000
    x = ar1(rng, phi, n_chains, n_draws)
    expected = expected_tau(lambda s: phi**s, n_draws)
    assert 17.5 < expected < 19.0  # 19 = (1+phi)/(1-phi) minus the truncated tail
    tau = integrated_autocorrelation_time(x)
    assert tau == pytest.approx(expected, rel=0.05)
    # the aucTime.m variant (no rho factor) would give 1 + 2*28 = 57
    assert tau < 25


def test_tau_iid_and_coordinate_average():
    rng = np.random.default_rng(22)
    iid = rng.standard_normal((20, 2000, 1))
    assert integrated_autocorrelation_time(iid) == pytest.approx(1.0, abs=0.05)
    # coordinate 0 iid, coordinate 1 AR(1) with phi = 0.5: average of the two
    x = np.concatenate([iid, ar1(rng, 0.5, 20, 2000)], axis=2)
    expected = 0.5 * (1.0 + expected_tau(lambda s: 0.5**s, 2000))
    assert integrated_autocorrelation_time(x) == pytest.approx(expected, rel=0.05)


def test_ess_iid():
    rng = np.random.default_rng(23)
    x = rng.standard_normal((4, 2000, 3))
    ess = effective_sample_size(x)
    assert ess.shape == (3,)
    np.testing.assert_allclose(ess, 8000, rtol=0.10)
    # strongly autocorrelated chains: ESS ~ N / tau, far below N
    ar = ar1(rng, 0.9, 4, 2000, dim=2)
    assert np.all(effective_sample_size(ar) < 1500)


def test_rhat():
    rng = np.random.default_rng(24)
    x = rng.standard_normal((4, 1000, 2))
    r = split_rhat(x)
    assert r.shape == (2,)
    np.testing.assert_allclose(r, 1.0, atol=0.01)
    x[0] += 3.0
    assert np.all(split_rhat(x) > 1.1)
