"""Marginal histogram RMSE (SPEC §3 "RMSE of distribution", E4): density and bin-mass versions."""

import numpy as np
import pytest
from scipy import stats

from sgmcmc.diagnostics import histogram_density_rmse, marginal_density_rmse

# The T7 posterior marginals for data_seed 0 (rounded) and the SPEC §3 grid.
MARGINALS = (stats.t(df=102, loc=0.08, scale=0.0956), stats.gamma(a=51, scale=1 / 47.29))
EDGES = (np.linspace(-0.5, 0.5, 101), np.linspace(0.5, 1.5, 101))


def _exact(m, seed):
    rng = np.random.default_rng(seed)
    return np.column_stack([marginal.rvs(size=m, random_state=rng) for marginal in MARGINALS])


def test_by_hand_with_a_sample_outside_the_grid():
    samples = np.array([[0.1], [0.2], [0.7], [2.0]])  # fractions (0.5, 0.25); one sample outside counts in m
    out = marginal_density_rmse(samples, [stats.uniform(0, 1)], [np.array([0.0, 0.5, 1.0])])
    assert list(out) == ["rmse_density", "rmse_density_0", "rmse_mass", "rmse_mass_0"]
    assert out["rmse_density_0"] == pytest.approx(np.sqrt((0.0**2 + 0.5**2) / 2))
    assert out["rmse_mass_0"] == pytest.approx(np.sqrt((0.0**2 + 0.25**2) / 2))
    assert out["rmse_density"] == out["rmse_density_0"] and out["rmse_mass"] == out["rmse_mass_0"]


def test_density_version_agrees_with_histogram_density_rmse_and_means_are_means():
    samples = _exact(5000, 0)
    out = marginal_density_rmse(samples, MARGINALS, EDGES)
    for j in range(2):
        expected = histogram_density_rmse(samples[:, j], MARGINALS[j].pdf, EDGES[j])
        assert out[f"rmse_density_{j}"] == pytest.approx(expected)
    assert out["rmse_density"] == pytest.approx((out["rmse_density_0"] + out["rmse_density_1"]) / 2)
    assert out["rmse_mass"] == pytest.approx((out["rmse_mass_0"] + out["rmse_mass_1"]) / 2)


def test_exact_samples_give_a_small_rmse_that_shrinks_with_sample_size():
    small = marginal_density_rmse(_exact(10_000, 1), MARGINALS, EDGES)
    large = marginal_density_rmse(_exact(400_000, 2), MARGINALS, EDGES)
    assert large["rmse_density"] < 0.03 and large["rmse_mass"] < 3e-4
    for key in ["rmse_density_0", "rmse_density_1", "rmse_mass_0", "rmse_mass_1"]:
        assert large[key] < 0.3 * small[key]  # expected ratio sqrt(10⁴/4·10⁵) ≈ 0.16


def test_a_wrong_precision_scale_gives_a_clearly_larger_rmse():
    samples = _exact(400_000, 3)
    exact = marginal_density_rmse(samples, MARGINALS, EDGES)
    samples[:, 1] *= 1.2
    wrong = marginal_density_rmse(samples, MARGINALS, EDGES)
    assert wrong["rmse_density_1"] > 10 * exact["rmse_density_1"]
    assert wrong["rmse_mass_1"] > 10 * exact["rmse_mass_1"]
    assert wrong["rmse_density_0"] == exact["rmse_density_0"]


def test_bad_inputs_are_rejected():
    with pytest.raises(ValueError, match="shape"):
        marginal_density_rmse(np.zeros(10), MARGINALS[:1], EDGES[:1])
    with pytest.raises(ValueError, match="one marginal"):
        marginal_density_rmse(np.zeros((10, 2)), MARGINALS[:1], EDGES)
    with pytest.raises(ValueError, match="increasing"):
        marginal_density_rmse(np.zeros((10, 1)), MARGINALS[:1], [np.array([1.0, 0.0])])
