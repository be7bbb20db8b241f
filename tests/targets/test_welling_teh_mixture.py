"""T13, Welling & Teh's mixture posterior: gradients, the minibatch estimator, normalisation, modes, config."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from scipy import integrate

from sgmcmc.config import ConfigError
from sgmcmc.keys import validate_config
from sgmcmc.diagnostics import bin_masses_2d
from sgmcmc.targets import make_target
from sgmcmc.engine.driver import PYTHON
from sgmcmc.samplers import make_sampler
from sgmcmc.state import SamplerState
from sgmcmc.targets.welling_teh_mixture import DATA_VARIANCE, _datum_gradients_sum, draw_data
from tests.helpers import door_potentials, numerical_gradient

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def target():
    return make_target("welling_teh_mixture", data_seed=3)


def test_data_are_drawn_from_theta_0_1_with_the_seed():
    x = draw_data(100, 3)
    np.testing.assert_array_equal(x, draw_data(100, 3))
    assert not np.array_equal(x, draw_data(100, 0))
    big = draw_data(200000, 0)  # ½N(0, 2) + ½N(1, 2): mean 0.5, variance 2 + 0.25
    assert big.mean() == pytest.approx(0.5, abs=0.01) and big.var() == pytest.approx(DATA_VARIANCE + 0.25, abs=0.03)


def test_gradient_matches_finite_differences_of_potential(target):
    theta = np.random.default_rng(0).normal(size=(8, 2)) + [0.5, 0.0]
    numerical = numerical_gradient(target.potential, theta)
    np.testing.assert_allclose(target.gradient(theta), numerical, rtol=1e-6, atol=1e-5)


def test_potential_is_the_negative_log_posterior_up_to_a_constant(target):
    theta = np.array([[0.3, -0.2], [1.0, 0.5], [-0.4, 1.2]])
    x = target.data
    log_likelihood = np.array([np.sum(np.log(0.5 * np.exp(-(x - t1) ** 2 / 4) / np.sqrt(4 * np.pi)
                                             + 0.5 * np.exp(-(x - t1 - t2) ** 2 / 4) / np.sqrt(4 * np.pi)))
                               for t1, t2 in theta])
    log_prior = -theta[:, 0] ** 2 / 20 - theta[:, 1] ** 2 / 2
    difference = target.potential(theta) + log_likelihood + log_prior
    np.testing.assert_allclose(difference, difference[0], atol=1e-9)


@pytest.mark.parametrize("batch_size", [1, 10])
def test_minibatch_gradient_is_unbiased_with_the_n_over_batch_factor(batch_size):
    target = make_target("welling_teh_mixture", data_seed=3, batch_size=batch_size)
    theta0 = np.array([[1.5, 0.8]])  # away from the modes: the likelihood gradient is large
    draws = 200_000
    gradient = target.stochastic_gradient(np.repeat(theta0, draws, axis=0), np.random.default_rng(1))
    exact = target.gradient(theta0)[0]
    standard_error = np.sqrt(np.diagonal(target.minibatch_noise_covariance(theta0)[0]) / draws)
    np.testing.assert_array_less(np.abs(gradient.mean(axis=0) - exact), 5 * standard_error)
    # without the N/n factor the mean would be prior + (exact − prior)·n/N: far outside the tolerance
    prior = target.prior_gradient(theta0)[0]
    unscaled = prior + (exact - prior) * batch_size / target.n_data
    assert np.all(np.abs(unscaled - exact) > 20 * standard_error)
    # and the spread is the exact minibatch covariance (N²/n)·Cov_i ∇log p(x_i | θ)
    np.testing.assert_allclose(np.cov(gradient.T), target.minibatch_noise_covariance(theta0)[0], rtol=0.03)


def test_minibatch_indices_come_from_the_given_rng_one_row_per_chain(target):
    theta = np.array([[0.0, 1.0], [1.0, -1.0], [0.5, 0.0]])
    gradient = target.stochastic_gradient(theta, np.random.default_rng(7))
    indices = np.random.default_rng(7).integers(0, target.n_data, size=(3, 1))
    for chain in range(3):
        x, (t1, t2) = target.data[indices[chain, 0]], theta[chain]
        a, b = np.exp(-((x - t1) ** 2) / 4), np.exp(-((x - t1 - t2) ** 2) / 4)
        w = b / (a + b)  # responsibility of the second component
        per_datum = np.array([(x - t1 - w * t2) / 2, w * (x - t1 - t2) / 2])
        expected = np.array([t1 / 10, t2]) - target.n_data * per_datum
        np.testing.assert_allclose(gradient[chain], expected, rtol=1e-10)


def test_the_engines_door_gives_the_potential(target):
    """U = −Σ_i log(e^{a_i} + e^{b_i}) − log p(θ) from the door's ``row_log_likelihoods`` and ``prior_log_density`` (as
    Python and compiled) is :meth:`potential`, also where every a_i, b_i < −745 (e^a underflows to 0)."""
    theta = np.vstack([np.random.default_rng(2).normal(0.5, 1.0, size=(3, 2)), [[70.0, 5.0]]])
    assert np.all((target.data - 70.0) ** 2 / (2 * DATA_VARIANCE) > 745)
    expected = target.potential(theta)
    assert np.all(np.isfinite(expected))
    for potential in door_potentials(target.engine_functions(), theta):
        np.testing.assert_allclose(potential, expected, rtol=1e-10)


def test_noise_covariance_is_unknown_to_the_samplers(target):
    assert target.noise_covariance(np.zeros((2, 2))) is None


def test_density_is_normalised(target):
    mass, _ = integrate.dblquad(lambda y, x: np.exp(target.log_density(np.array([[x, y]])))[0], -15, 15, -15, 15)
    assert mass == pytest.approx(1.0, abs=1e-6)
    masses = bin_masses_2d(target.log_density, *target.histogram_edges())
    assert masses.sum() == pytest.approx(1.0, abs=1e-6)  # the KL grid holds the posterior


def test_exact_moments_agree_with_adaptive_quadrature(target):
    def expectation(function):
        return integrate.dblquad(lambda y, x: function(x, y) * np.exp(target.log_density(np.array([[x, y]])))[0],
                                 -4, 5, -6, 6, epsabs=1e-10)[0]

    mean, second = target.exact_moments()
    np.testing.assert_allclose(mean, [expectation(lambda x, y: x), expectation(lambda x, y: y)], atol=1e-6)
    np.testing.assert_allclose(second, [expectation(lambda x, y: x * x), expectation(lambda x, y: y * y)], atol=1e-6)


def test_data_seed_3_has_welling_tehs_two_modes_and_seed_0_one(target):
    modes = target.modes()
    assert modes.shape == (2, 2)
    for published in ([0.0, 1.0], [1.0, -1.0]):
        assert np.min(np.linalg.norm(modes - published, axis=1)) < 0.1
    assert np.allclose(target.gradient(modes), 0.0, atol=1e-4)
    assert make_target("welling_teh_mixture", data_seed=0).modes().shape == (1, 2)


def test_invalid_parameters_are_rejected():
    with pytest.raises(ValueError, match="batch_size"):
        make_target("welling_teh_mixture", batch_size=101)
    with pytest.raises(ValueError, match="initial_position"):
        make_target("welling_teh_mixture", initial_position=[0.0])


def _config(**target):
    return {"sampler": {"name": "sgld", "step_size": 0.001, "noise_estimate": "zero"},
            "target": {"name": "welling_teh_mixture", **target},
            "schedule": {"name": "constant"},
            "run": {"n_steps": 10, "n_chains": 2, "burn_in": 0, "thin": 1, "eval_every": 5, "progress": False},
            "seed": 0}


def test_config_validation_accepts_its_keys_and_rejects_others():
    checked = validate_config(_config(data_seed=3, n_data=100, batch_size=1, initial_position=[0.0, 0.0], initial_spread=0.0))
    assert checked["target"]["data_seed"] == 3
    with pytest.raises(ConfigError, match="target.batch_size"):
        validate_config(_config(batch_size=0))
    with pytest.raises(ConfigError, match="noise_variance"):
        validate_config(_config(noise_variance=4.0))


def test_command_line_runs_sgld_on_the_mixture(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(ROOT / "run.py"), "target=welling_teh_mixture", "sampler=sgld",
               "sampler.noise_estimate=zero", "sampler.step_size=0.001", "run.n_steps=200", "run.n_chains=4", "run.thin=1",
               "run.burn_in=100", "run.eval_every=100", "run.progress=false", "run.backend=python",
               f"run.results_dir={tmp_path}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])
    assert np.load(folder / "samples.npz")["theta"].shape == (4, 100, 2)
    bad = subprocess.run(command[:-1] + ["target.batch_size=500", f"run.results_dir={tmp_path / 'bad'}"],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert bad.returncode == 2 and "batch_size" in bad.stderr and not (tmp_path / "bad").exists()


def test_the_engines_sgld_block_is_welling_tehs_update_on_minibatches_drawn_with_replacement():
    """The engine's SGLD block (its Python source) on the mixture against the update written out here with this
    module's own per-datum gradient: θ' = θ − ε(θ/σ_p² − (N/n) Σ_{i∈S} ∇log p(x_i | θ)) + √(2ε) z, the block's
    minibatches (n indices with replacement, ⌊uN⌋) and normals replayed from its seed, step after step."""
    target = make_target("welling_teh_mixture", data_seed=3, batch_size=4)
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    steps, n_chains, step_size = 25, 3, 1e-3
    theta0 = np.random.default_rng(1).standard_normal((n_chains, 2))
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(9), SamplerState(theta=theta0),
                                          np.full(steps, step_size), 0)
    # per step: the minibatch's uniforms, then the injected noise's normals (slot 1; no gradient-noise slot 0: a data
    # model's gradient noise is its minibatch)
    rng = np.random.default_rng(9)
    rows, normals = np.empty((steps, n_chains, 4), dtype=int), np.zeros((steps, 2, n_chains, 2))
    for k in range(steps):
        rows[k] = np.minimum((rng.random((n_chains, 4)) * target.n_data).astype(int), target.n_data - 1)
        normals[k, 1] = rng.standard_normal((n_chains, 2))
    assert any(len(set(row)) < 4 for row in rows.reshape(-1, 4))  # a repeated index: drawn with replacement
    theta = theta0.copy()
    for k in range(steps):
        likelihood = np.stack([_datum_gradients_sum(theta[c:c + 1], target.data[rows[k, c]])[0]
                               for c in range(n_chains)])
        gradient = theta / np.array([10.0, 1.0]) - target.n_data / 4 * likelihood
        theta = theta - step_size * gradient + np.sqrt(2 * step_size) * normals[k, 1]
        np.testing.assert_allclose(block.theta[:, k], theta, rtol=1e-12, atol=1e-12)
