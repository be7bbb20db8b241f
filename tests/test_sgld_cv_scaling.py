"""The SGLD-CV scaling experiment (experiments/sgld_cv_scaling.py): its smoke run writes the figure and summaries;
the Gauss–Hermite reference is exact for a Gaussian and agrees with one-dimensional quadrature on a skewed density;
the verdict rule says "grows" only past two combined standard errors; the synthetic target draws its data from the
stated model."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, stats
from scipy.special import expit

from experiments import sgld_cv_scaling
from sgmcmc.diagnostics.quadrature import gauss_hermite_moments
from sgmcmc.targets import make_target
from tests.helpers import smoke_run


@pytest.mark.validate
def test_smoke_run_writes_the_figure_and_the_summaries(tmp_path, monkeypatch):
    folder, table = smoke_run(sgld_cv_scaling, "sgld-cv-scaling", tmp_path, monkeypatch, tmp_path, files=("scaling.png",))
    assert set(table["method"]) == {"SGLD", "SGLD-CV"} and (table["status"] == "completed").all()
    assert np.all(np.isfinite(table["error"]))
    cv = table[table["method"] == "SGLD-CV"]
    # the same budget: SGLD-CV's own count (metrics.json, 2n per step) equals SGLD's n per step, the smoke's 20,000
    assert (cv["sampling_evaluations"] == 20_000).all()
    assert (table[table["method"] == "SGLD"]["sampling_evaluations"] == 20_000).all()
    assert (cv["centring_evaluations"] > 0).all()
    summary = (folder / "summary.md").read_text()
    assert "One seed: no spread over seeds, so no verdict" in summary and "Baker et al." in summary


def test_gauss_hermite_moments_of_a_gaussian_and_of_a_skewed_density_match_quadrature_on_a_skewed_density():
    mean, covariance = np.array([1.0, -2.0]), np.array([[2.0, 0.6], [0.6, 0.5]])
    precision = np.linalg.inv(covariance)
    gaussian = lambda theta: 0.5 * np.einsum("ni,ij,nj->n", theta - mean, precision, theta - mean)
    got_mean, got_covariance = gauss_hermite_moments(gaussian, mean, covariance, 12)  # the rule's own Gaussian: exact
    np.testing.assert_allclose(got_mean, mean, atol=1e-12)
    np.testing.assert_allclose(got_covariance, covariance, atol=1e-12)
    got_mean, got_covariance = gauss_hermite_moments(gaussian, mean + 0.3, covariance * 1.5, 12)  # another one: close
    np.testing.assert_allclose(got_mean, mean, atol=1e-6)
    np.testing.assert_allclose(got_covariance, covariance, atol=1e-6)
    # Gamma(20, 1) in 1D, about its Laplace approximation (mode 19, variance 19): mean 20, variance 20
    gamma = lambda theta: -stats.gamma(20.0).logpdf(theta[:, 0])
    got_mean, got_covariance = gauss_hermite_moments(gamma, np.array([19.0]), np.array([[19.0]]), 40)
    assert got_mean[0] == pytest.approx(20.0, abs=1e-4) and got_covariance[0, 0] == pytest.approx(20.0, abs=1e-2)


def test_the_reference_agrees_with_adaptive_quadrature_in_one_dimension():
    """d = 1: the Gauss–Hermite mean against scipy's adaptive quadrature of the same unnormalised density."""
    target = make_target("logistic_synthetic", n_data=300, dim=1, batch_size=30, data_seed=4)
    centre, scale = 0.8, 0.1
    mean, _ = gauss_hermite_moments(target.potential, np.array([centre]), np.array([[scale**2]]), 30)
    shift = float(target.potential(np.array([[centre]]))[0])
    density = lambda w: np.exp(shift - target.potential(np.array([[w]]))[0])
    mass = integrate.quad(density, -3, 5, points=[centre], limit=200)[0]
    first = integrate.quad(lambda w: w * density(w), -3, 5, points=[centre], limit=200)[0]
    assert mean[0] == pytest.approx(first / mass, abs=1e-6)


def test_the_verdicts_need_two_combined_standard_errors():
    def best(small, large, se):
        return pd.DataFrame([{"n_data": n, "method": m, "c": 1.0, "error_mean": e, "error_se": se, "seeds": 3}
                             for n, m, e in ((10, "SGLD", small), (100, "SGLD", large), (10, "SGLD-CV", small),
                                             (100, "SGLD-CV", small))])

    assert "**grows**" in sgld_cv_scaling.verdicts(best(0.1, 0.2, 0.02))[0]
    assert "**flat (tie)**" in sgld_cv_scaling.verdicts(best(0.1, 0.15, 0.02))[0]  # 0.05 < 2·√2·0.02
    assert "**falls**" in sgld_cv_scaling.verdicts(best(0.2, 0.1, 0.02))[0]
    lines = sgld_cv_scaling.verdicts(best(0.1, 0.2, 0.02))
    assert "**flat (tie)**" in lines[1]
    assert lines[2].startswith("- N = 10: tie") and lines[3].startswith("- N = 100: SGLD-CV below SGLD")


def test_a_diverged_seed_rules_its_step_size_out_and_an_edge_is_flagged():
    rows = [{"n_data": 10, "method": "SGLD", "c": c, "seed": seed, "status": status, "error": error}
            for c, seed, status, error in ((0.1, 0, "completed", 0.3), (0.1, 1, "completed", 0.3),
                                           (1.0, 0, "completed", 0.1), (1.0, 1, "diverged", float("nan")),
                                           (3.0, 0, "completed", 0.2), (3.0, 1, "completed", 0.2))]
    best = sgld_cv_scaling.best_per_size(pd.DataFrame(rows))
    assert best["c"].tolist() == [3.0] and best["at_grid_edge"].tolist() == [True]


def test_the_synthetic_target_draws_its_labels_from_the_stated_model():
    target = make_target("logistic_synthetic", n_data=40_000, dim=3, batch_size=100, data_seed=1)
    truth = np.array([1.0, -0.5, 0.25])
    assert np.abs(target.features.mean(axis=0)).max() < 0.03 and np.abs(target.features.std(axis=0) - 1).max() < 0.02
    probability = expit(target.features @ truth)
    positive = target.labels == 1
    # E[1{y = 1} − σ(w*ᵀx)] = 0: a z-test on the residuals
    residual = positive - probability
    assert abs(residual.mean()) < 4 * residual.std() / np.sqrt(residual.size)
    index = target.minibatch(np.random.default_rng(0), 5)
    assert index.shape == (5, 100) and all(len(set(row)) == 100 for row in index)
