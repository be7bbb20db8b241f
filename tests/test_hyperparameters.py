"""The Gamma precisions' Gibbs step (sgmcmc/hyperparameters.py; SGHMC paper T11/T12): the conditional against its
closed form worked out by hand and against a quadrature of prior × likelihood; draws against that conditional by a
Kolmogorov–Smirnov test that rejects a deliberately wrong rate; the mode; the prior's potential and gradient."""

import numpy as np
import pytest
from scipy import integrate, stats

from sgmcmc.hyperparameters import GammaPrecisions

SHAPE, RATE = 1.0, 1.0  # Gamma(1, 1), the papers' hyperprior


def _precisions():
    return GammaPrecisions(["w", "b"], [slice(0, 5), slice(5, 7)], 7, SHAPE, RATE)


def _theta(n_chains=1, seed=0):
    return 0.6 * np.random.default_rng(seed).normal(size=(n_chains, 7))


def test_the_conditional_is_the_hand_derived_gamma():
    theta = _theta(3)
    shape, rate = _precisions().conditional(theta)
    np.testing.assert_allclose(shape, [SHAPE + 5 / 2, SHAPE + 2 / 2])
    np.testing.assert_allclose(rate[:, 0], RATE + 0.5 * np.sum(theta[:, :5] ** 2, axis=1))
    np.testing.assert_allclose(rate[:, 1], RATE + 0.5 * np.sum(theta[:, 5:] ** 2, axis=1))


def test_the_conditional_matches_prior_times_likelihood_by_quadrature():
    """p(λ | θ_g) ∝ Gamma(λ; a, b) · Π_i N(θ_i; 0, 1/λ), normalised numerically, against the Gamma density."""
    theta = _theta()
    shape, rate = _precisions().conditional(theta)
    values = theta[0, :5]

    def unnormalised(lam):
        return stats.gamma.pdf(lam, SHAPE, scale=1 / RATE) * np.prod(stats.norm.pdf(values, 0, 1 / np.sqrt(lam)))

    total = integrate.quad(unnormalised, 0, np.inf)[0]
    for lam in (0.2, 1.0, 2.5, 6.0):
        np.testing.assert_allclose(unnormalised(lam) / total, stats.gamma.pdf(lam, shape[0], scale=1 / rate[0, 0]),
                                   rtol=1e-6)


def _ks_pvalue(draw, theta, shape, rate):
    """KS p-value of 20,000 Gibbs draws of group 0 (one per chain, all chains at the same θ) against Gamma(shape, rate)."""
    many = np.repeat(theta, 20_000, axis=0)
    values = draw(many)
    return stats.kstest(values[:, 0], stats.gamma(shape, scale=1 / rate).cdf).pvalue


def _correct(theta):
    return SHAPE + 5 / 2, RATE + 0.5 * np.sum(theta[0, :5] ** 2)


def test_gibbs_draws_follow_the_conditional():
    theta, precisions, rng = _theta(), _precisions(), np.random.default_rng(1)

    def draw(many):
        precisions.draw(many, rng)
        return precisions.values

    assert _ks_pvalue(draw, theta, *_correct(theta)) > 1e-3


class WrongRate(GammaPrecisions):
    """A deliberate bug: the rate b + ‖θ‖² (the ½ dropped)."""

    def conditional(self, theta):
        shape, rate = super().conditional(theta)
        return shape, 2 * rate - self.rate


def test_a_wrong_gamma_rate_fails_the_conditional_test():
    theta, rng = _theta(), np.random.default_rng(1)
    wrong = WrongRate(["w", "b"], [slice(0, 5), slice(5, 7)], 7, SHAPE, RATE)

    def draw(many):
        wrong.draw(many, rng)
        return wrong.values

    assert _ks_pvalue(draw, theta, *_correct(theta)) < 1e-6


def test_mode_is_the_conditionals_mode():
    theta, precisions = _theta(2), _precisions()
    precisions.mode(theta)
    shape, rate = precisions.conditional(theta)
    for chain in range(2):
        for g in range(2):
            density = stats.gamma(shape[g], scale=1 / rate[chain, g])
            grid = np.linspace(1e-3, 20, 200_001)
            assert precisions.values[chain, g] == pytest.approx(grid[np.argmax(density.pdf(grid))], abs=2e-4)


def test_prior_potential_and_gradient_use_each_chains_precisions():
    theta, precisions = _theta(2), _precisions()
    precisions.values = np.array([[2.0, 3.0], [0.5, 4.0]])
    expected = 0.5 * (precisions.values[:, :1] * np.sum(theta[:, :5] ** 2, axis=1, keepdims=True)
                      + precisions.values[:, 1:] * np.sum(theta[:, 5:] ** 2, axis=1, keepdims=True))[:, 0]
    np.testing.assert_allclose(precisions.prior_potential(theta), expected)
    gradient = precisions.prior_gradient(theta)
    np.testing.assert_allclose(gradient[:, :5], -precisions.values[:, :1] * theta[:, :5])
    np.testing.assert_allclose(gradient[:, 5:], -precisions.values[:, 1:] * theta[:, 5:])


def test_groups_must_cover_theta_once():
    with pytest.raises(ValueError, match="overlaps"):
        GammaPrecisions(["a", "b"], [slice(0, 3), slice(2, 4)], 4)
    with pytest.raises(ValueError, match="every coordinate"):
        GammaPrecisions(["a"], [slice(0, 3)], 4)
    with pytest.raises(ValueError, match="> 0"):
        GammaPrecisions(["a"], [slice(0, 4)], 4, shape=0.0)


def test_checkpoint_round_trip():
    precisions = _precisions()
    precisions.draw(_theta(3), np.random.default_rng(0))
    other = _precisions()
    other.load(precisions.as_dict())
    np.testing.assert_array_equal(other.values, precisions.values)
