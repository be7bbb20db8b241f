"""pSGLD's integrator on the engine (:func:`sgmcmc.engine.integrators.preconditioned` in the driver's blocks) against
facts written in this file: formulas, paths written out by hand from the blocks' own normals, and the blocks
themselves cut elsewhere. No sampler's numpy step is the reference. The update itself is pinned to the generic recipe
step in ``tests/samplers/test_recipe_agreement.py`` (the stationary preconditioner with Γ, psgld_no_gamma without)
and ``tests/engine/test_driver.py`` (both preconditioners on a data model).

1. The formulas the targets hand the engine: each formula target's ``hessian_diagonal_into`` equals its
   ``hessian_diagonal`` (1e-12), which equals central differences of the target's exact gradient (1e-6: the exact
   values are the right ones).
2. Two consecutive blocks (K1 then K2 steps, the second from the first's state) are one block of K1 + K2 steps from
   the same seed (a block draws its normals step after step), on every formula target, for psgld and
   psgld_no_gamma, both preconditioners, known and zero noise estimates: the same paths and final states (θ, and the
   running average V_t handed from the first block to the second, the driver's carried vector) at 1e-12. Blocks that
   do not carry V_t to the next block fail this; compiled and as Python, the same bits.
3. The clip and a failure mid-block, compiled, against facts: on gaussian_1d with V = 400, the path written out
   here (θ ← θ − εD∇Ũ + εΓ + √(εD(2 − εDV))·n, the variance clipped to 0 where εDV > 2, D and Γ from the formulas
   of sgmcmc/samplers/psgld.py's docstring) with the clipped steps where εDV > 2; the injected covariance refused
   (NOT_PSD) at the step where εDV > 2 first holds; a non-finite state at the step after a step of 10³⁰⁰; the steps
   kept before either are those of a block that long.
4. A target without ∂²U/∂θ_i²: Γ's curvature by central differences, against the path written out with the exact
   Γ; a full V with the clip against the path written out with its Cholesky factors and clipped eigendecompositions.
   Where the engine does not apply, ``engine_blocks()`` is None.
5. The stationary step on a data model is the generic recipe step, D(θ) written out and Γ by the recipe's own
   central differences.
"""

from __future__ import annotations

import dataclasses

import numba
import numpy as np
import pytest

from sgmcmc.engine.blocks import DIVERGED, FAILED
from sgmcmc.engine.driver import COMPILED, PYTHON, block_draws
from sgmcmc.noise import clip_counters
from sgmcmc.recipe import Recipe, recipe_step
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target
from sgmcmc.targets.base import SyntheticTarget, quadratic_gradient_into, quadratic_potential
from sgmcmc.targets.user import user_target
from tests.helpers import ScriptedNormals
from tests.targets.test_row_models import GaussianMeanWithPrior

FORMULA_TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec",
                   "gaussian_mixture_25")
SAMPLERS = ("psgld", "psgld_no_gamma")
PRECONDITIONERS = ("stationary", "running")
FULL_V = [[1.0, 0.3], [0.3, 0.5]]  # a full gradient-noise covariance on the 2D Gaussians (FULL_ESTIMATE)


def _target(name, noise_variance=None):
    if noise_variance is None:
        noise_variance = FULL_V if name.startswith("gaussian_2d") else 1.0
    return make_target(name, noise_variance=noise_variance)


def _assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def _initial_state(sampler, n_chains, seed, average=None):
    """The sampler's initial state; for the running preconditioner, V_0 = ``average`` when given (a resumed run's
    settled average) instead of init's 0."""
    rng = np.random.default_rng(seed)
    state = sampler.init(sampler.target.initial_position(n_chains, rng), rng)
    if average is not None and sampler.preconditioner == "running":
        state = state._replace(preconditioner=np.full_like(state.theta, average))
    return state


