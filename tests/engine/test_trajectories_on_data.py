"""The resampled-trajectory integrator (``sgmcmc/engine/integrators.py:trajectory``) on a user's data model on rows:
each gradient of a trajectory takes a minibatch of its own (all N rows for HMC's exact ∇U), and the
Metropolis–Hastings test takes the exact U from the model's ``row_log_likelihoods`` and ``prior_log_density``.

Pinned step by step to the generic recipe (:func:`sgmcmc.recipe.recipe_step`: leapfrog's kicks and drifts, Algorithm
2's drift and SGHMC's momentum row, Ma et al. 2015 Eq. 10 and 12) on the block's own draws, with ∇Ũ and U written out
by hand for the model (x_i ~ N(θ, I), prior N(0, 4I)); and, in the long tier, compiled against the Python source and
against the exact Gaussian posterior."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from sgmcmc.engine import estimators
from sgmcmc.engine.driver import COMPILED, PYTHON, block_draws
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.recipe import Recipe, recipe_step
from sgmcmc.samplers import make_sampler
from sgmcmc.state import SamplerState
from sgmcmc.targets import make_target
from sgmcmc.targets.user import user_target
from tests.helpers import ScriptedNormals
from tests.targets.test_row_models import GaussianMeanWithPrior

N_DATA, BATCH, DIM = 40, 10, 2


def model_and_target(batch_size=BATCH):
    model = GaussianMeanWithPrior(n_data=N_DATA, dim=DIM)
    return model, user_target(model, "GaussianMeanWithPrior", batch_size=batch_size)


def gradient_on(data, rows, theta):
    """∇Ũ(θ) = −(N/n) Σ_{i∈rows} (x_i − θ) + θ/4, written out."""
    return -(N_DATA / len(rows)) * np.sum(data[rows] - theta, axis=0) + theta / 4.0


def potential(data, theta):
    """U(θ) = ½ Σ_i ‖x_i − θ‖² + ‖θ‖²/8 over all the rows, written out."""
    return 0.5 * np.sum((data - theta) ** 2) + theta @ theta / 8.0


def recipe_move(theta, momentum, step_size, gradient=None, friction=0.0, normals=None):
    """One generic recipe step on z = (θ, r), Q = [[0, −I], [I, 0]], Γ = 0: with ∇U given (``gradient``), the momentum
    row of the step on H = U + ½rᵀr, D = diag(0, C·I), r − ε(∇U + Cr) + √(2εC) z with z = ``normals`` (a kick;
    leapfrog's with C = 0); else the position row of the step on H = ½rᵀr, D = 0, θ + εr (a drift)."""
    z = np.concatenate([theta, momentum])[None]
    curl = np.zeros((1, 2 * DIM, 2 * DIM))
    curl[0, :DIM, DIM:], curl[0, DIM:, :DIM] = -np.eye(DIM), np.eye(DIM)
    diffusion = np.zeros((1, 2 * DIM, 2 * DIM))
    if gradient is not None:
        diffusion[0, DIM:, DIM:] = friction * np.eye(DIM)
    head = np.zeros(DIM) if gradient is None else gradient
    recipe = Recipe(lambda z, rng: np.concatenate([head, z[0, DIM:]])[None], lambda z: diffusion, lambda z: curl,
                    lambda z: np.zeros_like(z))
    injected = np.concatenate([np.zeros(DIM), np.zeros(DIM) if normals is None else normals])[None]
    moved = recipe_step(recipe, z, step_size, ScriptedNormals(injected))[0]
    return (moved[:DIM], momentum) if gradient is None else (theta, moved[DIM:])


def replay(blocks, seed, n_steps, n_chains):
    """The block's draws, drawn again from the same seed."""
    return block_draws(np.random.default_rng(seed), n_steps, n_chains, DIM, blocks.slots, blocks.uniforms,
                       blocks.n_data, blocks.batch_size, blocks.replacement, blocks.passes)


CASES = {  # sampler, its parameters
    "hmc": ("hmc", dict(n_leapfrog=3, metropolis=True)),
    "naive_sghmc_mh": ("naive_sghmc", dict(n_leapfrog=3, metropolis=True)),
    "sghmc_mh": ("sghmc_mh", dict(n_leapfrog=3, metropolis=True, friction=1.5, noise_estimate="zero")),
}


@pytest.mark.parametrize("case", CASES)
def test_each_gradient_of_a_trajectory_takes_its_own_minibatch_and_the_test_the_exact_u(case):
    """Every step of the Python source equals the recipe's composition on the same draws: gradient j of a step reads
    the j-th share of its rows (n of them, or all N for HMC's exact ∇U), and the acceptance probability is
    min(1, exp(H(θ₀, r₀) − H(θ, r))) with U summed over every row."""
    name, params = CASES[case]
    model, target = model_and_target()
    sampler = make_sampler(name, target, **params)
    blocks = sampler.engine_blocks(backend=PYTHON)
    steps, chains, step_size, m = 4, 2, 0.02, params["n_leapfrog"]
    theta0 = np.random.default_rng(1).normal(1.5, 0.3, size=(chains, DIM))
    block = blocks(np.random.default_rng(7), sampler.init(theta0, None), np.full(steps, step_size), 0)
    rows, normals, uniforms = replay(blocks, 7, steps, chains)
    leapfrog = name != "sghmc_mh"
    passes = m + 1 if leapfrog else m
    share = rows.shape[2] // passes
    assert share == (N_DATA if name == "hmc" else BATCH) and rows.shape[2] == passes * share
    data = model.data
    for c in range(chains):
        theta = theta0[c]
        for k in range(steps):
            batch = rows[0 if rows.shape[0] == 1 else k, 0 if rows.shape[1] == 1 else c]
            shares = [batch[j * share:(j + 1) * share] for j in range(passes)]
            if name == "hmc":
                assert all(np.array_equal(part, np.arange(N_DATA)) for part in shares)
            else:  # each a subset of its own (without replacement), not one minibatch for the whole trajectory
                assert all(len(set(part)) == BATCH for part in shares)
                assert len({tuple(sorted(part)) for part in shares}) > 1
            start, momentum = theta.copy(), normals[k, 0, c].copy()
            position = theta.copy()
            if leapfrog:
                _, momentum = recipe_move(position, momentum, step_size / 2, gradient_on(data, shares[0], position))
                for j in range(1, passes):
                    position, _ = recipe_move(position, momentum, step_size)
                    kick = step_size / 2 if j == passes - 1 else step_size
                    _, momentum = recipe_move(position, momentum, kick, gradient_on(data, shares[j], position))
            else:
                for j in range(passes):
                    position, _ = recipe_move(position, momentum, step_size)
                    _, momentum = recipe_move(position, momentum, step_size, gradient_on(data, shares[j], position),
                                              friction=1.5, normals=normals[k, 2 + 2 * j, c])
            old = potential(data, start) + 0.5 * normals[k, 0, c] @ normals[k, 0, c]
            new = potential(data, position) + 0.5 * momentum @ momentum
            accept = min(1.0, np.exp(old - new))
            np.testing.assert_allclose(block.accept_probability[c, k], accept, rtol=1e-9)
            theta = position if uniforms[k, c] < accept else start
            np.testing.assert_allclose(block.theta[c, k], theta, rtol=1e-9, atol=1e-12)
    assert 0.0 < block.accept_probability.min() and block.accept_probability.max() <= 1.0


@pytest.mark.validate  # a block compiled for the model (seconds): the long tier
def test_compiled_trajectories_on_a_data_model_are_their_source_and_sample_its_posterior():
    """Naive SGHMC + MH and exact HMC with its test, compiled: the same paths as the Python source; exact HMC from
    1,000 posterior draws keeps the Gaussian posterior N(Σx_i/(N + ¼), 1/(N + ¼) I) (mean within 4 standard
    errors, variance within 10%: a factor 2 in either is far outside)."""
    model, target = model_and_target()
    for name, params in (CASES["naive_sghmc_mh"], CASES["hmc"]):
        sampler = make_sampler(name, target, **params)
        blocks = sampler.engine_blocks(backend=COMPILED)
        theta0 = np.random.default_rng(2).normal(1.5, 0.3, size=(3, DIM))
        runs = [replace(blocks, backend=backend)(np.random.default_rng(5), sampler.init(theta0, None),
                                                 np.full(6, 0.02), 0) for backend in (COMPILED, PYTHON)]
        np.testing.assert_allclose(runs[0].theta, runs[1].theta, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(runs[0].accept_probability, runs[1].accept_probability, rtol=1e-12)
    precision = N_DATA + 0.25
    mean, variance = model.data.sum(axis=0) / precision, 1.0 / precision
    rng = np.random.default_rng(3)
    start = mean + np.sqrt(variance) * rng.standard_normal((1000, DIM))
    sampler = make_sampler("hmc", target, n_leapfrog=5, metropolis=True)
    block = sampler.engine_blocks()(rng, SamplerState(start, np.zeros_like(start)), np.full(20, 0.3), 0)
    final = block.theta[:, -1]
    assert np.all(np.abs(final.mean(axis=0) - mean) < 4 * np.sqrt(variance / 1000))
    np.testing.assert_allclose(final.var(axis=0) / variance, 1.0, atol=0.1)
    assert 0.3 < block.accept_probability.mean() < 0.99


@pytest.mark.parametrize("name, params", [("welling_teh_mixture", dict(data_seed=3)),
                                          ("logistic_synthetic", dict(n_data=300, dim=2, batch_size=10))])
def test_hmcs_exact_gradient_takes_every_row_once(name, params):
    """Welling and Teh's mixture draws its minibatches with replacement, logistic regression hands its sums for every
    row; HMC's exact ∇U takes each of the N rows once either way: a trajectory without the test is the leapfrog on
    the target's own full-data gradient (its numpy ``gradient``, written apart from the engine's doors)."""
    target = make_target(name, **params)
    sampler = make_sampler("hmc", target, n_leapfrog=3, metropolis=False)
    blocks = sampler.engine_blocks(backend=PYTHON)
    assert (blocks.source[0].python is estimators.sums_gradient.py_func) == (name == "logistic_synthetic")
    theta0 = np.array([[0.3, 0.8], [-0.2, 1.1]])
    step_size = 0.05
    block = blocks(np.random.default_rng(4), sampler.init(theta0, None), np.full(2, step_size), 0)
    normals = replay(blocks, 4, 2, 2)[1]
    theta = theta0
    for k in range(2):
        position, momentum = theta, normals[k, 0] - 0.5 * step_size * target.gradient(theta)
        for j in range(3):
            position = position + step_size * momentum
            momentum = momentum - (0.5 if j == 2 else 1.0) * step_size * target.gradient(position)
        theta = position
        np.testing.assert_allclose(block.theta[:, k], theta, rtol=1e-10)


def test_hmc_computes_no_noise_estimate_and_its_exact_gradient_no_estimator():
    """HMC's leapfrog injects no noise: asked for the known V(θ), it computes none (a pass over the data at every
    gradient); its exact ∇U over all the rows takes the plain estimator under the control variates or SVRG (the numpy
    steps take the target's gradient, which counts nothing)."""
    model, target = model_and_target()
    hmc = make_sampler("hmc", target, n_leapfrog=3, noise_estimate="known")
    assert hmc.noise_estimate == "zero" and hmc.engine_blocks(backend=PYTHON).source[4][2] == estimators.NO_RUNNING
    for estimator in ("control_variates", "svrg"):
        blocks = make_sampler("hmc", make_estimator(estimator, target), n_leapfrog=3).engine_blocks(backend=PYTHON)
        assert blocks.source[4][1] == estimators.PLAIN and blocks.advanced is None


@pytest.mark.parametrize("estimator", ["control_variates", "svrg"])
def test_a_trajectory_on_an_exact_estimate_is_the_leapfrog_on_grad_u_and_counts_every_gradient(estimator):
    """The control variates about the posterior mode of the Gaussian mean (h_i = g_i(θ) − g_i(θ̂) + ḡ(θ̂) = x̄ − θ on
    every row), and SVRG renewed before every gradient (θ̂ = θ: h_i = ḡ(θ)), make each minibatch gradient the exact ∇U:
    naive SGHMC's trajectory on the engine is then the leapfrog on ∇U written out, on the block's momentum normals.
    Each of its m + 1 gradients a step is counted: 2n per-example gradients each (and SVRG's N at each renewal), SVRG's
    count of gradients m + 1 a step."""
    model, target = model_and_target()
    wrapped = make_estimator(estimator, target, **({"update_every": 1} if estimator == "svrg" else {}))
    sampler = make_sampler("naive_sghmc", wrapped, n_leapfrog=3, metropolis=False)
    blocks = sampler.engine_blocks(backend=PYTHON)
    steps, chains, step_size, passes = 2, 2, 0.02, 4
    theta0 = np.random.default_rng(1).normal(1.5, 0.3, size=(chains, DIM))
    before = wrapped.cost()["gradient_evaluations_per_chain"]
    block = blocks(np.random.default_rng(4), sampler.init(theta0, None), np.full(steps, step_size), 0)
    normals = replay(blocks, 4, steps, chains)[1]
    everything = np.arange(N_DATA)
    for c in range(chains):
        theta = theta0[c]
        for k in range(steps):
            momentum = normals[k, 0, c] - 0.5 * step_size * gradient_on(model.data, everything, theta)
            for j in range(1, passes):
                theta = theta + step_size * momentum
                kick = 0.5 if j == passes - 1 else 1.0
                momentum = momentum - kick * step_size * gradient_on(model.data, everything, theta)
            np.testing.assert_allclose(block.theta[c, k], theta, rtol=1e-9, atol=1e-12)
    gradients = steps * passes
    renewals = gradients * N_DATA if estimator == "svrg" else 0
    assert wrapped.cost()["gradient_evaluations_per_chain"] - before == gradients * 2 * BATCH + renewals
    if estimator == "svrg":
        assert wrapped.calls == gradients
