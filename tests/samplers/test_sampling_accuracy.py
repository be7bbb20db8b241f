"""Statistical tests: every correct sampler samples its target (KL on the SPEC §3 grid and E θ²
against the exact density), deliberately broken variants fail the same check, and the naive
samplers are measurably wrong. Fixed seeds; 1000 chains, pooled after a quarter burn-in.

Tolerances: KL(p‖q) < 0.005 and |E θ² − exact| < 0.05 in 1D; KL < 0.01 and 0.05 on the correlated
2D target (its 60 × 80 grid needs more samples per bin). A factor 2 in the injected noise doubles the
temperature (E θ² off by ~100% on the Gaussian), a missing Γ biases E θ² by 0.1–0.5 (measured below).
"""

import numpy as np
import pytest

from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.schedules import Constant
from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import Blocks
from tests.deliberate_bugs import (HOTTER_THERMOSTAT, METRIC_WITHOUT_ITS_DERIVATIVE,
                                   aim_the_thermostat_at_twice_the_temperature, double_the_injected_noise,
                                   drop_the_metric_derivative)
from tests.helpers import build, sample_and_score

KL_1D, MOMENT_1D = 0.005, 0.05
# The 1D targets of the checks below. The Gaussian's runs are make validate's: its compiled blocks (one per
# integrator, a few seconds each from a cold cache) are compiled there anyway for the default runs of
# tests/test_defaults.py, and they took make test past its 10 minutes; the double well's blocks serve most of make test.
TARGETS_1D = [pytest.param("gaussian_1d", marks=pytest.mark.validate), "double_well"]
KL_2D, MOMENT_2D = 0.01, 0.05

# (sampler, step size, steps) per target: Hamiltonian samplers at ε = 0.05, first-order ones smaller.
CORRECT_1D = [
    ("sgld", {}, 0.02, 3000),
    ("sgrld", {}, 0.02, 3000),
    ("hmc", {}, 0.1, 800),
    ("sghmc", {}, 0.05, 3000),
    ("sgnht", {}, 0.05, 3000),
    ("sgrhmc", {}, 0.05, 3000),
    ("naive_sghmc", {"metropolis": True, "n_leapfrog": 10}, 0.1, 800),
    ("sghmc", {"integrator": "euler"}, 0.02, 6000),
    ("sgrhmc", {"integrator": "generic"}, 0.02, 6000),
]
CORRECT_2D = [
    ("sgld", {}, 0.01, 4000),
    ("sgrld", {}, 0.01, 4000),
    ("hmc", {}, 0.05, 1000),
    ("sghmc", {}, 0.05, 2000),
    ("sgnht", {}, 0.05, 2000),
    ("sgrhmc", {}, 0.05, 2000),
]


@pytest.mark.parametrize("target_name", TARGETS_1D)
@pytest.mark.parametrize("name, params, step_size, n_steps", CORRECT_1D)
def test_correct_sampler_matches_exact_1d_density(name, params, step_size, n_steps, target_name):
    check = sample_and_score(build(name, target_name, **params), step_size, n_steps)
    assert check.passes(KL_1D, MOMENT_1D), check


@pytest.mark.parametrize("name, params, step_size, n_steps", CORRECT_2D)
def test_correct_sampler_matches_exact_2d_density(name, params, step_size, n_steps):
    sampler = build(name, "correlated_2d", {"initial_spread": 1.0}, **params)
    check = sample_and_score(sampler, step_size, n_steps)
    assert check.passes(KL_2D, MOMENT_2D), check


# --- naive samplers are measurably wrong ----------------------------------------------------------


@pytest.mark.parametrize("target_name, kl_floor", [pytest.param("gaussian_1d", 0.02, marks=pytest.mark.validate),
                                                   ("double_well", 0.01)])
def test_naive_sgrhmc_is_wrong_and_stays_wrong_as_the_step_shrinks(target_name, kl_floor):
    for step_size, n_steps in [(0.05, 3000), (0.025, 6000)]:
        naive = sample_and_score(build("naive_sgrhmc", target_name), step_size, n_steps)
        correct = sample_and_score(build("sgrhmc", target_name), step_size, n_steps)
        assert naive.kl > kl_floor and not naive.passes(KL_1D, MOMENT_1D), naive
        assert naive.kl > 3 * correct.kl, (naive, correct)


def test_naive_sgrhmc_is_wrong_in_2d():
    check = sample_and_score(build("naive_sgrhmc", "correlated_2d", {"initial_spread": 1.0}), 0.05, 2000)
    assert not check.passes(KL_2D, MOMENT_2D) and check.kl > 0.02, check