def _blocks(sampler, state, step_sizes, split, seed, advance=None, backend=PYTHON):
    """The engine's blocks (``advance``, else the sampler's on ``backend``) from ``state``: ([block [0, split), block
    [split, K) from the first's state], one block [0, K)), each run drawing from its own Generator seeded ``seed``.
    A block of K steps draws its normals step after step, so the two blocks draw the one block's numbers."""
    advance = sampler.engine_blocks(backend) if advance is None else advance
    assert advance is not None
    rng = np.random.default_rng(seed)
    first = advance(rng, state, step_sizes[:split], 0)
    second = advance(rng, first.state, step_sizes[split:], first.stop)
    return [first, second], advance(np.random.default_rng(seed), state, step_sizes, 0)


def _assert_two_blocks_are_one(blocks, whole):
    """The two blocks' paths, concatenated, and the second's final state are the one block's (1e-12)."""
    first, second = blocks
    assert first.status is None and second.status is None and whole.status is None
    assert (first.start, first.stop, second.start, second.stop) == (0, first.stop, first.stop, whole.stop)
    _assert_close(np.concatenate([first.theta, second.theta], axis=1), whole.theta)
    _assert_close(second.state.theta, whole.state.theta)
    if whole.state.preconditioner is None:
        assert first.state.preconditioner is None and second.state.preconditioner is None
    else:
        _assert_close(second.state.preconditioner, whole.state.preconditioner)


def _path_by_hand(sampler, state, step_sizes, normals, variance, clip=False):
    """pSGLD's steps on a formula target with a constant known V (d × d), written out from the block's normals
    (K, 2, c, d) (slot 0 the gradient noise, slot 1 the injected noise) as sgmcmc/samplers/psgld.py's docstring
    states them: ∇Ũ = ∇U + chol(V)·n₀; running: V_t = αV_{t−1} + (1 − α)∇Ũ², D = 1/(λ + √V_t), Γ = 0; stationary:
    v = ∇U² + diag V, D = 1/(λ + √v), Γ_i = −D_ii² ∂_iU ∂²_iiU / √v_i (0 for psgld_no_gamma);
    θ ← θ − εD∇Ũ + εΓ + L·n₁ with LLᵀ = ε(2D − εDVD): L its Cholesky factor, or where it has none (``clip``)
    U diag(√λ⁺) from its eigendecomposition. Returns (path (c, K, d), eigenvalues clipped (c, K), chain-steps
    without a Cholesky factor)."""
    theta, average = state.theta.copy(), state.preconditioner
    variance = np.atleast_2d(variance)
    root = np.linalg.cholesky(variance)
    path, clipped, fallbacks = [], np.zeros((theta.shape[0], len(step_sizes)), dtype=int), 0
    for k, step_size in enumerate(step_sizes):
        exact = sampler.target.gradient(theta)
        gradient = exact + normals[k, 0] @ root.T
        if sampler.preconditioner == "running":
            average = sampler.alpha * average + (1 - sampler.alpha) * gradient**2
            diffusion, correction = 1.0 / (sampler.damping + np.sqrt(average)), 0.0
        else:
            moment = exact**2 + np.diag(variance)
            diffusion = 1.0 / (sampler.damping + np.sqrt(moment))
            correction = (-diffusion**2 * exact * sampler.target.hessian_diagonal(theta) / np.sqrt(moment)
                          if sampler.name == "psgld" else 0.0)
        noise = np.empty_like(theta)
        for chain in range(theta.shape[0]):
            d = diffusion[chain]
            covariance = step_size * (2 * np.diag(d) - step_size * d[:, None] * variance * d[None, :])
            try:
                noise[chain] = np.linalg.cholesky(covariance) @ normals[k, 1, chain]
            except np.linalg.LinAlgError:
                assert clip, "test setup: ε(2D − εDVD) must be positive definite"
                values, vectors = np.linalg.eigh(covariance)
                noise[chain] = vectors @ (np.sqrt(np.maximum(values, 0.0)) * normals[k, 1, chain])
                clipped[chain, k], fallbacks = np.sum(values < 0), fallbacks + 1
        theta = theta - step_size * diffusion * gradient + step_size * correction + noise
        path.append(theta)
    return np.stack(path, axis=1), clipped, fallbacks


