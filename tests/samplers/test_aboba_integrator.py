"""The ``aboba`` integrator of the (θ, r) recipe samplers (SGHMC, gSGRHMC): position-Verlet halves around an
exactly solved friction–noise step. It approaches the ``splitting`` step as ε → 0, samples the exact density (on
exact gradients: it has no V̂ correction), also deep in the overdamped regime where the Euler friction factor
1 − εF < −1 makes ``splitting`` diverge (gSGRHMC on LDA, SPEC T10), and a doubled noise fails the same check.
With a θ-dependent metric in that regime, its position flow must be second order: the explicit-Euler halves it had
before issue 16 are 0.25 low on Gamma(20, 1) at every ε, and the test below catches them. Two steps of the engine's
blocks equal the published update written out here (the identity metric and the expanded mean's)."""

import math

import numba
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from sgmcmc.geometry import ExpandedMeanMetric, RationalMetric
from sgmcmc.config import RunOptions
from sgmcmc.engine.driver import PYTHON, block_draws
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.base import SyntheticTarget
from tests.deliberate_bugs import double_the_injected_noise
from tests.helpers import build, sample_and_score
from tests.samplers.test_recipe_agreement import Gamma2D
from tests.samplers.test_sampling_accuracy import KL_1D, MOMENT_1D

EXACT = {"noise_variance": 0.0}  # exact gradients: the integrator has no gradient-noise correction


def _build(name, target_name, integrator="aboba", **params):
    return build(name, target_name, EXACT, integrator=integrator, noise_estimate="zero", **params)


@pytest.mark.parametrize("name, params", [("sghmc", {"friction": 2.0}), ("sgrhmc", {})])
def test_approaches_the_splitting_step(name, params):
    """Same state and normal draw (the engine's blocks, their source as Python): the one-step gap to the splitting
    step is O(ε^{3/2}) (noise amplitudes
    √(1 − e^{−2εF}) against √(2εF)) – both consistent integrators of the same SDE – so it shrinks ≈ 31× when ε
    shrinks 10×."""
    gaps = []
    for step_size in (1e-2, 1e-3):
        aboba, splitting = _build(name, "double_well", **params), _build(name, "double_well", "splitting", **params)
        state = aboba.init(np.linspace(-1.5, 1.5, 8)[:, None], np.random.default_rng(0))
        a, b = (sampler.engine_blocks(PYTHON)(np.random.default_rng(1), state, np.array([step_size]), 0).state
                for sampler in (aboba, splitting))
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
    """The O step's normals times √2 (tests/deliberate_bugs.py) on the engine's blocks."""
    double_the_injected_noise(monkeypatch)
    check = sample_and_score(_build("sghmc", "gaussian_1d", friction=friction), step_size, 3000)
    assert not check.passes(KL_1D, MOMENT_1D), check


def test_refuses_a_gradient_noise_correction():
    with pytest.raises(ValueError, match="integrator aboba has no gradient-noise correction"):
        build("sghmc", "gaussian_1d", integrator="aboba", noise_estimate="known")


# -- a θ-dependent metric in the overdamped regime (issue 16) ---------------------------------------------------------
class Gamma1D(SyntheticTarget):
    """Gamma(k, 1) on θ > 0: U = −(k − 1) log θ + θ, exact gradients; E θ = k, Var θ = k. It hands the engine its
    gradient, U and the reflection θ ≤ 0 → −θ (r flipped)."""

    name, dim = "gamma_1d", 1

    def __init__(self, shape: float = 20.0):
        super().__init__(noise_variance=0.0)
        self.shape = shape

    def potential(self, theta):
        return -(self.shape - 1.0) * np.log(theta[:, 0]) + theta[:, 0]

    def gradient(self, theta):
        return 1.0 - (self.shape - 1.0) / theta

    def initial_position(self, n_chains, rng):
        return rng.gamma(self.shape, 1.0, (n_chains, 1))

    def reflect(self, theta):
        return np.abs(theta), theta < 0

    def engine_functions(self):
        return {**self.density_functions(gamma_1d_gradient_into, gamma_1d_potential, parameters=(self.shape,)),
                "reflect": reflect_at_zero}


def gamma_1d_gradient_into(theta, parameters, out):
    """:meth:`Gamma1D.gradient` of one chain, the shape k in ``parameters[0]``."""
    out[0] = 1.0 - (parameters[0] - 1.0) / theta[0]


def gamma_1d_potential(theta, parameters):
    """:meth:`Gamma1D.potential` of one chain."""
    return -(parameters[0] - 1.0) * np.log(theta[0]) + theta[0]


