"""A user's data model on rows (``sgmcmc/targets/user.py``, "A data model on rows") runs on the engine's compiled
blocks with no formula to name, samples its exact posterior, and a model the compiler refuses runs on the numpy steps
with a one-line warning."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import Blocks
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.user import user_target
from tests.engine.test_driver import flat_prior, gaussian_examples


class GaussianMean:
    """x_i ~ N(µ, 1) in d independent coordinates, flat prior: the posterior is N(x̄, 1/N) per coordinate. Its
    gradients are tests/engine/test_driver.py's, so the blocks compiled there (and cached) run it."""

    def __init__(self, n_data=40, dim=2, seed=0):
        self.data = np.random.default_rng(seed).standard_normal((n_data, dim)) + np.arange(1.0, dim + 1)
        self.n_data, self.dim = n_data, dim

    row_gradients = staticmethod(gaussian_examples)
    prior_gradient = staticmethod(flat_prior)

    @staticmethod
    def row_log_likelihoods(theta, rows):
        return -0.5 * np.sum((rows - theta) ** 2, axis=1)

    @staticmethod
    def prior_log_density(theta):
        return 0.0

    def posterior(self):
        return self.data.mean(axis=0), 1.0 / self.n_data


class Uncompilable(GaussianMean):
    """The same model, with a gradient numba cannot compile (a Python object inside)."""

    @staticmethod
    def row_gradients(theta, rows):
        return np.asarray(list(rows - theta))


@pytest.mark.parametrize("name", ["sgld", "sghmc", "sgnht"])
def test_a_row_model_runs_on_the_engines_blocks_and_samples_its_posterior(name):
    model = GaussianMean()
    target = user_target(model, "GaussianMean", batch_size=model.n_data)  # n = N: no minibatch noise
    step_size = {"sgld": 0.002, "sghmc": 0.02, "sgnht": 0.02}[name]
    sampler = make_sampler(name, target, noise_estimate="zero", **({"friction": 5.0} if name == "sghmc" else {}))
    assert isinstance(kernel_of(sampler), Blocks)
    mean, variance = model.posterior()
    rng = np.random.default_rng(1)
    theta0 = mean + np.sqrt(variance) * rng.standard_normal((400, model.dim))
    settings = RunSettings(n_steps=600, n_chains=400, burn_in=300, eval_every=10**9, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, rng, theta0=theta0)
    assert outcome.status == "completed"
    final = outcome.final_theta
    # 400 chains: the mean within 4 standard errors; the variance within 25% (a factor 2 of the noise is 100%; the
    # schemes' own bias at these ε is at most 5%)
    assert np.all(np.abs(final.mean(axis=0) - mean) < 4 * np.sqrt(variance / 400))
    np.testing.assert_allclose(final.var(axis=0) / variance, 1.0, atol=0.25)


def test_a_model_the_compiler_refuses_runs_on_the_numpy_steps_and_says_so(caplog):
    model = Uncompilable()
    target = user_target(model, "Uncompilable", batch_size=10)
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    with caplog.at_level(logging.WARNING):
        assert sampler.engine_blocks() is None
    assert any("runs on the numpy steps" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("noise_estimate", ["known", "running"])
def test_the_other_noise_estimates_stay_on_the_numpy_steps(noise_estimate):
    """known subtracts the exact V(θ) (a pass over the data at every step) and running keeps Î_t: neither is in the
    engine's estimators yet, so the engine must not run them as if nothing were subtracted."""
    target = user_target(GaussianMean(), "GaussianMean", batch_size=10)
    assert make_sampler("sgld", target, noise_estimate=noise_estimate).engine_blocks() is None


def test_the_vectorised_view_of_a_row_model_is_its_engine_functions():
    model = GaussianMean()
    target = user_target(model, "GaussianMean", batch_size=5)
    theta = np.array([[0.5, 1.0], [2.0, -1.0]])
    index = np.array([[0, 3, 7], [1, 2, 39]])
    np.testing.assert_allclose(target.log_likelihood_gradients(theta, index),
                               np.stack([model.data[i] - t for t, i in zip(theta, index)]))
