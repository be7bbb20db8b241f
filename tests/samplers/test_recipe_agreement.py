"""Each recipe sampler's step (the ``generic`` integrator, and the closed-form ``euler`` one on the engine's blocks,
their source run as Python) equals an independent, hand-written generic recipe step: Ma et al. (2015) Eq. 9 with the sign of Γ corrected (SPEC §0 K1, §1),

    z' = z − ε(D + Q)(z)∇H̃(z) + εΓ(z) + N(0, ε(2D(z) − εB̂(z))),   Γ_i = Σ_j ∂_{z_j}(D_ij + Q_ij)   (Eq. 3),

for the same random numbers. The truth takes only H, D and Q from the sampler (``recipe_at``) and computes the rest
itself, with neither the sampler's Γ nor anything from ``sgmcmc.recipe``: ∇H and Γ by central differences of H and
of D + Q, ∇H̃ = ∇H + N(0, V) in the θ block with the V the test sets, B̂ = (D + Q)V(D + Q)ᵀ (SPEC §4.3), the
symmetric square root of the noise covariance. The cases include θ-dependent metrics (SGRLD, gSGRHMC) and the
thermostat ξ (SGNHT, CCAdL), whose Γ ≠ 0 is asserted, so a missing or sign-flipped Γ fails; naive SGRHMC (Eq. 16)
equals the truth only with Γ dropped. The momentum samplers' ``splitting`` and ``theta_first`` orders on the engine
are the truth's rows taken in turn, and SGHMC + MH's Algorithm 2 too, before its Metropolis–Hastings test on the
exact energy (HMC's as well); their ``aboba`` order is the exact position flow (an ODE solve) around the recipe's
kicks and exact friction. Also: every sampler's D and Q are valid (Thm. 1), and HMC's leapfrog on the engine is a
composition of generic recipe steps (Eq. 10).

Every sampler of the registry (``SAMPLERS``, read when the tests are collected) is checked by
:func:`check_recipe_agreement` at its defaults, so a sampler added with ``register_sampler`` is covered without
being listed here; :data:`VARIANTS` adds the metrics and settings where Γ ≠ 0 is asserted."""

from types import SimpleNamespace
from typing import NamedTuple, Optional

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from sgmcmc.engine.driver import PYTHON, block_draws
from sgmcmc.geometry import ExpandedMeanMetric, RationalMetric
from sgmcmc.recipe import check_recipe, recipe_step
from sgmcmc.samplers import SAMPLERS, make_sampler
from sgmcmc.targets import make_target
from sgmcmc.targets.base import SyntheticTarget
from tests.helpers import ScriptedNormals

N_CHAINS = 5
STEP_SIZE = 0.05
NOISE = {"correlated_2d": np.diag([4.0, 1.0]), "gamma_2d": np.diag([1.0, 0.5])}  # V of ∇Ũ = ∇U + N(0, V)


class Gamma2D(SyntheticTarget):
    """Two independent Gamma(5, 1) coordinates on θ > 0, U = Σ_i θ_i − 4 log θ_i: a positive target for the
    expanded-mean metric G⁻¹ = cθ (SPEC T10)."""

    name, dim = "gamma_2d", 2

    def potential(self, theta):
        return np.sum(theta - 4.0 * np.log(theta), axis=1)

    def gradient(self, theta):
        return 1.0 - 4.0 / theta

    def engine_functions(self):
        return self.density_functions(gamma_gradient_into, gamma_potential)


def gamma_gradient_into(theta, parameters, out):
    """:meth:`Gamma2D.gradient` of one chain, for the engine."""
    for j in range(theta.shape[0]):
        out[j] = 1.0 - 4.0 / theta[j]


def gamma_potential(theta, parameters):
    """:meth:`Gamma2D.potential` of one chain."""
    return np.sum(theta - 4.0 * np.log(theta))


class Case(NamedTuple):
    sampler: str
    target: str
    params: dict
    has_gamma: Optional[bool]  # Γ ≢ 0 at the test states (asserted; None: not)


# Samplers whose declared recipe drops Γ on purpose, so that their step equals the truth without it: naive SGRHMC
# (Ma et al. 2015, Eq. 16), shown wrong in test_naive_sgrhmc_is_the_recipe_step_without_gamma.
WITHOUT_GAMMA = {"naive_sgrhmc", "psgld_no_gamma"}  # and pSGLD as Li et al. (2016) publish it
STEP_INTEGRATORS = ("generic", "euler")  # the generic recipe step on the sampler's D, Q, and the closed-form Euler step

