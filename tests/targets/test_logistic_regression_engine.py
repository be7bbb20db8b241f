"""Logistic regression (T8) on the engine's blocks, through the rows door (``LogisticRegression.engine_functions``):
what the target hands the engine, checked against the target's own numpy gradients (``log_likelihood_gradients``,
``log_prior_gradient``, :meth:`potential`), not against the samplers' numpy steps. The doors at given θ and rows; a
block's SGLD step written here from the block's own draws (its minibatch rows and normals drawn again by
:func:`sgmcmc.engine.driver.block_draws`) with ∇Ũ from the numpy gradients, on minibatches, at n = N and under
another prior; how a block on the rows' running estimate ends (a covariance that is not PSD, a divergence) against
facts written in the test (the step it stops at, the steps kept being those of a shorter block). The integrators
themselves are pinned to the generic recipe and hand-written references in tests/samplers/test_recipe_agreement.py
and tests/engine/test_driver.py; the blocks run as their Python source (the compiled block is that source:
tests/engine/test_driver.py); the paper's samplers take the compiled engine."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import DIVERGED, FAILED, kernel_of
from sgmcmc.engine.driver import PYTHON, Blocks, block_draws
from sgmcmc.samplers import make_sampler
from sgmcmc.targets.logistic_regression import (LogisticRegression, logistic_synthetic, signed_row_gradient_sums,
                                               signed_row_gradients)
from tests.helpers import door_potentials


def logistic(n_data=200, dim=6, batch_size=20, seed=0, prior_variance=1.0, cls=LogisticRegression):
    """A small synthetic logistic regression (features N(0, I)/2, labels from a random w)."""
    rng = np.random.default_rng(seed)
    features = 0.5 * rng.standard_normal((n_data, dim))
    labels = np.where(features @ rng.standard_normal(dim) + 0.3 * rng.standard_normal(n_data) > 0, 1, -1)
    return cls(features, labels, batch_size=batch_size, initial_scale=0.3, prior_variance=prior_variance)


def start_state(sampler, n_chains=3, seed=5):
    """The sampler's initial state at the target's initial positions."""
    rng = np.random.default_rng(seed)
    return sampler.init(sampler.target.initial_position(n_chains, rng), rng)


def sgld_by_hand(target, theta, step_size, seed, likelihood_gradients=None):
    """θ − ε∇Ũ(θ) + √(2ε) z, the SGLD step of a block of one step drawn from ``seed``, written here: ∇Ũ = −(N/n)
    Σ_{i∈S} g_i − ∇log p(θ) from the target's numpy ``log_likelihood_gradients`` (or ``likelihood_gradients``) and
    ``log_prior_gradient`` as they stand now (a Gibbs step's hyperparameters included), S and z the block's minibatch
    rows and injected normals (slot 1) drawn again from the seed (:func:`~sgmcmc.engine.driver.block_draws`; every row
    at n = N; no gradient-noise slot: a data model's gradient noise is its minibatch). Independent of the engine's
    doors and of the numpy steps."""
    n_chains = theta.shape[0]
    rows, normals, _ = block_draws(np.random.default_rng(seed), 1, n_chains, target.dim, n_data=target.n_data,
                                   batch_size=target.batch_size, first_slot=1)
    rows = np.broadcast_to(rows[0], (n_chains, target.batch_size))
    per_example = (likelihood_gradients or target.log_likelihood_gradients)(theta, rows)
    gradient = -(target.n_data / target.batch_size) * per_example.sum(axis=1) - target.log_prior_gradient(theta)
    return theta - step_size * gradient + np.sqrt(2 * step_size) * normals[0, 1]


def one_step(blocks, state, step_size, seed):
    """A block of one step from ``state`` on the Generator of ``seed``."""
    return blocks(np.random.default_rng(seed), state, np.array([step_size]), 0)


def sgld_steps_read_the_hyperparameters_at_each_block(target, change, n_chains, step_size, seed=3, rtol=1e-10,
                                                      likelihood_gradients=None):
    """Two blocks of one SGLD step from one Blocks object, ``change(block_number)`` called before each (a Gibbs
    step's new hyperparameters): each step is :func:`sgld_by_hand` under the hyperparameters of its block's start,
    and the second is not the step under the first block's hyperparameters (by 10³ times the tolerance at least)."""
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    blocks = sampler.engine_blocks(PYTHON)
    assert isinstance(blocks, Blocks)
    state = start_state(sampler, n_chains, seed)
    for block_number in range(2):
        stale = sgld_by_hand(target, state.theta, step_size, seed + 10 + block_number, likelihood_gradients)
        change(block_number)
        expected = sgld_by_hand(target, state.theta, step_size, seed + 10 + block_number, likelihood_gradients)
        block = one_step(blocks, state, step_size, seed + 10 + block_number)
        assert block.status is None
        np.testing.assert_allclose(block.theta[:, 0], expected, rtol=rtol, atol=rtol / 10)
        np.testing.assert_allclose(block.state.theta, expected, rtol=rtol, atol=rtol / 10)
        if block_number:
            assert np.abs(expected - stale).max() > 1e3 * rtol * np.abs(expected).max()
        state = block.state


@pytest.mark.parametrize("n_data, batch_size, prior_variance", [(200, 20, 1.0), (200, 20, 4.0), (40, 40, 4.0)])
def test_one_sgld_block_is_written_from_the_targets_numpy_gradients(n_data, batch_size, prior_variance):
    """One SGLD step of a block against the step written here from the numpy gradients on the block's own draws:
    minibatches of 20 of 200 (the N/n scale), s² = 4 (the prior's function of this s², not a cached one of s² = 1),
    and n = N (every row every step, nothing drawn for the minibatch). The step moves θ by much more than the
    tolerance."""
    target = logistic(n_data=n_data, batch_size=batch_size, prior_variance=prior_variance)
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    state = start_state(sampler)
    block = one_step(sampler.engine_blocks(PYTHON), state, 0.01, seed=6)
    expected = sgld_by_hand(target, state.theta, 0.01, seed=6)
    assert block.status is None
    np.testing.assert_allclose(block.theta[:, 0], expected, rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(block.state.theta, expected, rtol=1e-11, atol=1e-12)
    assert np.abs(expected - state.theta).min() > 1e-4


@pytest.mark.parametrize("name, params", [("sgld", dict(noise_estimate="running")),
                                          ("sghmc", dict(integrator="theta_first", noise_estimate="running"))])
@pytest.mark.parametrize("dim", [1, 3])
def test_a_covariance_that_is_not_psd_fails_keeping_the_steps_before(name, params, dim):
    """The rows' running estimate without the clip: ten steps at ε = 0.0005 (ε V̂ well below 2D), then ε = 0.3: the
    block fails at a step k after the tenth (d = 1: a negative variance ε(2D − εV̂)), says so (``step k + 1:``), and
    keeps the k steps before it, those of a block of k steps from the same seed (a block draws its numbers in step
    order)."""
    sampler = make_sampler(name, logistic(dim=dim), **params)
    state, steps = start_state(sampler), np.concatenate([np.full(10, 0.0005), np.full(10, 0.3)])
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(6), state, steps, 0)
    assert block.status == FAILED and 10 <= block.stop < 20 and block.error.startswith(f"step {block.stop + 1}:")
    kept = sampler.engine_blocks(PYTHON)(np.random.default_rng(6), state, steps[:block.stop], 0)
    assert kept.status is None
    np.testing.assert_allclose(block.theta, kept.theta, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(block.state.theta, kept.state.theta, rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("name", ["sgnht", "ccadl"])
def test_a_divergence_ends_the_block_keeping_the_finite_steps(name):
    """ε = 1 on the rows door blows up SGNHT and CCAdL (its running estimate on the rows): the block stops at the
    first non-finite state, says which step, and keeps the steps before it, those of a block that long from the same
    seed."""
    sampler = make_sampler(name, logistic(), integrator="theta_first",
                           noise_estimate="zero" if name == "sgnht" else "running")
    state = start_state(sampler)
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(6), state, np.full(60, 1.0), 0)
    assert block.status == DIVERGED and 0 < block.stop < 60
    assert block.error.startswith(f"non-finite state at step {block.stop + 1} in ")
    kept = sampler.engine_blocks(PYTHON)(np.random.default_rng(6), state, np.full(block.stop, 1.0), 0)
    assert kept.status is None and np.all(np.isfinite(kept.theta))
    np.testing.assert_allclose(block.theta, kept.theta, rtol=1e-13, atol=1e-14)
    np.testing.assert_allclose(block.state.theta, kept.state.theta, rtol=1e-13, atol=1e-14)


def test_the_rows_door_is_the_targets_gradients():
    target = logistic(prior_variance=2.5)
    theta, index = np.random.default_rng(0).standard_normal((2, target.dim)), np.array([[0, 5, 7], [199, 3, 1]])
    functions = target.engine_functions()
    per_chain = np.stack([signed_row_gradients(t, functions["data"][i]) for t, i in zip(theta, index)])
    np.testing.assert_allclose(per_chain, target.log_likelihood_gradients(theta, index), rtol=1e-13)
    np.testing.assert_allclose(np.stack([functions["prior_gradient"](t) for t in theta]),
                               target.log_prior_gradient(theta), rtol=1e-15)


@pytest.mark.parametrize("prior_variance", [1.0, 2.5])
def test_the_rows_door_gives_the_targets_potential(prior_variance):
    """U = −Σ_i log σ(m_i) − log p(θ) from the door's ``row_log_likelihoods`` and ``prior_log_density`` (as Python and
    compiled) is :meth:`LogisticRegression.potential`, also at margins of ~10³ (log σ(m) = −log(1 + e^{−m}) computed
    naively is −∞ there)."""
    target = logistic(n_data=30, dim=4, batch_size=5, prior_variance=prior_variance)
    theta = np.random.default_rng(1).standard_normal((3, target.dim))
    theta = np.vstack([theta, 300.0 * theta[:1]])
    expected = target.potential(theta)
    assert np.all(np.isfinite(expected)) and expected[-1] > 1e3
    for potential in door_potentials(target.engine_functions(), theta):
        np.testing.assert_allclose(potential, expected, rtol=1e-10)


@pytest.mark.parametrize("config", [
    ("sghmc", dict(friction=1.0, noise_estimate="running", noise_clip=True, integrator="theta_first",
                   finite_population=False)),
    ("sgnht", dict(diffusion=1.0, noise_estimate="zero", integrator="theta_first")),
    ("ccadl", dict(diffusion=1.0, noise_estimate="running", integrator="theta_first", finite_population=False)),
])
def test_the_papers_samplers_run_on_the_compiled_engine(config):
    """configs/sampler/*_shang2015.yaml on logistic regression (Shang et al. 2015 Fig. 2): the runner's kernel is the
    engine's blocks, not the numpy steps; a subclass of the target (which may change its gradients) is not. Asked of
    the Python backend: the same decision, without compiling (the compiled Fig. 2 run is make validate's,
    tests/test_ccadl_fig2.py)."""
    name, params = config
    assert isinstance(kernel_of(make_sampler(name, logistic(), **params), PYTHON), Blocks)
    assert kernel_of(make_sampler(name, logistic(cls=OwnMinibatches), **params), PYTHON) is None
    assert isinstance(kernel_of(make_sampler(name, logistic_synthetic(n_data=100), **params), PYTHON), Blocks)


class OwnMinibatches(LogisticRegression):
    """A subclass (here one that draws its own minibatches, which the engine's blocks would not): it stays on the numpy
    steps, as any subclass that does not declare engine_functions in its own body does (Sampler._kernel_declared)."""

    def minibatch(self, rng, n_chains):
        return np.stack([rng.choice(self.n_data, self.batch_size, replace=False) for _ in range(int(n_chains))])


def test_the_sums_door_is_the_rows_doors_sums():
    """``signed_row_gradient_sums`` (HMC's exact ∇U on the engine) against the rows door's per-example gradients, summed
    here: Σ_i g_i and Σ_i (g_i − ḡ)², compiled and as Python, with margins of both signs and |m| ~ 10²."""
    rows = np.random.default_rng(5).standard_normal((40, 6)) * np.array([1, 1, 1, 1, 1, 30.0])
    theta = np.random.default_rng(6).standard_normal(6)
    examples = signed_row_gradients.py_func(theta, rows)
    expected = (examples.sum(axis=0), np.sum((examples - examples.mean(axis=0)) ** 2, axis=0))
    for function in (signed_row_gradient_sums, signed_row_gradient_sums.py_func):
        total, scatter = function(theta, rows, True)
        np.testing.assert_allclose(total, expected[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(scatter, expected[1], rtol=1e-9, atol=1e-9)
