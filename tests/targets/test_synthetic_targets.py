"""Synthetic targets: gradients, normalisation, exact moments (SPEC §2 values), gradient noise."""

import numpy as np
import pytest
from scipy import integrate

from sgmcmc.targets import TARGETS, SyntheticTarget, make_target
from tests.helpers import numerical_gradient

# targets read from data files (those with a data_dir key) have their own modules (test_logistic_regression.py,
# test_drbm.py, test_lda.py, test_bnn.py, test_bpmf.py), and so does a target built from a key with no default (the
# user's model of target=custom: test_user.py)
FILE_BACKED = tuple(name for name in TARGETS if "data_dir" in TARGETS.config_keys(name)
                    or any(key.required for key in TARGETS.config_keys(name).values()))
ALL = sorted(name for name in TARGETS if name not in FILE_BACKED)
assert {"logistic_mnist79", "drbm", "lda", "bnn_mnist", "bpmf_movielens", "custom"} <= set(FILE_BACKED)
# those with an exact normalised density (logistic_synthetic, a data-drawn posterior, has none)
WITH_DENSITY = sorted(name for name in ALL if make_target(name).has_exact_density)
# targets whose gradient noise is the configured N(0, V) (data targets get theirs from minibatches)
SYNTHETIC = sorted(name for name in ALL if isinstance(make_target(name), SyntheticTarget))


def _points(target, rng, n):
    """Test points inside the support: posterior draws where the target has a sampler, else N(0, I)."""
    if hasattr(target, "exact_sample"):
        return target.exact_sample(n, rng)
    return rng.normal(size=(n, target.dim))


@pytest.mark.parametrize("name", ALL)
def test_gradient_matches_finite_differences_of_potential(name):
    target = make_target(name)
    rng = np.random.default_rng(0)
    theta = _points(target, rng, 6)
    numerical = numerical_gradient(target.potential, theta)
    np.testing.assert_allclose(target.gradient(theta), numerical, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("name", WITH_DENSITY)
def test_log_density_is_normalised_and_consistent_with_potential(name):
    target = make_target(name)
    if target.dim == 1:
        mass, _ = integrate.quad(lambda x: np.exp(target.log_density(np.array([[x]])))[0], -np.inf, np.inf)
    else:
        mass, _ = integrate.dblquad(lambda y, x: np.exp(target.log_density(np.array([[x, y]])))[0], -15, 15, -15, 15)
    assert mass == pytest.approx(1.0, abs=1e-6)
    theta = _points(target, np.random.default_rng(1), 5)
    difference = target.log_density(theta) + target.potential(theta)
    np.testing.assert_allclose(difference, difference[0])


@pytest.mark.parametrize(
    "name, mean, second",
    [
        ("gaussian_1d", [0.0], [1.0]),
        ("double_well", [0.0], [0.83275]),
        ("lecture_quartic", [-2.148], [7.475]),
        ("correlated_2d", [0.0, -0.933], [1.069, 0.147 + 0.933**2]),
        ("gaussian_2d_cov", [0.0, 0.0], [1.0, 1.0]),
        ("gaussian_2d_prec", [0.0, 0.0], [1 / 0.19, 1 / 0.19]),
    ],
)
def test_exact_moments_match_spec(name, mean, second):
    target_mean, target_second = make_target(name).exact_moments()
    np.testing.assert_allclose(target_mean, mean, atol=2e-3)
    np.testing.assert_allclose(target_second, second, rtol=2e-3)


def test_double_well_normaliser_matches_spec():
    assert np.exp(make_target("double_well").log_normaliser) == pytest.approx(5.3652, abs=1e-4)


@pytest.mark.parametrize("name", SYNTHETIC)
def test_stochastic_gradient_is_unbiased_with_the_configured_covariance(name):
    target = make_target(name, noise_variance=4.0)
    theta = np.tile(np.random.default_rng(2).normal(size=(1, target.dim)), (200000, 1))
    noise = target.stochastic_gradient(theta, np.random.default_rng(3)) - target.gradient(theta)
    np.testing.assert_allclose(noise.mean(axis=0), 0.0, atol=0.03)
    np.testing.assert_allclose(np.cov(noise.T).reshape(target.dim, target.dim), 4.0 * np.eye(target.dim), atol=0.06)


def test_full_noise_covariance_is_used():
    target = make_target("gaussian_2d_cov", noise_variance=[[2.0, 0.5], [0.5, 1.0]])
    noise = target.stochastic_gradient(np.zeros((200000, 2)), np.random.default_rng(0))
    np.testing.assert_allclose(np.cov(noise.T), [[2.0, 0.5], [0.5, 1.0]], atol=0.03)


def test_invalid_noise_variance_is_rejected():
    with pytest.raises(ValueError, match="noise_variance"):
        make_target("gaussian_2d_cov", noise_variance=[[1.0, 2.0], [2.0, 1.0]])


def test_correlated_2d_exact_sample_matches_moments_and_the_conditional():
    target = make_target("correlated_2d")
    draws = target.exact_sample(400000, np.random.default_rng(4))
    mean, second = target.exact_moments()
    np.testing.assert_allclose(draws.mean(axis=0), mean, atol=0.01)
    np.testing.assert_allclose((draws**2).mean(axis=0), second, rtol=0.01)
    # θ₂ − θ₁²/4 + 1.2 is N(0, 1/16) whatever θ₁ is
    residual = draws[:, 1] - draws[:, 0] ** 2 / 4 + 1.2
    assert abs(residual.std() - 0.25) < 0.002
    assert abs(np.corrcoef(residual, draws[:, 0] ** 2)[0, 1]) < 0.01