# Settings beyond a sampler's defaults, with Γ ≢ 0 asserted where the metric or the thermostat makes it so
VARIANTS = {
    "sghmc-friction": Case("sghmc", "correlated_2d", {"friction": 1.5}, False),
    "sgrld-rational": Case("sgrld", "correlated_2d", {"metric": RationalMetric([1.0, 0.25], [1.0, 0.5])}, True),
    "sgrld-expanded_mean": Case("sgrld", "gamma_2d", {"metric": ExpandedMeanMetric(2.0)}, True),
    "sgrhmc-rational": Case("sgrhmc", "correlated_2d", {"metric": RationalMetric([1.0, 0.25], [1.0, 0.5])}, True),
    "sgrhmc-expanded_mean": Case("sgrhmc", "gamma_2d", {"metric": ExpandedMeanMetric(2.0)}, True),
    "sgnht-diffusion": Case("sgnht", "correlated_2d", {"diffusion": 2.0}, True),
    "ccadl-diffusion": Case("ccadl", "correlated_2d", {"diffusion": 2.0, "noise_estimate": "known"}, True),
    "psgld-stationary": Case("psgld", "correlated_2d", {"noise_estimate": "known"}, True),
}


def default_case(name: str) -> Case:
    """The registered sampler ``name`` at its defaults on correlated_2d, with the target's known V where it declares a
    noise estimate (a running one needs a data target); Γ not asserted either way."""
    params = {"noise_estimate": "known"} if "noise_estimate" in SAMPLERS[name].config_keys() else {}
    return Case(name, "correlated_2d", params, None)


def step_integrators(name: str) -> tuple[str, ...]:
    """The integrators of ``name`` that are recipe steps (:data:`STEP_INTEGRATORS`); none for HMC, naive SGHMC and
    SGHMC + MH, whose trajectories and MH tests are not (HMC's leapfrog: the last test of this module)."""
    return tuple(integrator for integrator in STEP_INTEGRATORS if integrator in SAMPLERS[name].integrators)


def _setup(case, integrator, seed=7):
    """The sampler and a random state: θ (positive on gamma_2d), r ~ N(0, I), ξ ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    if case.target == "gamma_2d":
        target, theta = Gamma2D(noise_variance=NOISE["gamma_2d"]), rng.uniform(0.5, 3.0, (N_CHAINS, 2))
    else:
        target, theta = make_target(case.target, noise_variance=NOISE[case.target]), rng.normal(size=(N_CHAINS, 2))
    sampler = make_sampler(case.sampler, target, integrator=integrator, **case.params)
    state = sampler.init(theta, rng)
    if state.xi is not None:
        state = state._replace(xi=rng.normal(size=N_CHAINS))
    return sampler, state, rng


def _central_differences(field, z, spacing=1e-5):
    """∂field(z)/∂z_j for every j, stacked on a last axis: (n, …, dim_z)."""
    shifts = spacing * np.eye(z.shape[1])
    return np.stack([(field(z + shift) - field(z - shift)) / (2 * spacing) for shift in shifts], axis=-1)


def _gamma(recipe, z):
    """Γ_i = Σ_j ∂_{z_j}(D_ij + Q_ij) (Ma et al. 2015, Eq. 3), by central differences of the sampler's D + Q."""
    return np.einsum("nijj->ni", _central_differences(lambda x: recipe.diffusion(x) + recipe.curl(x), z))


def reference_step(recipe, z, step_size, variance, gradient_normal, injected_normal, with_gamma=True):
    """Ma et al. (2015) Eq. 9 with +εΓ (SPEC §0 K1), written out with numpy; the θ block of ∇H̃ gets
    N(0, V) = gradient_normal·chol(V)ᵀ, and the injected noise is √(ε(2D − εB̂))·injected_normal."""
    d = variance.shape[0]
    gradient = _central_differences(recipe.energy, z)
    gradient[:, :d] += gradient_normal @ np.linalg.cholesky(variance).T
    transfer = recipe.diffusion(z) + recipe.curl(z)
    gamma = _gamma(recipe, z) if with_gamma else 0.0
    gradient_noise = np.zeros(transfer.shape)
    gradient_noise[:, :d, :d] = variance
    b_hat = transfer @ gradient_noise @ np.swapaxes(transfer, 1, 2)  # covariance of (D + Q)·(∇H̃ − ∇H)
    eigenvalues, eigenvectors = np.linalg.eigh(step_size * (2 * recipe.diffusion(z) - step_size * b_hat))
    assert eigenvalues.min() > -1e-12, "test setup: ε(2D − εB̂) must be PSD"
    root = eigenvectors @ (np.sqrt(np.clip(eigenvalues, 0, None))[:, :, None] * np.swapaxes(eigenvectors, 1, 2))
    drift = -np.einsum("nij,nj->ni", transfer, gradient) + gamma
    return z + step_size * drift + np.einsum("nij,nj->ni", root, injected_normal)


