import numpy as np
import pytest
from scipy import integrate, stats

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


def sorted_merge_w1(samples, log_density, lower, upper, n_grid=20001):
    """The W1 this package computed before its linear pass: all samples sorted and merged with the grid, |F_n − F|
    integrated between consecutive points (kept as the reference the linear pass must match to rounding)."""
    x = np.sort(np.asarray(samples, dtype=float).reshape(-1))
    grid = np.linspace(lower, upper, int(n_grid))
    cdf_grid = integrate.cumulative_trapezoid(np.exp(log_density(grid[:, None])), grid, initial=0.0)
    below, end = np.searchsorted(x, lower, side="right"), np.searchsorted(x, upper, side="left")
    inside = x[below:end]
    at_grid = np.searchsorted(inside, grid, side="left") + np.arange(grid.size)
    is_sample = np.ones(grid.size + inside.size, dtype=bool)
    is_sample[at_grid] = False
    pts = np.empty(is_sample.size)
    pts[at_grid], pts[is_sample] = grid, inside
    f_exact = np.interp(pts, grid, cdf_grid)
    f_emp = (below + np.cumsum(is_sample)[:-1]) / x.size
    a, b, h = f_exact[:-1] - f_emp, f_exact[1:] - f_emp, np.diff(pts)
    abs_sum = np.abs(a) + np.abs(b)
    crossing = np.divide(a * a + b * b, 2.0 * abs_sum, out=np.zeros_like(a), where=abs_sum > 0)
    return float(np.sum(h * np.where(a * b >= 0, 0.5 * abs_sum, crossing)))


def normal_w1(x):
    """W1 of the sample x to N(0, 1) in closed form: between consecutive sorted samples F_n is a constant c, and
    ∫ |c − Φ| uses the antiderivative x Φ(x) + φ(x) of Φ, split where Φ = c (no grid, no quadrature error)."""
    def integral_of_cdf(a, b):
        return (b * stats.norm.cdf(b) + stats.norm.pdf(b)) - (a * stats.norm.cdf(a) + stats.norm.pdf(a))

    x = np.sort(x)
    points = np.concatenate([[-40.0], x, [40.0]])
    total = 0.0
    for i in range(points.size - 1):
        a, b, c = points[i], points[i + 1], i / x.size
        q = float(np.clip(stats.norm.ppf(c), a, b)) if 0 < c < 1 else (b if c >= 1 else a)
        total += (c * (q - a) - integral_of_cdf(a, q)) + (integral_of_cdf(q, b) - c * (b - q))
    return total


@pytest.mark.parametrize("case", range(8))
def test_w1_is_the_sorted_merge_to_rounding(case):
    # ties, samples on grid points, samples outside the range, coarse and fine grids, few and many crossing cells (the
    # exact draws of case 0 put most samples in cells where F_n − F changes sign: all are sorted)
    rng = np.random.default_rng(case)
    m = (200_000, 3, 1, 5_000, 20_000, 777, 50_000, 100)[case]
    x = rng.standard_normal(m) * (1.0, 1.3, 1.0, 0.8, 1.05, 2.0, 1.0, 1.0)[case] + (0, -0.2, 0.3, 0, 0, 0.5, 0, 0)[case]
    lower, upper, n_grid = (-10.0, 10.0, 20001) if case % 2 == 0 else (-2.5, 3.0, 101)
    if case == 3:
        x = np.round(x, 1)
    if case == 4:
        x = np.concatenate([x, np.linspace(lower, upper, n_grid)[::7], [lower, upper, lower - 1.0, upper + 2.0]])
    if case == 6:
        x = np.repeat(x[:500], 100)
    expected = sorted_merge_w1(x, logp, lower, upper, n_grid)
    assert wasserstein1_to_exact_1d(x, logp, lower, upper, n_grid) == pytest.approx(expected, rel=1e-11, abs=1e-15)


@pytest.mark.parametrize("scale", [1.0, 1.2])
def test_w1_against_closed_form(scale):
    # the exact CDF by the trapezoid rule on 20,001 points over [-12, 12] is off by about h²/12 · max φ' ≈ 3·10⁻⁸
    x = scale * np.random.default_rng(13).standard_normal(2_000)
    assert wasserstein1_to_exact_1d(x, logp, -12.0, 12.0) == pytest.approx(normal_w1(x), abs=3e-7)


def test_w1_of_chains_read_in_place():
    # a run's kept samples are a view (c, kept, 1) of a larger array: the same W1 as the pooled copy, bit for bit
    store = np.random.default_rng(14).standard_normal((40, 300, 1)) * 1.1
    kept = store[:, :217]
    pooled = kept.reshape(-1, 1)
    assert wasserstein1_to_exact_1d(kept, logp, -10.0, 10.0) == wasserstein1_to_exact_1d(pooled, logp, -10.0, 10.0)
    expected = sorted_merge_w1(pooled, logp, -10.0, 10.0)
    assert wasserstein1_to_exact_1d(kept[..., 0], logp, -10.0, 10.0) == pytest.approx(expected, rel=1e-11)
