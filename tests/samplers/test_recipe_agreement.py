"""Each sampler's closed-form Euler step equals the generic recipe step (Ma et al. 2015, Eq. 9 + K1)
for the same random numbers; analytic Γ equals the finite-difference Γ of its D + Q; D and Q are valid."""

import numpy as np
import pytest

from sgmcmc.geometry import RationalMetric
from sgmcmc.recipe import check_recipe, finite_difference_correction, recipe_step
from sgmcmc.samplers import SAMPLERS, make_sampler
from sgmcmc.samplers.hmc import leapfrog
from sgmcmc.state import SamplerState
from sgmcmc.targets import make_target
from tests.helpers import ScriptedNormals

EULER_SAMPLERS = ["sgld", "sgrld", "sghmc", "sgnht", "naive_sgrhmc", "sgrhmc"]
N_CHAINS = 5


def _target(name):
    # Anisotropic diagonal gradient noise, so that B-hat is exercised coordinate by coordinate.
    if name == "correlated_2d":
        return make_target(name, noise_variance=[[4.0, 0.0], [0.0, 1.0]])
    return make_target(name, noise_variance=4.0)


def _sampler(name, target, integrator):
    params = {"integrator": integrator}
    if name in ("sgrld", "sgrhmc", "naive_sgrhmc"):
        params["metric"] = RationalMetric([1.0, 0.25][: target.dim], [1.0, 0.5][: target.dim])
    if name == "sgnht":
        params["diffusion"] = 2.0
    if name == "sghmc":
        params["friction"] = 1.5
    if name == "ccadl":  # synthetic targets know V; the running estimate needs a data target
        params.update(diffusion=2.0, noise_estimate="known")
    return make_sampler(name, target, **params)


def _random_state(sampler, rng):
    d = sampler.target.dim
    state = sampler.init(rng.normal(size=(N_CHAINS, d)), rng)
    if state.xi is not None:
        state = state._replace(xi=rng.normal(size=N_CHAINS))
    return state


def _noise_slot(sampler, state):
    """Where the injected noise enters z: the θ block (first order) or the momentum block."""
    d = sampler.target.dim
    return slice(0, d) if state.momentum is None else slice(d, 2 * d)


@pytest.mark.parametrize("target_name", ["double_well", "correlated_2d"])
@pytest.mark.parametrize("name", EULER_SAMPLERS)
def test_fast_euler_step_equals_generic_recipe_step(name, target_name):
    rng = np.random.default_rng(7)
    target = _target(target_name)
    fast = _sampler(name, target, "euler")
    state = _random_state(fast, rng)
    gradient_noise = rng.normal(size=(N_CHAINS, target.dim))
    injected = rng.normal(size=(N_CHAINS, target.dim))
    step_size = 0.05

    fast_state, _ = fast.step(ScriptedNormals(gradient_noise, injected), state, step_size)

    z = fast.pack(state)
    embedded = np.zeros_like(z)
    embedded[:, _noise_slot(fast, state)] = injected
    generic_z = recipe_step(fast.recipe(), z, step_size, ScriptedNormals(gradient_noise, embedded))
    generic_state = fast.unpack(generic_z)

    for fast_part, generic_part in zip(fast_state, generic_state):
        if fast_part is not None:
            np.testing.assert_allclose(fast_part, generic_part, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("name", EULER_SAMPLERS)
def test_generic_integrator_runs_the_recipe_step(name):
    rng = np.random.default_rng(3)
    target = _target("double_well")
    generic = _sampler(name, target, "generic")
    state = _random_state(generic, rng)
    z = generic.pack(state)
    expected = recipe_step(generic.recipe(), z, 0.05, np.random.default_rng(11))
    new_state, _ = generic.step(np.random.default_rng(11), state, 0.05)
    np.testing.assert_array_equal(generic.pack(new_state), expected)


@pytest.mark.parametrize("name", ["sgnht", "sgrhmc", "hmc", "sghmc", "sgld"])
def test_analytic_gamma_equals_finite_differences(name):
    rng = np.random.default_rng(5)
    target = _target("correlated_2d")
    sampler = _sampler(name, target, None)
    z = sampler.pack(_random_state(sampler, rng))
    recipe = sampler.recipe()
    np.testing.assert_allclose(recipe.correction(z), finite_difference_correction(recipe.diffusion, recipe.curl, z), atol=1e-7)


def test_naive_sgrhmc_declares_gamma_zero_where_the_recipe_has_it_nonzero():
    rng = np.random.default_rng(5)
    target = _target("double_well")
    naive = _sampler("naive_sgrhmc", target, None)
    z = naive.pack(_random_state(naive, rng))
    recipe = naive.recipe()
    true_gamma = finite_difference_correction(recipe.diffusion, recipe.curl, z)
    assert np.all(recipe.correction(z) == 0)
    assert np.max(np.abs(true_gamma)) > 0.05


@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_every_sampler_declares_valid_d_and_q(name):
    rng = np.random.default_rng(2)
    target = _target("correlated_2d")
    sampler = _sampler(name, target, None) if name not in ("hmc", "naive_sghmc") else make_sampler(name, target)
    state = _random_state(sampler, rng)
    check_recipe(sampler.recipe_at(0.05), sampler.pack(state))


@pytest.mark.parametrize("stochastic", [False, True])
def test_leapfrog_is_a_composition_of_generic_recipe_steps(stochastic):
    """HMC's leapfrog = kick(ε/2) ∘ [drift(ε) ∘ kick(ε)]… with the generic step on H = U and H = ½rᵀr
    (D = 0, Q = [[0, −I], [I, 0]]); for naive SGHMC each kick uses the noisy gradient."""
    rng = np.random.default_rng(4)
    target = _target("correlated_2d")
    sampler = make_sampler("naive_sghmc" if stochastic else "hmc", target)
    d, n_steps, step_size = target.dim, 4, 0.1
    theta, momentum = rng.normal(size=(N_CHAINS, d)), rng.normal(size=(N_CHAINS, d))
    noises = [rng.normal(size=(N_CHAINS, d)) for _ in range(n_steps + 1)] if stochastic else []

    scripted = ScriptedNormals(*noises)
    gradient = (lambda x: target.stochastic_gradient(x, scripted)) if stochastic else target.gradient
    expected = leapfrog(theta, momentum, step_size, n_steps, gradient)

    full = sampler.recipe()
    kick = full.__class__(lambda z, r: np.concatenate([full.energy_gradient(z, r)[:, :d], 0 * z[:, d:]], 1), full.diffusion, full.curl, full.correction)
    drift = full.__class__(lambda z, r: np.concatenate([0 * z[:, :d], z[:, d:]], 1), full.diffusion, full.curl, full.correction)
    scripted = ScriptedNormals(*[x for noise in noises for x in (noise,)])
    zeros = np.zeros((N_CHAINS, 2 * d))

    def step(recipe, z, size):
        queue = [scripted.queue.pop(0)] if (stochastic and recipe is kick) else []
        return recipe_step(recipe, z, size, ScriptedNormals(*queue, zeros))

    z = np.concatenate([theta, momentum], axis=1)
    z = step(kick, z, step_size / 2)
    for index in range(n_steps):
        z = step(drift, z, step_size)
        z = step(kick, z, step_size / 2 if index == n_steps - 1 else step_size)
    np.testing.assert_allclose(z[:, :d], expected[0], atol=1e-12)
    np.testing.assert_allclose(z[:, d:], expected[1], atol=1e-12)
