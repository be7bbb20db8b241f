"""The optimisers (sgmcmc/samplers/optimisers.py): each step on the engine's blocks (their source as Python) is its
sampler's step with the injected noise removed and equals a hand-written update (SGD; the heavy ball in the authors'
(η, α) form); a run keeps no samples; the optimisers reach the minimum of a quadratic."""

import numpy as np
import pytest

from sgmcmc.config import RunOptions
from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import PYTHON, Blocks, block_draws
from sgmcmc.runner import run_chains
from sgmcmc.samplers import SAMPLERS, make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.logistic_regression import logistic_synthetic
from tests.helpers import engine_step

N_CHAINS, STEP_SIZE, FRICTION = 4, 0.05, 2.0
VARIANCE = np.diag([4.0, 1.0])


def _start(seed=3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(N_CHAINS, 2)), rng.normal(size=(N_CHAINS, 2)), rng.normal(size=(N_CHAINS, 2))


def test_the_optimisers_are_registered_as_optimisers():
    assert {name for name, cls in SAMPLERS.items() if cls.kind == "optimiser"} == {"sgd", "sgd_momentum"}


def test_sgd_is_sgld_without_its_noise():
    target = make_target("correlated_2d", noise_variance=VARIANCE)
    theta, gradient_normal, _ = _start()
    sgd = make_sampler("sgd", target)
    sgld = make_sampler("sgld", target, noise_estimate="zero")
    # SGLD's draws, its injected normals (here 5s) dropped
    new = engine_step(sgd, sgd.init(theta, None), STEP_SIZE, gradient_normal, np.full_like(theta, 5.0))
    reference = engine_step(sgld, sgld.init(theta, None), STEP_SIZE, gradient_normal, np.zeros_like(theta))
    np.testing.assert_allclose(new.theta, reference.theta, rtol=1e-12)
    # the hand-written step: θ − ε(∇U + L z)
    by_hand = theta - STEP_SIZE * (target.gradient(theta) + gradient_normal @ np.linalg.cholesky(VARIANCE).T)
    np.testing.assert_allclose(new.theta, by_hand, rtol=1e-12)


def test_sgd_momentum_is_sghmc_without_its_noise_and_the_authors_heavy_ball():
    target = make_target("correlated_2d", noise_variance=VARIANCE)
    theta, gradient_normal, momentum = _start()
    optimiser = make_sampler("sgd_momentum", target, friction=FRICTION)
    sghmc = make_sampler("sghmc", target, friction=FRICTION, noise_estimate="zero", integrator="splitting")
    state = optimiser.init(theta, None)._replace(momentum=momentum)
    new = engine_step(optimiser, state, STEP_SIZE, gradient_normal, np.full_like(theta, 5.0))
    reference = engine_step(sghmc, state, STEP_SIZE, gradient_normal, np.zeros_like(theta))
    np.testing.assert_allclose(new.theta, reference.theta, rtol=1e-12)
    np.testing.assert_allclose(new.momentum, reference.momentum, rtol=1e-12)
    # tqchen/ML-SGHMC's SGDUpdater: v' = (1 − α)v − η g, w' = w + v', with v = εr, η = ε², α = εC
    eta, alpha, velocity = STEP_SIZE**2, STEP_SIZE * FRICTION, STEP_SIZE * momentum
    g = target.gradient(theta) + gradient_normal @ np.linalg.cholesky(VARIANCE).T
    velocity = (1 - alpha) * velocity - eta * g
    np.testing.assert_allclose(new.theta, theta + velocity, rtol=1e-12)
    np.testing.assert_allclose(STEP_SIZE * new.momentum, velocity, rtol=1e-12)


def _hand_written(name: str, theta: np.ndarray, gradient, steps: int) -> np.ndarray:
    """θ after ``steps`` of SGD (θ − εg) or SGD with momentum (r − εg − εCr, θ + εr', from r = 0), g = gradient(k, θ)
    at step k."""
    position, momentum = theta.copy(), np.zeros_like(theta)
    for k in range(steps):
        g = gradient(k, position)
        if name == "sgd":
            position = position - STEP_SIZE * g
        else:
            momentum = momentum - STEP_SIZE * g - STEP_SIZE * FRICTION * momentum
            position = position + STEP_SIZE * momentum
    return position


