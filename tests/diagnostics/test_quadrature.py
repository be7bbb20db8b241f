import numpy as np
import pytest
from scipy import stats

from sgmcmc.diagnostics import bin_masses_1d, bin_masses_2d, expectation_1d
from sgmcmc.diagnostics import quadrature


def std_normal_logpdf(theta):
    return stats.norm.logpdf(theta[:, 0])


def test_bin_masses_1d_standard_normal_exact():
    edges = np.linspace(-3.0, 3.0, 61)
    calls = []

    def logp(theta):
        assert theta.ndim == 2 and theta.shape[1] == 1
        calls.append(theta.shape[0])
        return std_normal_logpdf(theta)

    masses = bin_masses_1d(logp, edges)
    assert masses.shape == (60,)
    np.testing.assert_allclose(masses, np.diff(stats.norm.cdf(edges)), rtol=0, atol=1e-12)
    assert calls == [60 * 16]  # one vectorised call


def test_bin_masses_1d_uneven_edges():
    edges = np.array([-7.0, -1.3, -0.2, 0.0, 0.05, 2.5, 9.0])
    masses = bin_masses_1d(std_normal_logpdf, edges, nodes_per_bin=40)
    np.testing.assert_allclose(masses, np.diff(stats.norm.cdf(edges)), rtol=0, atol=1e-12)


def test_bin_masses_2d_product_is_outer_product():
    ex = np.linspace(-3.0, 3.0, 61)
    ey = np.linspace(-2.0, 2.0, 81)
    sx, sy = 1.0, 0.7

    def logp(theta):
        return stats.norm.logpdf(theta[:, 0], scale=sx) + stats.norm.logpdf(theta[:, 1], scale=sy)

    m2 = bin_masses_2d(logp, ex, ey)
    assert m2.shape == (60, 80)
    mx = bin_masses_1d(lambda t: stats.norm.logpdf(t[:, 0], scale=sx), ex, nodes_per_bin=8)
    my = bin_masses_1d(lambda t: stats.norm.logpdf(t[:, 0], scale=sy), ey, nodes_per_bin=8)
    np.testing.assert_allclose(m2, np.outer(mx, my), rtol=1e-12, atol=1e-16)
    exact = np.outer(np.diff(stats.norm.cdf(ex, scale=sx)), np.diff(stats.norm.cdf(ey, scale=sy)))
    np.testing.assert_allclose(m2, exact, rtol=0, atol=1e-12)


def test_bin_masses_2d_correlated_gaussian_matches_mvn_cdf():
    cov = np.array([[1.0, 0.9], [0.9, 1.0]])
    mvn = stats.multivariate_normal(mean=[0.0, 0.0], cov=cov, abseps=1e-12, releps=1e-12)
    ex = np.linspace(-3.0, 3.0, 61)
    ey = np.linspace(-2.0, 2.0, 81)
    m2 = bin_masses_2d(mvn.logpdf, ex, ey)
    box = mvn.cdf([3.0, 2.0], lower_limit=[-3.0, -2.0])
    assert abs(m2.sum() - box) < 1e-6
    # one rectangle along the ridge, and one off it
    for i, j in [(30, 40), (35, 50), (10, 70)]:
        rect = mvn.cdf([ex[i + 1], ey[j + 1]], lower_limit=[ex[i], ey[j]])
        assert abs(m2[i, j] - rect) < 1e-6
    # the box of the grid holds most but not all the mass: a wrong normalisation would show
    assert 0.95 < m2.sum() < 0.999


def test_bin_masses_2d_chunking_gives_same_result(monkeypatch):
    cov = np.array([[1.0, -0.5], [-0.5, 2.0]])
    mvn = stats.multivariate_normal(mean=[0.3, -0.1], cov=cov)
    ex = np.linspace(-2.0, 2.0, 21)
    ey = np.linspace(-3.0, 3.0, 31)
    full = bin_masses_2d(mvn.logpdf, ex, ey)
    sizes = []

    def logp(theta):
        sizes.append(theta.shape[0])
        return mvn.logpdf(theta)

    monkeypatch.setattr(quadrature, "_MAX_NODES_PER_CALL", 3 * 30 * 64)
    chunked = bin_masses_2d(logp, ex, ey)
    assert len(sizes) == 7 and max(sizes) <= 3 * 30 * 64
    np.testing.assert_allclose(chunked, full, rtol=1e-13, atol=0)


def test_expectation_1d_moments():
    assert expectation_1d(std_normal_logpdf, lambda t: np.ones_like(t)) == pytest.approx(1.0, abs=1e-10)
    assert expectation_1d(std_normal_logpdf, lambda t: t) == pytest.approx(0.0, abs=1e-10)
    assert expectation_1d(std_normal_logpdf, lambda t: t**2) == pytest.approx(1.0, abs=1e-10)
    assert expectation_1d(std_normal_logpdf, lambda t: t**4) == pytest.approx(3.0, abs=1e-9)
    # finite limits
    val = expectation_1d(std_normal_logpdf, lambda t: np.ones_like(t), -1.0, 2.0)
    assert val == pytest.approx(stats.norm.cdf(2.0) - stats.norm.cdf(-1.0), abs=1e-12)