# -- 1. the formulas ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("target_name", FORMULA_TARGETS)
def test_engine_formulas_equal_the_targets(target_name):
    target = _target(target_name)
    functions = target.engine_functions()
    hessian_into = numba.njit(functions["hessian_diagonal_into"])  # compiled, as the engine compiles it
    theta = np.random.default_rng(3).normal(scale=1.5, size=(7, target.dim))
    hessian = np.empty_like(theta)
    for i, row in enumerate(theta):
        hessian_into(row, functions["parameters"], hessian[i])
    _assert_close(hessian, target.hessian_diagonal(theta))
    differences = np.empty_like(theta)
    for i in range(target.dim):
        shift = np.zeros_like(theta)
        shift[:, i] = 1e-5
        differences[:, i] = (target.gradient(theta + shift)[:, i] - target.gradient(theta - shift)[:, i]) / 2e-5
    np.testing.assert_allclose(target.hessian_diagonal(theta), differences, rtol=1e-6, atol=1e-6)


# -- 2. two blocks are one block -------------------------------------------------------------------------------------
@pytest.mark.parametrize("noise", ["known", "zero"])
@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("target_name", FORMULA_TARGETS)
def test_two_blocks_are_one_block(target_name, name, preconditioner, noise):
    """Blocks of 17 and 23 steps, the second from the first's state (θ and the running V_t), against one block of 40
    from the same seed: a block that loses or misreads the state it is handed leaves the one block's path."""
    sampler = make_sampler(name, _target(target_name), preconditioner=preconditioner, noise_estimate=noise)
    # known noise with V_0 = 0 would refuse the first step (D = 1/√((1 − α)ĝ²) is large): start from a settled V_t
    state = _initial_state(sampler, n_chains=3, seed=5, average=4.0 if noise == "known" else None)
    blocks, whole = _blocks(sampler, state, np.linspace(0.02, 0.005, 40), split=17, seed=6)
    _assert_two_blocks_are_one(blocks, whole)
    assert whole.stop == 40