def reflect_at_zero(theta, momentum):
    """θ ≤ 0 → −θ with r flipped, one chain (a coordinate flowed through 0); the number reflected."""
    count = 0
    for j in range(theta.shape[0]):
        if theta[j] <= 0.0:
            theta[j] = -theta[j]
            if momentum.shape[0] > 0:
                momentum[j] = -momentum[j]
            count += 1
    return count


@numba.njit(cache=True)
def expanded_mean_euler_flow(theta, momentum, time, parameters, out):
    """A deliberate bug: the position half step before issue 16, explicit Euler θ + t·√(cθ)·r, for one chain."""
    for j in range(theta.shape[0]):
        out[j] = theta[j] + time * math.sqrt(parameters[0] * theta[j]) * momentum[j]
    return 0


def euler_engine_function(self, dim):
    """:meth:`ExpandedMeanMetric.engine_function` with the Euler flow :func:`expanded_mean_euler_flow`."""
    metric, _, parameters = REAL_EXPANDED_MEAN(self, dim)
    return metric, expanded_mean_euler_flow, parameters


REAL_EXPANDED_MEAN = ExpandedMeanMetric.engine_function
GAMMA_METRICS = {"exact flow": lambda: ExpandedMeanMetric(scale=10.0)}


def gamma_moment_z_scores(metric, step_size, n_chains=1000, n_steps=10_000, seed=3):
    """gSGRHMC/aboba on Gamma(20, 1) with G⁻¹(θ) = 10θ: z-scores of the pooled E θ and E θ² against 20 and 420,
    with standard errors from the spread of the independent chains' means."""
    target = Gamma1D(20.0)
    sampler = make_sampler("sgrhmc", target, integrator="aboba", noise_estimate="zero", metric=metric)
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 5, eval_every=n_steps, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed))
    assert outcome.status == "completed"
    theta = outcome.samples[:, :, 0]
    # εF at the 1% quantile of Gamma(20, 1) (11.5): the overdamped regime εF ≥ 4 of the issue covers the mass
    assert step_size * 10.0 * 11.5 >= 4.0
    z = []
    for values, exact in ((theta.mean(axis=1), 20.0), ((theta**2).mean(axis=1), 420.0)):
        z.append((values.mean() - exact) / (values.std(ddof=1) / np.sqrt(n_chains)))
    return np.array(z)


@pytest.mark.parametrize("step_size", [0.05, 0.1])
@pytest.mark.parametrize("metric_name", list(GAMMA_METRICS))
def test_theta_dependent_metric_overdamped_is_unbiased(metric_name, step_size):
    """εF = 10θε ≥ 5.7 on 99% of the mass: the momentum is renewed every step. The mean and second moment are at
    the exact 20 and 420 within 4.5 standard errors (s.e. of E θ ≈ 0.02); the explicit-Euler position step is
    0.25 low in E θ at every ε (the next test)."""
    z = gamma_moment_z_scores(GAMMA_METRICS[metric_name](), step_size)
    assert np.all(np.abs(z) < 4.5), z


@pytest.mark.parametrize("step_size", [0.05, 0.1])
def test_theta_dependent_metric_catches_the_euler_position_step(monkeypatch, step_size):
    """The same check fails on the old explicit-Euler position halves, whose missing ½·S S′ drift does not shrink
    with ε (overdamped analysis: E θ ≈ 19.75)."""
    monkeypatch.setattr(ExpandedMeanMetric, "engine_function", euler_engine_function)
    z = gamma_moment_z_scores(ExpandedMeanMetric(scale=10.0), step_size)
    assert z[0] < -8, z


def test_theta_dependent_metric_catches_a_doubled_noise(monkeypatch):
    """The O step's normals times √2 (tests/deliberate_bugs.py) on the engine's blocks."""
    double_the_injected_noise(monkeypatch)
    z = gamma_moment_z_scores(ExpandedMeanMetric(scale=10.0), 0.05)
    assert np.max(np.abs(z)) > 8, z


def engine_flow(metric, theta, momentum, time):
    """Φ_t of the metric's engine flow (:meth:`~sgmcmc.geometry.DiagonalMetric.engine_function`) on each chain of θ, r
    (c, d): (θ(t), r after the flow's flips, the crossings per chain)."""
    _, flow, parameters = metric.engine_function(theta.shape[1])
    flowed, momentum = np.empty_like(theta), momentum.copy()
    crossed = [flow(theta[i], momentum[i], time, parameters, flowed[i]) for i in range(theta.shape[0])]
    return flowed, momentum, np.array(crossed)


@pytest.mark.parametrize("metric, tolerance", [(ExpandedMeanMetric(scale=10.0), 1e-10), (RationalMetric([1.0], [1.0]), 1e-7)],
                         ids=["exact", "rational-runge-kutta"])