def _compare(case, integrator, with_gamma=True):
    """(sampler's new z, reference z, Γ by differences) for one step from a random state, same normals."""
    sampler, state, rng = _setup(case, integrator)
    d = sampler.target.dim
    z = sampler.pack(state)
    gradient_normal, injected = rng.normal(size=(N_CHAINS, d)), rng.normal(size=z.shape)
    recipe = sampler.recipe_at(STEP_SIZE)
    expected = reference_step(recipe, z, STEP_SIZE, NOISE[case.target], gradient_normal, injected, with_gamma)
    slot = slice(0, d) if state.momentum is None else slice(d, 2 * d)
    blocks = None if integrator == "generic" else sampler.engine_blocks(PYTHON)
    assert integrator == "generic" or blocks is not None, f"{case}: {integrator} has no engine blocks"
    if integrator == "generic":  # the generic recipe step (sgmcmc.recipe.recipe_step), noise for all of z
        new_state, _ = sampler.step(ScriptedNormals(gradient_normal, injected), state, STEP_SIZE)
    else:  # the engine's blocks, their source as Python: a step's normals (1, slots, c, d), the gradient's, then the
        # injected noise's for the block that receives it (θ, or r)
        normals = ScriptedNormals(np.stack([gradient_normal, injected[:, slot]])[None])
        new_state = blocks(normals, state, np.array([STEP_SIZE]), 0).state
    return sampler.pack(new_state), expected, _gamma(recipe, z)


def check_recipe_agreement(name: str) -> tuple[str, ...]:
    """The checks of this module on the registered sampler ``name`` at its defaults (:func:`default_case`): its D and
    Q are valid (Thm. 1), and each of its recipe-step integrators (:func:`step_integrators`) makes the same step as
    :func:`reference_step` for the same random numbers (with Γ by differences of D + Q; without Γ for
    :data:`WITHOUT_GAMMA`). Raises AssertionError (or the recipe's own error) if not; returns the integrators
    compared."""
    case = default_case(name)
    rng = np.random.default_rng(2)
    sampler = make_sampler(name, make_target(case.target, noise_variance=NOISE[case.target]), **case.params)
    check_recipe(sampler.recipe_at(STEP_SIZE), sampler.pack(sampler.init(rng.normal(size=(N_CHAINS, 2)), rng)))
    integrators = step_integrators(name)
    for integrator in integrators:
        actual, expected, _ = _compare(case, integrator, with_gamma=name not in WITHOUT_GAMMA)
        np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8, err_msg=f"{name}, integrator {integrator}")
    return integrators


# the optimisers (SGD, SGD with momentum) are no recipe samplers: tests/samplers/test_optimisers.py pins each to its
# sampler's step without the noise
@pytest.mark.parametrize("name", sorted(name for name, cls in SAMPLERS.items() if cls.kind == "sampler"))
def test_registered_sampler_agrees_with_the_recipe(name):
    check_recipe_agreement(name)


def test_every_built_in_euler_step_runs_on_the_engine():
    """The Euler steps compared above are the engine's blocks for every built-in sampler and variant (a sampler added
    without them is compared on its own step)."""
    cases = [default_case(name) for name, cls in SAMPLERS.items() if cls.kind == "sampler" and "euler" in
             step_integrators(name)] + list(VARIANTS.values())
    for case in cases:
        sampler, _, _ = _setup(case, "euler")
        assert sampler.engine_blocks(PYTHON) is not None, case


