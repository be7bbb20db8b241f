import numpy as np
import pytest
from scipy import stats

from sgmcmc.diagnostics import bin_masses_1d, histogram_density_rmse, histogram_kl

EDGES = np.linspace(-3.0, 3.0, 61)
P_NORMAL = np.diff(stats.norm.cdf(EDGES))


def test_kl_zero_for_exact_draws():
    rng = np.random.default_rng(1)
    x = rng.standard_normal(2_000_000)
    out = histogram_kl(x, P_NORMAL, EDGES)
    assert set(out) == {"kl_pq", "kl_qp"}
    assert 0.0 <= out["kl_pq"] < 1e-3 and abs(out["kl_qp"]) < 1e-3
    # (m, 1) input gives the same
    assert histogram_kl(x[:, None], P_NORMAL, EDGES) == out


def test_kl_clearly_positive_for_wrong_scale():
    rng = np.random.default_rng(2)
    x = 2.0 * rng.standard_normal(200_000)
    out = histogram_kl(x, P_NORMAL, EDGES)
    assert out["kl_pq"] > 0.1 and out["kl_qp"] > 0.1


def test_kl_by_hand_three_bins():
    edges = np.array([0.0, 1.0, 2.0, 3.0])
    p = np.array([0.5, 0.3, 0.2])
    # 4 samples: two in bin 0, one in bin 1, none in bin 2, one outside the grid -> q = (0.5, 0.25, 0)
    samples = np.array([0.5, 0.7, 1.5, 10.0])
    out = histogram_kl(samples, p, edges)
    kl_pq = 0.5 * np.log(0.5 / 0.5) + 0.3 * np.log(0.3 / 0.25) + 0.2 * np.log(0.2 / 1e-10)
    # q_2 = 0 contributes 0; the outside cell has q = 0.25 against an exact mass 0 (floored)
    kl_qp = 0.5 * np.log(0.5 / 0.5) + 0.25 * np.log(0.25 / 0.3) + 0.25 * np.log(0.25 / 1e-10)
    assert out["kl_pq"] == pytest.approx(kl_pq, rel=1e-12)
    assert out["kl_qp"] == pytest.approx(kl_qp, rel=1e-12)
    # a zero exact mass contributes 0 to KL(p||q) and is floored in KL(q||p)
    out2 = histogram_kl(np.array([0.5, 1.5, 2.5, 2.6]), np.array([0.5, 0.5, 0.0]), edges)
    assert out2["kl_pq"] == pytest.approx(0.5 * np.log(0.5 / 0.25) + 0.5 * np.log(0.5 / 0.25), rel=1e-12)
    expected_qp = 0.25 * np.log(0.25 / 0.5) * 2 + 0.5 * np.log(0.5 / 1e-10)
    assert out2["kl_qp"] == pytest.approx(expected_qp, rel=1e-12)


def test_mass_outside_the_grid_keeps_both_divergences_nonnegative():
    """Exact samples of N(0, 1) scored on [-1, 1] only: a third of the mass is outside the grid."""
    rng = np.random.default_rng(0)
    edges = np.linspace(-1.0, 1.0, 21)
    p = np.diff(stats.norm.cdf(edges))
    out = histogram_kl(rng.standard_normal(200_000), p, edges)
    assert 0.0 <= out["kl_pq"] < 1e-3 and 0.0 <= out["kl_qp"] < 1e-3, out


def test_kl_2d():
    rng = np.random.default_rng(3)
    ex = np.linspace(-3.0, 3.0, 61)
    ey = np.linspace(-2.0, 2.0, 81)
    p2 = np.outer(np.diff(stats.norm.cdf(ex)), np.diff(stats.norm.cdf(ey)))
    x = rng.standard_normal((2_000_000, 2))
    out = histogram_kl(x, p2, (ex, ey))
    assert out["kl_pq"] < 5e-3 and abs(out["kl_qp"]) < 5e-3
    bad = histogram_kl(x * np.array([1.0, 2.0]), p2, (ex, ey))
    assert bad["kl_pq"] > 0.1
    with pytest.raises(ValueError):
        histogram_kl(x, p2[:-1], (ex, ey))


def test_density_rmse():
    rng = np.random.default_rng(4)
    x = rng.standard_normal(1_000_000)
    good = histogram_density_rmse(x, stats.norm.pdf, EDGES)
    assert good < 5e-3
    bad = histogram_density_rmse(x + 0.3, stats.norm.pdf, EDGES)
    assert bad > 0.03
    # by hand: 4 samples, edges width 0.5, one sample outside
    edges = np.array([0.0, 0.5, 1.0])
    h = np.array([2 / (4 * 0.5), 1 / (4 * 0.5)])
    f = lambda c: np.full_like(c, 0.8)
    expected = np.sqrt(np.mean((h - 0.8) ** 2))
    assert histogram_density_rmse(np.array([0.1, 0.2, 0.7, 5.0]), f, edges) == pytest.approx(expected, rel=1e-12)


def test_bin_masses_feed_kl():
    rng = np.random.default_rng(5)
    p = bin_masses_1d(lambda t: stats.norm.logpdf(t[:, 0]), EDGES)
    out = histogram_kl(rng.standard_normal(500_000), p, EDGES)
    assert out["kl_pq"] < 1e-3