def test_blocks_that_drop_the_average_between_blocks_are_not_one_block():
    """The check above can fail: blocks whose final state keeps the V_t they started from. Their first block is the
    one block's first 17 steps; their second leaves its path by far more than 1e-12."""
    sampler = make_sampler("psgld", _target("double_well"), preconditioner="running", noise_estimate="zero")
    state = _initial_state(sampler, n_chains=3, seed=5)
    blocks = sampler.engine_blocks(PYTHON)

    def forgetful(rng, state, step_sizes, start):
        block = blocks(rng, state, step_sizes, start)
        return dataclasses.replace(block, state=block.state._replace(preconditioner=state.preconditioner))

    (first, second), whole = _blocks(sampler, state, np.full(40, 0.01), split=17, seed=6, advance=forgetful)
    _assert_close(first.theta, whole.theta[:, :17])
    assert np.max(np.abs(second.theta - whole.theta[:, 17:])) > 1e-4
    with pytest.raises(AssertionError):
        _assert_two_blocks_are_one((first, second), whole)


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
def test_the_clip_is_the_path_written_out(preconditioner):
    """gaussian_1d (∇U = θ) with V = 400, the settled V_t = 400 (running), D ≈ 1/20: εDV > 2 at ε = 0.3, not at
    ε = 0.05. Compiled, two blocks (11 then 19 steps) of alternating 0.05 and 0.3: the injected variance clipped to 0
    and counted at every step of 0.3 in every chain and at no other, and the path is :func:`_path_by_hand`'s with the
    clip, on the blocks' own normals (the Generator's (K, 2, c, 1), drawn in one call for a density model)."""
    sampler = make_sampler("psgld", _target("gaussian_1d", 400.0), preconditioner=preconditioner,
                           noise_estimate="known", noise_clip=True)
    state = _initial_state(sampler, n_chains=4, seed=1, average=400.0)
    steps = np.tile([0.05, 0.3], 15)
    (first, second), _ = _blocks(sampler, state, steps, split=11, seed=2, backend=COMPILED)
    assert first.status is None and second.status is None
    clipped = np.concatenate([first.clipped, second.clipped], axis=1)
    np.testing.assert_array_equal(clipped, np.tile([0, 1], (4, 15)))
    normals = np.random.default_rng(2).standard_normal((30, 2, 4, 1))
    path, by_hand, _ = _path_by_hand(sampler, state, steps, normals, 400.0, clip=True)
    np.testing.assert_array_equal(by_hand, clipped)
    _assert_close(np.concatenate([first.theta, second.theta], axis=1), path)


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("name", SAMPLERS)
def test_a_covariance_that_is_not_psd_fails_at_its_first_step_keeping_the_steps_before(name, preconditioner):
    """ε = 0.5 against V = 400 after seven steps of 0.01 (D ≈ 1/20: εDV ≈ 10 > 2, against 0.2): compiled, two blocks
    (4 steps, then 8) from the settled V_t = 400; the second fails at step 8 (status failed, the message naming it)
    and keeps its three steps and the state after step 7 (θ and the running V_t handed to it by the first block),
    those of a block of the first seven steps from the same seed."""
    sampler = make_sampler(name, _target("gaussian_1d", 400.0), preconditioner=preconditioner, noise_estimate="known")
    state = _initial_state(sampler, n_chains=3, seed=4, average=400.0)
    steps = np.concatenate([np.full(7, 0.01), np.full(5, 0.5)])
    (first, second), _ = _blocks(sampler, state, steps, split=4, seed=8, backend=COMPILED)
    seven = sampler.engine_blocks(COMPILED)(np.random.default_rng(8), state, steps[:7], 0)
    assert first.status is None and seven.status is None
    assert second.status == FAILED and second.stop == 7 and second.error.startswith("step 8:")
    _assert_close(np.concatenate([first.theta, second.theta], axis=1), seven.theta)
    _assert_close(second.state.theta, seven.state.theta)
    if preconditioner == "running":
        _assert_close(second.state.preconditioner, seven.state.preconditioner)


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
@pytest.mark.parametrize("name", SAMPLERS)
def test_a_divergence_ends_the_block_at_its_step_keeping_the_finite_steps(name, preconditioner):
    """The double well (∇U = 4θ³ − 4θ): the sixth step, of 10^300, throws θ to about 10^300 (D∇Ũ is bounded); the
    next gradient overflows and the state is not finite. Compiled, two blocks (3 steps, then 9): the second stops
    at step 7 (stop 6) in all 4 chains and keeps the steps before it and the state after step 6, those of a block of
    the first six steps from the same seed."""
    sampler = make_sampler(name, _target("double_well"), preconditioner=preconditioner, noise_estimate="zero")
    state = _initial_state(sampler, n_chains=4, seed=2)
    steps = np.concatenate([np.full(5, 0.01), [1e300], np.full(6, 0.01)])
    (first, second), _ = _blocks(sampler, state, steps, split=3, seed=3, backend=COMPILED)
    six = sampler.engine_blocks(COMPILED)(np.random.default_rng(3), state, steps[:6], 0)
    assert first.status is None and six.status is None and np.all(np.isfinite(six.theta))
    assert np.all(np.abs(six.theta[:, -1]) > 1e290)
    assert second.status == DIVERGED and second.stop == 6
    assert second.error == "non-finite state at step 7 in 4 of 4 chains"
    _assert_close(np.concatenate([first.theta, second.theta], axis=1), six.theta)
    _assert_close(second.state.theta, six.state.theta)
    if preconditioner == "running":
        _assert_close(second.state.preconditioner, six.state.preconditioner)


def test_an_overflowing_running_average_counts_its_chain_in_the_message():
    """θ₀ = 10⁵² in one chain of three: its gradient² overflows V_t (θ stays finite, D = 0), and the block stops at
    step 1 naming that one chain (the numpy path once counted only θ, r and ξ: "in 0 of 3 chains")."""
    sampler = make_sampler("psgld", _target("double_well"), preconditioner="running", noise_estimate="zero")
    state = sampler.init(np.array([[0.5], [1e52], [0.3]]), np.random.default_rng(0))
    compiled = sampler.engine_blocks(COMPILED)(np.random.default_rng(1), state, np.full(3, 0.01), 0)
    assert compiled.status == DIVERGED
    assert compiled.error == "non-finite state at step 1 in 1 of 3 chains"