@pytest.mark.parametrize("target_name", TARGETS_1D)
def test_naive_sghmc_without_mh_is_wrong_and_mh_fixes_it(target_name):
    naive = sample_and_score(build("naive_sghmc", target_name, n_leapfrog=50, metropolis=False), 0.1, 600)
    with_mh = sample_and_score(build("naive_sghmc", target_name, n_leapfrog=50, metropolis=True), 0.1, 600)
    assert not naive.passes(KL_1D, MOMENT_1D) and naive.kl > 0.005, naive
    assert with_mh.passes(KL_1D, MOMENT_1D), with_mh
    assert naive.kl > 3 * with_mh.kl


# --- deliberately broken variants fail the same check ---------------------------------------------


@pytest.mark.parametrize(
    "name, step_size", [("sgld", 0.02), ("sgrld", 0.02), ("sghmc", 0.05), ("sgrhmc", 0.05)],
)
@pytest.mark.parametrize("target_name", TARGETS_1D)
def test_factor_two_in_injected_noise_is_caught(monkeypatch, name, step_size, target_name):
    """The engine's blocks with twice the injected variance (tests/deliberate_bugs.py)."""
    sampler = build(name, target_name)
    assert isinstance(kernel_of(sampler), Blocks)
    double_the_injected_noise(monkeypatch)
    check = sample_and_score(sampler, step_size, 3000)
    assert not check.passes(KL_1D, MOMENT_1D), check


def _thermostat_mean(sampler, step_size=0.05, n_steps=3000, n_chains=1000, seed=1):
    """Mean ξ over chains and the steps after a quarter burn-in (the run's thermostat mean)."""
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 4, eval_every=n_steps, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed))
    assert outcome.status == "completed", outcome.error
    return outcome.thermostat_mean


@pytest.mark.parametrize("target_name", TARGETS_1D)
def test_sgnht_thermostat_absorbs_doubled_noise_but_shows_it(monkeypatch, target_name):
    """The thermostat controls the kinetic temperature, so SGNHT still samples the target with a
    factor 2 in its injected noise (Ding et al. 2014): the error shows in E ξ, which moves from A
    (correct B̂, SPEC §1 (c)) to about 2A."""
    correct = _thermostat_mean(build("sgnht", target_name, diffusion=1.0))
    assert abs(correct - 1.0) < 0.1, correct
    double_the_injected_noise(monkeypatch)
    doubled = _thermostat_mean(build("sgnht", target_name, diffusion=1.0))
    assert doubled > 1.7, doubled


@pytest.mark.parametrize("target_name", TARGETS_1D)
def test_sgnht_with_wrong_thermostat_correction_is_caught(monkeypatch, target_name):
    """Γ_ξ = −1 sets the kinetic temperature; with −2 instead the chains sample exp(−U/2). The engine's thermostat
    with ε taken off ξ' after each step (tests/deliberate_bugs.py)."""
    sampler = build("sgnht", target_name)
    aim_the_thermostat_at_twice_the_temperature(monkeypatch)
    assert kernel_of(sampler).step is HOTTER_THERMOSTAT
    check = sample_and_score(sampler, 0.05, 3000)
    assert not check.passes(KL_1D, MOMENT_1D), check


@pytest.mark.parametrize("name", ["sgrld", "sgrhmc"])
@pytest.mark.parametrize("target_name", TARGETS_1D)
def test_missing_gamma_is_caught(monkeypatch, name, target_name):
    """The engine's blocks with the metric's ∂S set to 0 after the metric function (tests/deliberate_bugs.py)."""
    sampler = build(name, target_name)
    drop_the_metric_derivative(monkeypatch)
    assert kernel_of(sampler).parameters[0] is METRIC_WITHOUT_ITS_DERIVATIVE
    check = sample_and_score(sampler, 0.02 if name == "sgrld" else 0.05, 3000)
    assert not check.passes(KL_1D, MOMENT_1D), check


@pytest.mark.validate  # on the Gaussian: see TARGETS_1D
def test_halving_the_step_does_not_make_sgrhmc_worse():
    """Discretisation bias is O(ε) for the recipe sampler (google-research cold-posterior test idea)."""
    coarse = sample_and_score(build("sgrhmc", "gaussian_1d"), 0.1, 2000)
    fine = sample_and_score(build("sgrhmc", "gaussian_1d"), 0.05, 4000)
    assert fine.second_moment_error < coarse.second_moment_error