def test_sgd_momentum_starts_at_rest():
    optimiser = make_sampler("sgd_momentum", make_target("correlated_2d"))
    assert np.all(optimiser.init(np.ones((3, 2)), None).momentum == 0)


@pytest.mark.parametrize("name, params", [("sgd", {}), ("sgd_momentum", {"friction": 2.0})])
def test_an_optimiser_run_keeps_no_samples_and_reaches_the_mode(name, params):
    """With the exact gradient (V = 0) both reach the mode θ* = 0 of a Gaussian; the run keeps nothing."""
    target = make_target("gaussian_2d_cov", noise_variance=0.0)
    optimiser = make_sampler(name, target, **params)
    settings = RunOptions(n_steps=3000, n_chains=3, burn_in=1000, thin=1, eval_every=1000, progress=False)
    outcome = run_chains(optimiser, Constant(0.05), settings, np.random.default_rng(0))
    assert outcome.status == "completed" and outcome.samples.shape == (3, 0, 2)
    assert outcome.moments.count == 0
    np.testing.assert_allclose(outcome.final_theta, 0.0, atol=1e-6)


@pytest.mark.parametrize("name, params", [("sgd", {}), ("sgd_momentum", {"friction": 2.0})])
def test_an_optimisers_blocks_of_twelve_steps_are_the_hand_written_updates(name, params):
    """A block of 12 steps on the engine's blocks (their Python source; the compiled blocks are that source,
    tests/engine/test_driver.py) is 12 of the hand-written updates above on the block's own draws, and moves."""
    target = make_target("correlated_2d", noise_variance=VARIANCE)
    optimiser = make_sampler(name, target, **params)
    blocks = kernel_of(optimiser, PYTHON)
    assert isinstance(blocks, Blocks) and blocks.silent
    theta, _, _ = _start()
    state = optimiser.init(theta, None)
    block = blocks(np.random.default_rng(7), state, np.full(12, STEP_SIZE), 0)
    _, normals, _ = block_draws(np.random.default_rng(7), 12, N_CHAINS, 2, blocks.slots)
    factor = np.linalg.cholesky(VARIANCE).T
    position = _hand_written(name, theta, lambda k, point: target.gradient(point) + normals[k, 0] @ factor, 12)
    np.testing.assert_allclose(block.state.theta, position, rtol=1e-12, atol=1e-14)
    assert not np.allclose(block.state.theta, theta)


@pytest.mark.parametrize("name, params", [("sgd", {}), ("sgd_momentum", {"friction": 2.0})])
def test_an_optimiser_on_a_data_model_draws_its_minibatches_alone(name, params):
    """On a data model (its gradient noise is its minibatch) an optimiser's blocks draw no normals: 12 steps are the
    hand-written updates with ∇Ũ = −(N/n) Σ_{i∈S} g_i − ∇log p(θ) on the minibatches S of a Generator that draws
    those alone (each step n uniforms per chain, a subset by Floyd's algorithm: ``block_draws`` without normals)."""
    target = logistic_synthetic(n_data=40, dim=3, batch_size=10, n_test=10)
    optimiser = make_sampler(name, target, **params)
    blocks = kernel_of(optimiser, PYTHON)
    assert blocks.first_slot == blocks.slots  # no slot drawn
    theta = np.random.default_rng(2).standard_normal((N_CHAINS, 3))
    block = blocks(np.random.default_rng(7), optimiser.init(theta, None), np.full(12, STEP_SIZE), 0)
    rows, _, _ = block_draws(np.random.default_rng(7), 12, N_CHAINS, 3, slots=0, n_data=40, batch_size=10)
    position = _hand_written(name, theta, lambda k, point: -(40 / 10) * target.log_likelihood_gradients(
        point, rows[k]).sum(axis=1) - target.log_prior_gradient(point), 12)
    np.testing.assert_allclose(block.state.theta, position, rtol=1e-12, atol=1e-14)
    assert not np.allclose(block.state.theta, theta)