@pytest.mark.parametrize("integrator", STEP_INTEGRATORS)
@pytest.mark.parametrize("case", VARIANTS)
def test_step_equals_hand_written_recipe_step(case, integrator):
    actual, expected, gamma = _compare(VARIANTS[case], integrator)
    largest = np.max(np.abs(gamma))
    assert largest > 0.1 if VARIANTS[case].has_gamma else largest < 1e-8, largest
    np.testing.assert_allclose(actual, expected, rtol=1e-6, atol=1e-8)


# The momentum samplers' other orders (SPEC §4.1) as the hand-written step's rows in turn, each move on the state the
# last one left: ``splitting`` the r rows at (θ, r, ξ) with the injected noise, then the θ and ξ rows at (θ, r', ξ);
# ``theta_first`` the θ rows, then the r rows at (θ*, r, ξ) (∇Ũ taken at θ*) with the injected noise, then the ξ rows
MOVES = {"splitting": (("momentum", True), ("position and thermostat", False)),
         "theta_first": (("position", False), ("momentum", True), ("thermostat", False))}
ORDER_CASES = {f"{case}-{order}": (VARIANTS.get(case) or default_case(case), order)
               for case in ("sghmc", "sgnht", "naive_sgrhmc", "sgrhmc", "ccadl", "sghmc-friction", "sgrhmc-rational",
                            "sgrhmc-expanded_mean", "sgnht-diffusion", "ccadl-diffusion")
               for order in MOVES if order in SAMPLERS[case.split("-")[0]].integrators}