# -- 4. where the engine does not run ---------------------------------------------------------------------------------
class _NoOwnHessian(SyntheticTarget):
    """A formula target that hands the engine no ∂²U/∂θ_i² (its Hessian diagonal is the base class's central
    differences)."""

    name, dim = "no_own_hessian", 1

    def potential(self, theta):
        return 0.5 * theta[:, 0] ** 2

    def gradient(self, theta):
        return np.array(theta, dtype=float)

    def engine_functions(self):
        return self.density_functions(quadratic_gradient_into, quadratic_potential, [0.0, 1.0])


class _ExactHessian(_NoOwnHessian):
    """U = θ²/2's exact ∂²U/∂θ² = 1, for the path written out."""

    def hessian_diagonal(self, theta):
        return np.ones_like(theta)


@pytest.mark.parametrize("name", SAMPLERS)
def test_a_curvature_by_central_differences_is_the_exact_curvatures_path(name):
    """A density model that hands over no ∂²U/∂θ_i²: Γ's curvature by central differences of its ∇U
    (:func:`sgmcmc.engine.estimators.differenced_stationary`, psgld; psgld_no_gamma reads none). Its 40 steps in two
    blocks are :func:`_path_by_hand` with U = θ²/2's exact ∂²U/∂θ² = 1 (10⁻⁸: the differences' rounding)."""
    sampler = make_sampler(name, _NoOwnHessian(noise_variance=1.0), noise_estimate="known")
    blocks = sampler.engine_blocks(PYTHON)
    assert (blocks.parameters[6].python.__name__ == "differenced_stationary") == (name == "psgld")
    state, steps = _initial_state(sampler, n_chains=3, seed=5), np.linspace(0.02, 0.005, 40)
    (first, second), _ = _blocks(sampler, state, steps, split=17, seed=6)
    exact = make_sampler(name, _ExactHessian(noise_variance=1.0), noise_estimate="known")
    path, _, _ = _path_by_hand(exact, state, steps, np.random.default_rng(6).standard_normal((40, 2, 3, 1)), 1.0)
    np.testing.assert_allclose(np.concatenate([first.theta, second.theta], axis=1), path, rtol=1e-8, atol=1e-10)


def test_no_engine_blocks_where_they_do_not_apply():
    assert make_sampler("psgld", make_target("double_well")).engine_blocks(PYTHON) is not None
    # the generic recipe step (a full V̂ with the clip runs on the engine: the next test)
    assert make_sampler("psgld", make_target("double_well"), integrator="generic").engine_blocks(PYTHON) is None
    # a data target on rows: both preconditioners (the stationary one's D over all the rows at every step)
    for preconditioner in PRECONDITIONERS:
        data = make_sampler("psgld", make_target("normal_gamma"), preconditioner=preconditioner, noise_estimate="zero")
        assert data.engine_blocks(PYTHON) is not None


def test_a_full_estimate_with_the_clip_is_the_path_written_out():
    """A full V = 400·FULL_V with the clip, ε = 0.4 … 0.02: some steps have a Cholesky factor of ε(2D − εDVD), the
    others are eigendecomposed with an eigenvalue clipped (sgmcmc.noise.clipped_gaussian's draw). The block's path
    and clipped counts are :func:`_path_by_hand`'s on its normals, and the clip counters count every chain-step's
    draw and, as eigendecomposed, the chain-steps without a Cholesky factor there."""
    variance = 400 * np.array(FULL_V)
    sampler = make_sampler("psgld", _target("gaussian_2d_cov", variance), noise_clip=True)
    state, steps = _initial_state(sampler, n_chains=3, seed=5), np.linspace(0.4, 0.02, 30)
    before = clip_counters.snapshot()
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(6), state, steps, 0)
    draws, fallbacks = np.subtract(clip_counters.snapshot(), before)
    path, clipped, by_hand = _path_by_hand(sampler, state, steps, np.random.default_rng(6).standard_normal(
        (30, 2, 3, 2)), variance, clip=True)
    assert 0 < by_hand < 90 and clipped.sum() > 0
    assert (draws, fallbacks) == (90, by_hand)
    np.testing.assert_array_equal(block.clipped, clipped)
    _assert_close(block.theta, path)


