"""The ``aboba`` integrator of the (θ, r) recipe samplers (SGHMC, gSGRHMC): position-Verlet halves around an
exactly solved friction–noise step. It approaches the ``splitting`` step as ε → 0, samples the exact density (on
exact gradients: it has no V̂ correction), also deep in the overdamped regime where the Euler friction factor
1 − εF < −1 makes ``splitting`` diverge (gSGRHMC on LDA, SPEC T10), and a doubled noise fails the same check."""

import numpy as np
import pytest

import sgmcmc.samplers.momentum_recipe as momentum_recipe
from tests.helpers import build, sample_and_score
from tests.samplers.test_sampling_accuracy import KL_1D, MOMENT_1D

EXACT = {"noise_variance": 0.0}  # exact gradients: the integrator has no gradient-noise correction


def _build(name, target_name, integrator="aboba", **params):
    return build(name, target_name, EXACT, integrator=integrator, noise_estimate="zero", **params)


def test_ornstein_uhlenbeck_step_is_exact():
    """Two half steps compose to one full step in distribution: mean e^{−u} r and variance 1 − e^{−2u}."""
    rng = np.random.default_rng(0)
    r0, u = np.full(400_000, 2.0), np.full(400_000, 0.7)
    once = momentum_recipe.ornstein_uhlenbeck(r0, u, rng.standard_normal(r0.shape))
    twice = momentum_recipe.ornstein_uhlenbeck(momentum_recipe.ornstein_uhlenbeck(r0, u / 2, rng.standard_normal(r0.shape)),
                                               u / 2, rng.standard_normal(r0.shape))
    for draws in (once, twice):
        assert abs(draws.mean() - 2.0 * np.exp(-0.7)) < 0.005 and abs(draws.var() - (1 - np.exp(-1.4))) < 0.005


@pytest.mark.parametrize("name, params", [("sghmc", {"friction": 2.0}), ("sgrhmc", {})])
def test_approaches_the_splitting_step(name, params):
    """Same state and normal draw: the one-step gap to the splitting step is O(ε^{3/2}) (noise amplitudes
    √(1 − e^{−2εF}) against √(2εF)) – both consistent integrators of the same SDE – so it shrinks ≈ 31× when ε
    shrinks 10×."""
    gaps = []
    for step_size in (1e-2, 1e-3):
        aboba, splitting = _build(name, "double_well", **params), _build(name, "double_well", "splitting", **params)
        state = aboba.init(np.linspace(-1.5, 1.5, 8)[:, None], np.random.default_rng(0))
        a, _ = aboba.step(np.random.default_rng(1), state, step_size)
        b, _ = splitting.step(np.random.default_rng(1), state, step_size)
        gaps.append(max(np.max(np.abs(a.momentum - b.momentum)), np.max(np.abs(a.theta - b.theta))))
    assert gaps[0] < 0.05 and gaps[0] / gaps[1] > 20, gaps  # O(ε^{3/2}): ≈ 31; a first-order gap: 10


@pytest.mark.parametrize("target_name", ["gaussian_1d", "double_well"])
@pytest.mark.parametrize("name, params, step_size", [("sghmc", {}, 0.05), ("sgrhmc", {}, 0.05), ("sghmc", {"friction": 30.0}, 0.1)])
def test_samples_the_exact_density(target_name, name, params, step_size):
    """Including SGHMC with friction C = 30 at ε = 0.1 (εC = 3, overdamped)."""
    check = sample_and_score(_build(name, target_name, **params), step_size, 3000)
    assert check.passes(KL_1D, MOMENT_1D), check


@pytest.mark.parametrize("target_name", ["gaussian_1d", "double_well"])
def test_splitting_diverges_where_aboba_is_exact(target_name):
    stiff = sample_and_score(_build("sghmc", target_name, "splitting", friction=30.0), 0.1, 3000)
    assert stiff.status == "diverged"


@pytest.mark.parametrize("friction, step_size", [(1.0, 0.05), (30.0, 0.1)])
def test_a_doubled_noise_is_caught(monkeypatch, friction, step_size):
    exact = momentum_recipe.ornstein_uhlenbeck
    monkeypatch.setattr(momentum_recipe, "ornstein_uhlenbeck", lambda r, u, normal: exact(r, u, np.sqrt(2.0) * normal))
    check = sample_and_score(_build("sghmc", "gaussian_1d", friction=friction), step_size, 3000)
    assert not check.passes(KL_1D, MOMENT_1D), check


def test_refuses_a_gradient_noise_correction():
    with pytest.raises(ValueError, match="integrator aboba has no gradient-noise correction"):
        build("sghmc", "gaussian_1d", integrator="aboba", noise_estimate="known")