def test_position_flow_solves_the_ode(metric, tolerance):
    """The engine's Φ_t against scipy's adaptive solution of θ̇ = s(θ) r at fixed r, away from the boundary (the
    rational metric's one Runge–Kutta step: local error O(t⁵), about 3e-9 relative here)."""
    theta, momentum, time = np.array([[3.0], [0.7], [12.0]]), np.array([[0.8], [-0.5], [-1.3]]), 0.05
    flowed, _, crossed = engine_flow(metric, theta, momentum, time)
    assert not crossed.any()
    for i in range(theta.shape[0]):
        solution = solve_ivp(lambda t, y: metric.inverse_sqrt(y[None, :])[0] * momentum[i], (0.0, time), theta[i],
                             rtol=1e-12, atol=1e-14)
        assert flowed[i, 0] == pytest.approx(solution.y[0, -1], rel=tolerance)


def test_expanded_mean_flow_reflects_at_zero():
    """A flow that reaches θ = 0 comes back as the mirror image in √θ and reports the crossing (its r flips)."""
    metric = ExpandedMeanMetric(scale=4.0)  # √θ moves at speed √c·r/2 = r
    flowed, momentum, crossed = engine_flow(metric, np.array([[1.0, 1.0]]), np.array([[-3.0, 0.5]]), 1.0)
    np.testing.assert_allclose(flowed, [[4.0, 2.25]])  # (1 − 3)² and (1 + 0.5)²
    np.testing.assert_array_equal(momentum, [[3.0, 0.5]])
    np.testing.assert_array_equal(crossed, [1])


def reference_aboba(theta, momentum, step_size, friction, root, root_derivative, gradient, flow, normal):
    """Leimkuhler & Matthews' ABOBA on the recipe's (H, D, Q) (sgmcmc/samplers/momentum_recipe.py), written out:
    θ_h = Φ_{ε/2}(θ, r); f = −S∇U(θ_h) + γ with S = ``root``(θ_h), γ = ``root_derivative``(θ_h); r₁ = r + (ε/2)f;
    r₂ = e^{−εF} r₁ + √(1 − e^{−2εF}) z with F = C·S²; r' = r₂ + (ε/2)f; θ' = Φ_{ε/2}(θ_h, r')."""
    half = theta + 0.5 * step_size * momentum if flow is None else flow(theta, momentum, 0.5 * step_size)
    scale = root(half)
    force = -scale * gradient(half) + root_derivative(half)
    decay = step_size * friction * scale**2
    momentum = np.exp(-decay) * (momentum + 0.5 * step_size * force) + np.sqrt(-np.expm1(-2 * decay)) * normal
    momentum = momentum + 0.5 * step_size * force
    theta = half + 0.5 * step_size * momentum if flow is None else flow(half, momentum, 0.5 * step_size)
    return theta, momentum


@pytest.mark.parametrize("case", ["sghmc", "sgrhmc-expanded_mean"])
def test_two_aboba_steps_are_the_published_update(case):
    """Two steps of the engine's blocks (their source as Python) on exact gradients against :func:`reference_aboba`
    on the blocks' own normals: SGHMC (S = I, F = C = 2) on the correlated 2D Gaussian, and gSGRHMC on the expanded
    mean's G⁻¹ = cθ (S = √(cθ), γ = √c/(2√θ), F = S², the position flow √θ(t) = √θ + √c·r·t/2, SPEC T10) on two
    Gamma(5, 1) coordinates."""
    step_size, n_chains = 0.05, 4
    rng = np.random.default_rng(2)
    if case == "sghmc":
        target = build("sghmc", "correlated_2d", EXACT).target
        sampler = make_sampler("sghmc", target, integrator="aboba", noise_estimate="zero", friction=2.0)
        theta = rng.normal(size=(n_chains, 2))
        pieces = dict(friction=2.0, root=np.ones_like, root_derivative=np.zeros_like, flow=None)
    else:
        target, metric = Gamma2D(noise_variance=0.0), ExpandedMeanMetric(2.0)
        sampler = make_sampler("sgrhmc", target, integrator="aboba", noise_estimate="zero", metric=metric)
        theta = rng.uniform(2.0, 6.0, size=(n_chains, 2))
        pieces = dict(friction=1.0, root=metric.inverse_sqrt, root_derivative=metric.inverse_sqrt_derivative,
                      flow=lambda t, r, time: engine_flow(metric, t, r, time)[0])
    state = sampler.init(theta, rng)
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(5), state, np.full(2, step_size), 0)
    _, normals, _ = block_draws(np.random.default_rng(5), 2, n_chains, 2)
    theta, momentum = state.theta, state.momentum
    for step in range(2):
        theta, momentum = reference_aboba(theta, momentum, step_size, gradient=target.gradient, normal=normals[step, 1],
                                          **pieces)
        np.testing.assert_allclose(block.theta[:, step], theta, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(block.momentum[:, step], momentum, rtol=1e-12, atol=1e-12)