@pytest.mark.parametrize("preconditioner", PRECONDITIONERS)
def test_the_compiled_block_is_the_python_source(preconditioner):
    """Two blocks compiled and as Python on the same random numbers: the same bits."""
    sampler = make_sampler("psgld", _target("double_well"), preconditioner=preconditioner)
    state = _initial_state(sampler, n_chains=3, seed=5, average=4.0)
    steps = np.linspace(0.02, 0.005, 40)
    compiled, _ = _blocks(sampler, state, steps, split=17, seed=6, backend=COMPILED)
    python, _ = _blocks(sampler, state, steps, split=17, seed=6, backend=PYTHON)
    for mine, theirs in zip(compiled, python):
        np.testing.assert_array_equal(mine.theta, theirs.theta)
        if preconditioner == "running":
            np.testing.assert_array_equal(mine.state.preconditioner, theirs.state.preconditioner)


# -- 5. the stationary step on a data model is the generic recipe step ------------------------------------------------
@pytest.mark.parametrize("name", SAMPLERS)
def test_the_stationary_step_on_a_data_model_is_the_generic_recipe_step(name):
    """A user's row model, x_i ~ N(θ, I) with the prior N(0, 4I) (N = 40, d = 2, minibatches of 10), written out here:
    ∇Ũ = −(N/n) Σ_{i∈S̃} (x_i − θ) + θ/4 on the block's own minibatch, ∇U the same over all rows, V = c·diag S²
    (S² the rows' covariance, c = N(N − n)/n), D(θ) = 1/(λ + √(∇U² + V)). One block step of each chain is the generic
    recipe step (Ma et al. 2015 Eq. 9 + K1, z = θ, Q = 0, B̂ = 0) on the block's injected normals, with Γ = ∂_i D_ii
    by the recipe's own central differences of this D (psgld), or Γ = 0 (psgld_no_gamma). Γ moves θ by about 10⁻³
    here (psgld_no_gamma's step against the recipe with Γ), five orders of magnitude above the tolerance."""
    model = GaussianMeanWithPrior(n_data=40, dim=2)
    target = user_target(model, "GaussianMeanWithPrior", batch_size=10)
    sampler = make_sampler(name, target, noise_estimate="zero", damping=0.1)
    start = sampler.init(np.random.default_rng(0).normal(1.0, 0.3, size=(4, 2)), np.random.default_rng(1))
    step_size = 0.01
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(3), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, 4, 2, n_data=40, batch_size=10,
                                   first_slot=1)  # pSGLD on a data model: no gradient-noise slot
    data, scale = model.data, 40 * 30 / 10
    gradient = np.array([-(40 / 10) * np.sum(data[r] - t, axis=0) + t / 4.0 for t, r in zip(start.theta, rows[0])])

    def diffusion_diagonal(theta):
        exact = -np.sum(data[None] - theta[:, None], axis=1) + theta / 4.0
        return 1.0 / (0.1 + np.sqrt(exact**2 + scale * np.var(data, axis=0, ddof=1)))

    recipe = Recipe(lambda z, rng: gradient, lambda z: np.stack([np.diag(row) for row in diffusion_diagonal(z)]),
                    lambda z: np.zeros((z.shape[0], 2, 2)),
                    correction=None if name == "psgld" else (lambda z: np.zeros_like(z)))
    expected = recipe_step(recipe, start.theta, step_size, ScriptedNormals(normals[0, 1]))
    np.testing.assert_allclose(block.theta[:, 0], expected, rtol=1e-8, atol=1e-10)
    assert np.max(np.abs(block.theta[:, 0] - start.theta)) > 1e-3