@pytest.mark.parametrize("case", ORDER_CASES)
def test_a_split_order_is_the_hand_written_steps_rows_in_turn(case):
    """Each sampler's blocks in its ``splitting`` and ``theta_first`` orders (the engine's source as Python) against
    :func:`reference_step`'s rows taken in turn (:data:`MOVES`), on the same random numbers."""
    case, order = ORDER_CASES[case]
    sampler, state, rng = _setup(case, order)
    d = sampler.target.dim
    z = sampler.pack(state)
    rows = {"position": np.arange(d), "momentum": np.arange(d, 2 * d), "thermostat": np.arange(2 * d, z.shape[1])}
    rows["position and thermostat"] = np.concatenate([rows["position"], rows["thermostat"]])
    gradient_normal, injected = rng.normal(size=(N_CHAINS, d)), rng.normal(size=(N_CHAINS, d))
    recipe = sampler.recipe_at(STEP_SIZE)
    expected = z.copy()
    for move, injects in MOVES[order]:
        noise = np.zeros_like(z)
        if injects:
            noise[:, rows["momentum"]] = injected
        moved = reference_step(recipe, expected, STEP_SIZE, NOISE[case.target], gradient_normal, noise,
                               with_gamma=case.sampler not in WITHOUT_GAMMA)
        expected[:, rows[move]] = moved[:, rows[move]]
    normals = ScriptedNormals(np.stack([gradient_normal, injected])[None])
    new_state = sampler.engine_blocks(PYTHON)(normals, state, np.array([STEP_SIZE]), 0).state
    np.testing.assert_allclose(sampler.pack(new_state), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("integrator", ["generic", "euler"])
@pytest.mark.parametrize("metric", ["rational", "expanded_mean"])
def test_naive_sgrhmc_is_the_recipe_step_without_gamma(metric, integrator):
    """Naive SGRHMC (Ma et al. 2015, Eq. 16) drops Γ: it matches the truth with Γ left out and misses the
    full truth by εΓ (a permanent check that the comparison sees Γ)."""
    case = VARIANTS[f"sgrhmc-{metric}"]._replace(sampler="naive_sgrhmc")
    actual, without_gamma, _ = _compare(case, integrator, with_gamma=False)
    np.testing.assert_allclose(actual, without_gamma, rtol=1e-6, atol=1e-8)
    _, with_gamma, gamma = _compare(case, integrator)
    np.testing.assert_allclose(with_gamma - actual, STEP_SIZE * gamma, atol=1e-8)
    assert np.max(np.abs(gamma)) > 0.1


@pytest.mark.parametrize("stochastic", [False, True])
def test_leapfrog_is_a_composition_of_generic_recipe_steps(stochastic):
    """HMC's leapfrog on the engine (its blocks as Python, without the test) = kick(ε/2) ∘ [drift(ε) ∘ kick(ε)]… with
    the generic step on H = U and H = ½rᵀr (D = 0, Q = [[0, −I], [I, 0]]), from r₀ = the step's slot 0; for naive
    SGHMC each kick uses the noisy gradient with the next slot's noise."""
    rng = np.random.default_rng(4)
    target = make_target("correlated_2d", noise_variance=NOISE["correlated_2d"])
    d, n_steps, step_size = target.dim, 4, 0.1
    sampler = make_sampler("naive_sghmc" if stochastic else "hmc", target, n_leapfrog=n_steps, metropolis=False)
    theta = rng.normal(size=(N_CHAINS, d))
    slots = [rng.normal(size=(N_CHAINS, d)) for _ in range(1 + (n_steps + 1 if stochastic else 0))]
    state = sampler.init(theta, rng)
    block = sampler.engine_blocks(PYTHON)(ScriptedNormals(np.stack(slots)[None]), state, np.array([step_size]), 0)

    full = sampler.recipe()
    kick = full.__class__(lambda z, r: np.concatenate([full.energy_gradient(z, r)[:, :d], 0 * z[:, d:]], 1), full.diffusion, full.curl, full.correction)
    drift = full.__class__(lambda z, r: np.concatenate([0 * z[:, :d], z[:, d:]], 1), full.diffusion, full.curl, full.correction)
    scripted = ScriptedNormals(*slots[1:])
    zeros = np.zeros((N_CHAINS, 2 * d))

    def step(recipe, z, size):
        queue = [scripted.queue.pop(0)] if (stochastic and recipe is kick) else []
        return recipe_step(recipe, z, size, ScriptedNormals(*queue, zeros))

    z = np.concatenate([theta, slots[0]], axis=1)
    z = step(kick, z, step_size / 2)
    for index in range(n_steps):
        z = step(drift, z, step_size)
        z = step(kick, z, step_size / 2 if index == n_steps - 1 else step_size)
    np.testing.assert_allclose(block.theta[:, 0], z[:, :d], atol=1e-12)
    np.testing.assert_allclose(block.momentum[:, 0], z[:, d:], atol=1e-12)


@pytest.mark.parametrize("name", ["hmc", "sghmc_mh"])
def test_a_trajectory_with_its_test_is_the_hand_written_steps_then_the_test_on_the_exact_energy(name):
    """HMC (leapfrog, exact ∇U) and SGHMC + MH (Chen et al. 2014 Algorithm 2: m × (θ rows, then r rows of the
    hand-written step with the friction C and B̂ = V, each with its own gradient noise and injected noise)) on the
    engine (their blocks as Python), then the Metropolis–Hastings test on the exact H = U + ½rᵀr with the step's
    uniform (SPEC §0 K4), on the block's own draws: the acceptance probabilities, and each chain at its proposal or
    back at its start."""
    target = make_target("correlated_2d", noise_variance=NOISE["correlated_2d"])
    d, n_steps, step_size = target.dim, 3, 0.3
    params = {"friction": 1.5, "noise_estimate": "known"} if name == "sghmc_mh" else {}
    sampler = make_sampler(name, target, n_leapfrog=n_steps, **params)
    rng = np.random.default_rng(9)
    state = sampler.init(rng.normal(size=(N_CHAINS, d)), rng)
    blocks = sampler.engine_blocks(PYTHON)
    block = blocks(np.random.default_rng(4), state, np.array([step_size]), 0)
    _, normals, uniforms = block_draws(np.random.default_rng(4), 1, N_CHAINS, d, blocks.slots, uniforms=True)
    normals, uniforms = normals[0], uniforms[0]  # (slots, c, d), (c,)
    recipe = sampler.recipe_at(step_size)
    z = np.concatenate([state.theta, normals[0]], axis=1)
    start = z.copy()
    position, momentum = np.arange(d), np.arange(d, 2 * d)
    if name == "sghmc_mh":
        variance = NOISE["correlated_2d"]
        for inner in range(n_steps):
            moved = reference_step(recipe, z, step_size, variance, normals[1 + 2 * inner], np.zeros_like(z))
            z[:, position] = moved[:, position]
            injected = np.zeros_like(z)
            injected[:, momentum] = normals[2 + 2 * inner]
            moved = reference_step(recipe, z, step_size, variance, normals[1 + 2 * inner], injected)
            z[:, momentum] = moved[:, momentum]
    else:
        for inner in range(n_steps + 1):
            if inner:
                z[:, position] += step_size * z[:, momentum]
            kick = 0.5 if inner in (0, n_steps) else 1.0
            z[:, momentum] -= kick * step_size * _central_differences(recipe.energy, z)[:, position]
    accept = np.exp(np.minimum(recipe.energy(start) - recipe.energy(z), 0.0))
    np.testing.assert_allclose(block.accept_probability[:, 0], accept, rtol=1e-7)
    rejected = ~(uniforms < accept)
    assert 0 < rejected.sum() < N_CHAINS, (accept, uniforms)
    z[rejected] = start[rejected]
    np.testing.assert_allclose(sampler.pack(block.state)[:, :2 * d], z, rtol=1e-6, atol=1e-8)


# ABOBA subtracts no V̂ (noise_estimate zero); the gradient noise is still there
ABOBA_CASES = {name: case._replace(params={**case.params, "noise_estimate": "zero"}) for name, case in {
    "sghmc": default_case("sghmc"), "sgrhmc-rational": VARIANTS["sgrhmc-rational"],
    "naive_sgrhmc-rational": VARIANTS["sgrhmc-rational"]._replace(sampler="naive_sgrhmc")}.items()}


@pytest.mark.parametrize("case", ABOBA_CASES)
def test_an_aboba_step_is_the_exact_flows_around_the_recipes_kicks_and_friction(case):
    """The momentum samplers' ``aboba`` order (Leimkuhler & Matthews; ``sgmcmc/samplers/momentum_recipe.py``) on the
    engine, from the sampler's H, D and Q alone: A the position flow θ̇ = S(θ)r at fixed r for ε/2 (S = Q's θ–r
    block), solved here by scipy's ODE solver; B r + (ε/2)(−S∇Ũ + γ) at θ_h with ∇U by differences of H plus the
    gradient noise, γ the r rows of Γ of D + Q without friction (dropped by naive SGRHMC); O the exact friction
    F = D's r block at θ_h, r₂ = e^{−εF} r₁ + √(1 − e^{−2εF}) z, with the injected normals."""
    case = ABOBA_CASES[case]
    sampler, state, rng = _setup(case, "aboba")
    d = sampler.target.dim
    gradient_normal, injected = rng.normal(size=(N_CHAINS, d)), rng.normal(size=(N_CHAINS, d))
    recipe = sampler.recipe_at(STEP_SIZE)
    position, momentum = np.arange(d), np.arange(d, 2 * d)

    def root(theta, r):  # S(θ): Q's θ–r block is −S
        return -np.diagonal(recipe.curl(np.concatenate([theta, r], axis=1))[:, :d, d:], axis1=1, axis2=2)

    def flow(theta, r):
        out = np.empty_like(theta)
        for chain in range(theta.shape[0]):
            solution = solve_ivp(lambda t, x: root(x[None], r[chain][None])[0] * r[chain], (0.0, STEP_SIZE / 2),
                                 theta[chain], rtol=1e-12, atol=1e-14)
            out[chain] = solution.y[:, -1]
        return out

    frictionless = SimpleNamespace(diffusion=lambda z: np.zeros((z.shape[0], 2 * d, 2 * d)), curl=recipe.curl)
    theta, r = flow(state.theta, state.momentum), state.momentum
    z = np.concatenate([theta, r], axis=1)
    noise = gradient_normal @ np.linalg.cholesky(NOISE[case.target]).T
    gamma = 0.0 if case.sampler in WITHOUT_GAMMA else _gamma(frictionless, z)[:, momentum]
    force = -root(theta, r) * (_central_differences(recipe.energy, z)[:, position] + noise) + gamma
    friction = np.diagonal(recipe.diffusion(z)[:, d:, d:], axis1=1, axis2=2)
    decay = np.exp(-STEP_SIZE * friction)
    r = decay * (r + STEP_SIZE / 2 * force) + np.sqrt(1.0 - decay**2) * injected + STEP_SIZE / 2 * force
    expected = np.concatenate([flow(theta, r), r], axis=1)
    new_state = sampler.engine_blocks(PYTHON)(ScriptedNormals(np.stack([gradient_normal, injected])[None]), state,
                                              np.array([STEP_SIZE]), 0).state
    np.testing.assert_allclose(sampler.pack(new_state), expected, rtol=1e-7, atol=1e-9)
    if case.sampler == "sgrhmc":  # the metric's γ is there, and not negligible
        assert np.max(np.abs(gamma)) > 0.05
