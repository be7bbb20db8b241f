"""The one block driver (:mod:`sgmcmc.engine.driver`) with the integrators of :mod:`sgmcmc.engine.integrators` and the
estimators of :mod:`sgmcmc.engine.estimators`, on models handed over as plain functions:

- the compiled block and the same source run as Python give the same samples (in ``make validate``: a block compiled
  per case; ``make test`` runs the compiled blocks against exact laws here and in tests/samplers);
- each integrator's Euler step is the generic recipe step (Ma et al. 2015 Eq. 9 with +εΓ, :func:`sgmcmc.recipe.
  recipe_step`) on the same random numbers, with H, D and Q written here from Eq. 12-16 and Algorithm 1 (the
  Riemannian ones on the rational metric of SPEC §4.2, Γ by the recipe's finite differences; naive SGRHMC with Γ = 0),
  and the momentum samplers' ``splitting`` and ``theta_first`` orders are its rows taken in turn; ABOBA, BAOAB and
  BADODAB are its rows for ε/2 (the kicks, the drifts, the thermostat's D) around the exact Ornstein–Uhlenbeck step
  written here; the resampled trajectories (HMC's and naive SGHMC's leapfrog, SGHMC + MH's Algorithm 2) its rows in
  turn, then the Metropolis–Hastings test on the exact energy written here; pSGLD on a data model's minibatches the
  recipe step with its running D, or its stationary D(θ) written from all the rows (Γ by the recipe's differences);
- the minibatches are uniform subsets without replacement (enumerated);
- SGLD with minibatches and the exact V̂ has the Euler scheme's exact stationary variance on a Gaussian model;
- a failed step stops the block with the right status.
"""

from __future__ import annotations

import itertools
import os
import pickle
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
import pytest
from scipy import stats

from sgmcmc.engine import driver, estimators, integrators
from sgmcmc.engine import static as static_module
from sgmcmc.engine.blocks import DIVERGED, FAILED
from sgmcmc.engine.driver import COMPILED, PYTHON, Blocks, block_draws, draw_steps
from sgmcmc.engine.injection import DIAGONAL_ESTIMATE, FULL_ESTIMATE, NO_ESTIMATE
from sgmcmc.engine.replay import on_replay
from sgmcmc.engine.static import static
from sgmcmc.geometry import ExpandedMeanMetric, IdentityMetric, RationalMetric
from sgmcmc.recipe import Recipe, recipe_step
from sgmcmc.samplers import make_sampler
from sgmcmc.state import SamplerState
from sgmcmc.targets import make_target
from sgmcmc.targets.logistic_regression import logistic_synthetic
from tests.helpers import ScriptedNormals

ROOT = Path(__file__).resolve().parents[2]
NU = 4.0


def student_examples(theta, rows):
    """∇_θ log p(y | x, θ) of Student-t(ν = 4) regression, per row (x, y)."""
    x, y = rows[:, :-1], rows[:, -1]
    residual = y - x @ theta
    return ((NU + 1.0) * residual / (NU + residual * residual)).reshape(-1, 1) * x


def normal_prior(theta):
    return -theta / 4.0


def correlated_potential_gradient(theta):
    """∇U of U = ½ θᵀPθ with P = [[2, 0.6], [0.6, 1]], vectorised: θ (n, 2)."""
    out = np.empty_like(theta)
    out[:, 0] = 2.0 * theta[:, 0] + 0.6 * theta[:, 1]
    out[:, 1] = 0.6 * theta[:, 0] + theta[:, 1]
    return out


def correlated_potential_gradient_into(theta, parameters, out):
    """The same ∇U written into ``out`` (the form of :func:`sgmcmc.engine.estimators.formula_gradient`)."""
    out[0] = 2.0 * theta[0] + 0.6 * theta[1]
    out[1] = 0.6 * theta[0] + theta[1]


def correlated_potential(theta, parameters):
    """U = ½ θᵀPθ of one chain."""
    return 0.5 * (2.0 * theta[0] * theta[0] + 1.2 * theta[0] * theta[1] + theta[1] * theta[1])


def gaussian_examples(theta, rows):
    """∇_µ log N(x | µ, 1) per row."""
    return rows - theta


def flat_prior(theta):
    return np.zeros_like(theta)


def data_source(data, examples=student_examples, prior=normal_prior):
    return estimators.source_of({"row_gradients": examples, "prior_gradient": prior, "data": data,
                                 "n_data": data.shape[0]})


def density_source(factor, into=False):
    if into:
        return estimators.source_of({"gradient_into": correlated_potential_gradient_into, "parameters": np.zeros(1),
                                     "potential": correlated_potential, "noise_factor": factor})
    return estimators.source_of({"gradient": correlated_potential_gradient, "sign": 1.0, "noise_factor": factor})


def vectorised_student_examples(theta, index):
    """The Student-t rows' ∇log p of many chains in one call, as a user's vectorised data model writes it: θ (k, d)
    and the rows' indices (k, n) → (k, n, d)."""
    data = student_data()
    return np.stack([student_examples(point, data[rows]) for point, rows in zip(theta, index)])


def vectorised_source():
    """The Student-t model handed over in the vectorised form (:func:`sgmcmc.engine.replay.on_replay`): its source
    and its answers for the replay's table."""
    functions = on_replay({"vectorised_row_gradients": vectorised_student_examples,
                           "vectorised_prior_gradient": normal_prior, "n_data": 40})
    return estimators.source_of(functions), functions["replay"]


def student_data(n_data=40, dim=3, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n_data, dim))
    return np.column_stack([x, x @ np.arange(1.0, dim + 1) + rng.standard_t(NU, n_data)])


INTEGRATORS = {"langevin": (False, False), "momentum_friction": (True, False), "thermostat": (True, True)}
# ABOBA is not an Euler step: its pin below composes the recipe's moves with the exact friction
SPLITTINGS = {"aboba": (True, False)}


def rational(dim):
    """The rational metric of SPEC §4.2 with a θ-dependent S in all but the second coordinate."""
    return RationalMetric(np.array([1.0, 0.25, 0.8])[:dim], np.array([1.0, 0.0, 0.5])[:dim])


# the cases of the metric and the variant: G = I, the rational metric with its correction, without it (naive SGRHMC),
# G = I with CCAdL's covariance-controlled friction (the thermostat), the expanded mean's G⁻¹ = cθ (SPEC T10, on θ > 0)
NO_METRIC, METRIC, NAIVE, CCADL, EXPANDED = "identity", "rational", "naive", "ccadl", "expanded_mean"


def geometry_of(metric, dim):
    """The metric of a case: None for G = I."""
    if metric == EXPANDED:
        return ExpandedMeanMetric(0.8)
    return rational(dim) if metric in (METRIC, NAIVE) else None


def blocks(name, source, dim, options=(integrators.EULER, NO_ESTIMATE, 0), variance=None, n_data=0, batch_size=0,
           backend=COMPILED, parameter=0.7, metric=NO_METRIC, replay=None):
    """The blocks of integrator ``name`` with the ``metric`` case (the friction C = ``parameter`` is 1 on a metric),
    on a vectorised model's ``replay`` where given."""
    momentum, xi = {**INTEGRATORS, **SPLITTINGS}[name]
    function, flow, numbers = (geometry_of(metric, dim) or IdentityMetric()).engine_function(dim)
    constant = parameter if metric in (NO_METRIC, CCADL) or name not in ("momentum_friction", "aboba") else 1.0
    variant = {NAIVE: integrators.WITHOUT_CORRECTION, CCADL: integrators.COVARIANCE_FRICTION}.get(metric,
                                                                                                 integrators.PLAIN)
    return Blocks(static(getattr(integrators, name)), source,
                  (static(function), static(flow), numbers, np.array([constant, 0.0])), (*options, variant),
                  np.zeros((dim, dim)) if variance is None else variance, momentum=momentum, xi=xi, n_data=n_data,
                  batch_size=batch_size, clip=bool(options[2]), backend=backend, replay=replay)


def state(n_chains, dim, seed=1):
    rng = np.random.default_rng(seed)
    return SamplerState(theta=rng.standard_normal((n_chains, dim)), momentum=rng.standard_normal((n_chains, dim)),
                        xi=1.0 + 0.1 * rng.standard_normal(n_chains))


# Each case compiles a block of its own (the options are literal constants of the compiled code, so a block is compiled
# per combination): every integrator with every order, every way V̂ enters, clipping and every kind of source, each at
# least once, and every metric option, in ten blocks instead of all 243 combinations (each costs seconds to compile
# from a cold cache).
COMPILED_CASES = [("langevin", integrators.EULER, NO_ESTIMATE, "data", NO_METRIC),
                  ("langevin", integrators.EULER, DIAGONAL_ESTIMATE, "density", NO_METRIC),
                  ("langevin", integrators.EULER, FULL_ESTIMATE, "density_into", METRIC),
                  ("momentum_friction", integrators.SPLITTING, FULL_ESTIMATE, "data", NO_METRIC),
                  ("momentum_friction", integrators.EULER, NO_ESTIMATE, "density_into", NO_METRIC),
                  ("momentum_friction", integrators.THETA_FIRST, DIAGONAL_ESTIMATE, "density", METRIC),
                  ("momentum_friction", integrators.SPLITTING, NO_ESTIMATE, "data", NAIVE),
                  ("aboba", integrators.ABOBA, NO_ESTIMATE, "density_into", METRIC),
                  ("thermostat", integrators.SPLITTING, DIAGONAL_ESTIMATE, "density_into", NO_METRIC),
                  ("thermostat", integrators.EULER, FULL_ESTIMATE, "density", NO_METRIC),
                  ("thermostat", integrators.THETA_FIRST, NO_ESTIMATE, "data", NO_METRIC),
                  ("thermostat", integrators.THETA_FIRST, FULL_ESTIMATE, "density_into", CCADL)]


def source_of(model):
    """A source of each kind: a data model (minibatches of 10 of 40 rows, d = 3) on rows or vectorised (its source;
    :func:`replay_of` its answers), or a density model (d = 2) whose ∇U is returned or written."""
    if model == "data":
        return data_source(student_data()), 3, 40, 10
    if model == "vectorised":
        return vectorised_source()[0], 3, 40, 10
    return density_source(np.array([[1.0, 0.0], [0.5, 0.8]]), into=model == "density_into"), 2, 0, 0


def replay_of(model):
    """The vectorised model's answers for the replay's table (:class:`sgmcmc.engine.replay.Replay`), else None."""
    return vectorised_source()[1] if model == "vectorised" else None


@pytest.mark.validate  # a block compiled per case (seconds each): the long tier
@pytest.mark.parametrize("name, integrator, mode, model, metric", COMPILED_CASES)
def test_the_compiled_block_is_the_python_source(name, integrator, mode, model, metric):
    source, dim, n_data, batch = source_of(model)
    variance = np.array([[0.5, 0.1, 0.0], [0.1, 0.4, 0.0], [0.0, 0.0, 0.3]])[:dim, :dim]
    # the diagonal form with clipping: εV̂_jj above 2D (D = 0.7 or 1) in every coordinate, so each step clips
    clip = int(mode == DIAGONAL_ESTIMATE)
    if clip:
        variance = 200.0 * variance
    step_size = 0.05 if clip else 0.01
    runs = [blocks(name, source, dim, (integrator, mode, clip), variance, n_data, batch, backend, metric=metric)
            (np.random.default_rng(5), state(4, dim), np.full(25, step_size), 0) for backend in (COMPILED, PYTHON)]
    if clip:
        assert (runs[0].clipped == dim).all() and (runs[1].clipped == dim).all()
    assert runs[0].status is None and runs[0].stop == 25
    np.testing.assert_allclose(runs[0].theta, runs[1].theta, rtol=1e-12, atol=1e-12)
    if runs[0].momentum is not None:
        np.testing.assert_allclose(runs[0].momentum, runs[1].momentum, rtol=1e-12, atol=1e-12)
    assert not np.allclose(runs[0].theta[:, 0], runs[0].theta[:, -1])  # the chains moved


def case_run(case: int) -> tuple[np.ndarray, np.ndarray]:
    """(θ, r) of 4 chains after a block of 25 steps of ``COMPILED_CASES[case]``, compiled, without clipping."""
    name, integrator, mode, model, metric = COMPILED_CASES[case]
    source, dim, n_data, batch = source_of(model)
    variance = np.array([[0.5, 0.1, 0.0], [0.1, 0.4, 0.0], [0.0, 0.0, 0.3]])[:dim, :dim]
    run = blocks(name, source, dim, (integrator, mode, 0), variance, n_data, batch, metric=metric)(
        np.random.default_rng(5), state(4, dim), np.full(25, 0.01), 0)
    assert run.stop == 25
    return run.theta, run.momentum


# a process of its own compiles the case's block as runs do: SGMCMC_SPECIALISE_KERNELS is read at sgmcmc's import
AS_RUNS_COMPILE = ("import sys; import numpy as np; from tests.engine.test_driver import case_run; "
                   "np.savez(sys.argv[2], *case_run(int(sys.argv[1])))")


@pytest.mark.validate  # a block compiled per case (seconds each), here and in a process of its own: the long tier
@pytest.mark.parametrize("case", [3, len(COMPILED_CASES) - 1], ids=lambda case: "-".join(map(str, COMPILED_CASES[case])))
def test_a_block_compiled_as_runs_compile_it_gives_the_generic_blocks_samples(case, monkeypatch, tmp_path):
    """Runs compile a block per combination of options, as integer literals (driver.SPECIALISE), with the model's
    and the estimator's functions inlined into it (sgmcmc.engine.static.SPECIALISE); the test suite compiles one block
    for all options, those functions called (tests/conftest.py). The three give the same bits: the options as
    literals in this process, and the block as runs compile it in a process started with
    SGMCMC_SPECIALISE_KERNELS=1, on a data model (minibatches, the full V̂) and on CCAdL's thermostat."""
    generic = case_run(case)
    monkeypatch.setattr(driver, "SPECIALISE", True)
    literal = case_run(case)
    output = tmp_path / "runs.npz"
    child = subprocess.run([sys.executable, "-c", AS_RUNS_COMPILE, str(case), str(output)], capture_output=True,
                           text=True, cwd=ROOT, env=dict(os.environ, SGMCMC_SPECIALISE_KERNELS="1", PYTHONPATH=str(ROOT)),
                           timeout=600)
    assert child.returncode == 0, child.stderr
    with np.load(output) as saved:
        as_runs = (saved["arr_0"], saved["arr_1"])
    for run in (literal, as_runs):
        np.testing.assert_array_equal(run[0], generic[0])
        np.testing.assert_array_equal(run[1], generic[1])


def _recipe(name, dim, gradient, variance, parameter, metric, step_size):
    """H, D, Q of Ma et al. (2015): SGLD Eq. 13 (z = θ, D = I, Q = 0) and SGRLD Eq. 14 (D = G⁻¹ = S²); SGHMC Eq. 12
    (z = (θ, r), D = diag(0, C·I), Q = [[0, −I], [I, 0]]) and gSGRHMC Algorithm 1 (D = diag(0, S²), Q = [[0, −S],
    [S, 0]]); SGNHT Eq. 15 (z = (θ, r, ξ), H = U + rᵀr/2 + (d/2)(ξ − A)², D = diag(0, A·I, 0), Q with the r–ξ coupling
    ±r/d); CCAdL's D = diag(0, A·I + (h/2)V̂, 0) (Shang et al. 2015 Eq. 12 as a recipe, ``sgmcmc/samplers/ccadl.py``).
    B̂ = T V̂ T in the block ∇Ũ enters through T (S² for SGRLD, S for gSGRHMC). Γ by the recipe's finite differences,
    except naive SGRHMC's Γ = 0 (Eq. 16)."""
    size = {"langevin": dim, "momentum_friction": 2 * dim, "thermostat": 2 * dim + 1}[name]
    geometry = geometry_of(metric, dim)

    def root(z):
        return np.ones((z.shape[0], dim)) if geometry is None else geometry.inverse_sqrt(z[:, :dim])

    def energy_gradient(z, rng):
        out = np.zeros_like(z)
        out[:, :dim] = gradient
        if name != "langevin":
            out[:, dim:2 * dim] = z[:, dim:2 * dim]
        if name == "thermostat":
            out[:, -1] = dim * (z[:, -1] - parameter)
        return out

    def diffusion(z):
        matrix = np.zeros((z.shape[0], size, size))
        block = np.arange(dim) if name == "langevin" else np.arange(dim, 2 * dim)
        constant = 1.0 if name == "langevin" else parameter
        matrix[:, block, block] = constant if geometry is None else root(z) ** 2
        if metric == CCADL:
            matrix[:, dim:2 * dim, dim:2 * dim] += 0.5 * step_size * variance
        return matrix

    def curl(z):
        matrix = np.zeros((z.shape[0], size, size))
        if name != "langevin":
            index = np.arange(dim)
            matrix[:, index, dim + index] = -root(z)
            matrix[:, dim + index, index] = root(z)
        if name == "thermostat":
            matrix[:, dim:2 * dim, -1] = z[:, dim:2 * dim] / dim
            matrix[:, -1, dim:2 * dim] = -z[:, dim:2 * dim] / dim
        return matrix

    def noise(z):
        matrix = np.zeros((z.shape[0], size, size))
        block = slice(0, dim) if name == "langevin" else slice(dim, 2 * dim)
        transform = root(z) ** 2 if name == "langevin" else root(z)
        matrix[:, block, block] = transform[:, :, None] * variance * transform[:, None, :]
        return matrix

    correction = (lambda z: np.zeros_like(z)) if metric == NAIVE else None
    return Recipe(energy_gradient, diffusion, curl, correction=correction, noise_covariance=noise)


RECIPE_CASES = [("langevin", NO_METRIC), ("langevin", METRIC), ("langevin", EXPANDED), ("momentum_friction", NO_METRIC),
                ("momentum_friction", METRIC), ("momentum_friction", EXPANDED), ("momentum_friction", NAIVE),
                ("thermostat", NO_METRIC), ("thermostat", CCADL)]


@pytest.mark.parametrize("name, metric", RECIPE_CASES)
@pytest.mark.parametrize("model", ["data", "vectorised", "density", "density_into"])
@pytest.mark.parametrize("mode", [NO_ESTIMATE, DIAGONAL_ESTIMATE])
def test_an_euler_step_is_the_generic_recipe_step(name, metric, model, mode):
    """The data model on rows, the same model vectorised (its calls answered from the replay's table), and the
    density models; the metric's cases; V̂ diagonal (the recipe's symmetric root is then the integrator's factor) or
    none subtracted (B̂ = 0)."""
    source, dim, n_data, batch = source_of(model)
    step_size, parameter, n_chains = 0.05, 0.7, 4
    variance = np.diag([0.3, 0.2, 0.1][:dim]) if mode == DIAGONAL_ESTIMATE else np.zeros((dim, dim))
    start = state(n_chains, dim)
    if metric == EXPANDED:  # on the metric's support, θ > 0, far enough from 0 that no step leaves it
        start = start._replace(theta=1.0 + np.abs(start.theta))
    # the integrator's source run as Python: the compiled block is that source (test above)
    block = blocks(name, source, dim, (integrators.EULER, mode, 0), variance, n_data, batch, PYTHON,
                   parameter=parameter, metric=metric, replay=replay_of(model))(
        np.random.default_rng(3), start, np.array([step_size]), 0)
    # the block's random numbers, drawn again: the minibatch, then the normals (gradient noise, injected noise)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, n_chains, dim, n_data=n_data, batch_size=batch)
    rows, normals = (rows[0] if n_data else None), normals[0].transpose(1, 0, 2)  # normals (c, slots, d)
    gradient = _by_hand_gradient(model, start.theta, rows, normals, n_data, batch)
    parts = [start.theta] + ([start.momentum] if name != "langevin" else []) + (
        [start.xi[:, None]] if name == "thermostat" else [])
    z = np.concatenate(parts, axis=1)
    injected = np.zeros_like(z)
    block_slice = slice(0, dim) if name == "langevin" else slice(dim, 2 * dim)
    injected[:, block_slice] = normals[:, 1]
    expected = recipe_step(_recipe(name, dim, gradient, variance, parameter, metric, step_size), z, step_size,
                           ScriptedNormals(injected))
    np.testing.assert_allclose(block.theta[:, 0], expected[:, :dim], rtol=1e-7, atol=1e-9)
    if name != "langevin":
        np.testing.assert_allclose(block.momentum[:, 0], expected[:, dim:2 * dim], rtol=1e-7, atol=1e-9)
    if name == "thermostat":
        np.testing.assert_allclose(block.xi[:, 0], expected[:, -1], rtol=1e-7, atol=1e-9)


def _by_hand_gradient(model, theta, rows, normals, n_data, batch):
    """∇Ũ at θ (c, d) on the block's draws, written out: the Student-t rows' minibatch sum, or the correlated
    potential's ∇U plus its noise L z."""
    if model in ("data", "vectorised"):
        data = student_data()
        return np.array([-(n_data / batch) * student_examples(t, data[r]).sum(axis=0) - normal_prior(t)
                         for t, r in zip(theta, rows)])
    return correlated_potential_gradient(theta) + normals[:, 0] @ np.array([[1.0, 0.0], [0.5, 0.8]]).T


def _without_friction(gradient, dim, step_size):
    """SGHMC's recipe (Eq. 12) with C = 0 and no V̂: its θ rows are the drift θ + εr, its r rows the kick r − ε∇Ũ."""
    return _recipe("momentum_friction", dim, gradient, np.zeros((dim, dim)), 0.0, NO_METRIC, step_size)


def _recipe_rows(recipe, z, step_size, rows, normals=None):
    """z with the rows ``rows`` of the generic recipe step from z (injected normals ``normals``, or none) and the
    others as they were: one move of a splitting, as the recipe writes it (Ma et al. 2015 Eq. 9 + K1)."""
    moved = recipe_step(recipe, z, step_size, ScriptedNormals(np.zeros_like(z) if normals is None else normals))
    out = z.copy()
    out[:, rows] = moved[:, rows]
    return out


SPLIT_CASES = [("momentum_friction", NO_METRIC), ("momentum_friction", METRIC), ("momentum_friction", EXPANDED),
               ("momentum_friction", NAIVE), ("thermostat", NO_METRIC), ("thermostat", CCADL)]


@pytest.mark.parametrize("name, metric", SPLIT_CASES)
@pytest.mark.parametrize("order", [integrators.SPLITTING, integrators.THETA_FIRST])
@pytest.mark.parametrize("model", ["data", "vectorised", "density_into"])
@pytest.mark.parametrize("mode", [NO_ESTIMATE, DIAGONAL_ESTIMATE])
def test_a_split_step_is_the_generic_recipe_steps_rows_in_turn(name, metric, order, model, mode):
    """The momentum samplers' two other orders (SPEC §4.1) as moves of the generic recipe step, each on the state the
    last one left: ``splitting`` is the step's r row at (θ, r, ξ), then its θ and ξ rows at (θ, r', ξ) (θ' = θ + εS r',
    ξ' = ξ + ε(r'ᵀr'/d − 1)); ``theta_first`` its θ row at (θ, r, ξ) (θ* = θ + εS(θ)r), then its r row at (θ*, r, ξ)
    with ∇Ũ(θ*) on the step's minibatch, then its ξ row at (θ*, r', ξ). H, D, Q, Γ and B̂ as for the Euler step
    above; the injected normals are the block's own."""
    source, dim, n_data, batch = source_of(model)
    variance = np.diag([0.3, 0.2, 0.1][:dim]) if mode == DIAGONAL_ESTIMATE else np.zeros((dim, dim))
    step_size, parameter, n_chains = 0.05, 0.7, 4
    start = state(n_chains, dim)
    if metric == EXPANDED:
        start = start._replace(theta=1.0 + np.abs(start.theta))
    block = blocks(name, source, dim, (order, mode, 0), variance, n_data, batch, PYTHON, parameter=parameter,
                   metric=metric, replay=replay_of(model))(np.random.default_rng(3), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, n_chains, dim, n_data=n_data, batch_size=batch)
    rows, normals = (rows[0] if n_data else None), normals[0].transpose(1, 0, 2)
    z = np.concatenate([start.theta, start.momentum] + ([start.xi[:, None]] if name == "thermostat" else []), axis=1)
    position, momentum, thermostat = np.arange(dim), np.arange(dim, 2 * dim), np.arange(2 * dim, z.shape[1])
    injected = np.zeros_like(z)
    injected[:, momentum] = normals[:, 1]

    def recipe_at(theta):
        return _recipe(name, dim, _by_hand_gradient(model, theta, rows, normals, n_data, batch), variance, parameter,
                       metric, step_size)

    if order == integrators.SPLITTING:
        z = _recipe_rows(recipe_at(z[:, :dim]), z, step_size, momentum, injected)
        z = _recipe_rows(recipe_at(z[:, :dim]), z, step_size, np.concatenate([position, thermostat]))
    else:
        z = _recipe_rows(recipe_at(z[:, :dim]), z, step_size, position)
        z = _recipe_rows(recipe_at(z[:, :dim]), z, step_size, momentum, injected)
        z = _recipe_rows(recipe_at(z[:, :dim]), z, step_size, thermostat)
    np.testing.assert_allclose(block.theta[:, 0], z[:, position], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(block.momentum[:, 0], z[:, momentum], rtol=1e-7, atol=1e-9)
    if name == "thermostat":
        np.testing.assert_allclose(block.xi[:, 0], z[:, -1], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("model", ["data", "vectorised", "density", "density_into"])
def test_an_aboba_step_is_the_recipes_moves_around_the_exact_friction(model):
    """ABOBA (Leimkuhler & Matthews 2013; SGHMC's recipe, Ma et al. 2015 Eq. 12, G = I) on the block's draws: A is
    the generic recipe step's θ rows for ε/2 (θ + (ε/2)r); B its r rows for ε/2 on the recipe without friction
    (D = 0: r − (ε/2)∇Ũ(θ_h), one ∇Ũ at θ_h for both B's, its noise the step's slot 0); O the exact
    Ornstein–Uhlenbeck solution of dr = −Cr dt + √(2C) dW over ε, r₂ = e^{−εC} r₁ + √(1 − e^{−2εC}) z, written here
    with z the step's slot 1."""
    source, dim, n_data, batch = source_of(model)
    step_size, friction, n_chains = 0.05, 0.7, 4
    start = state(n_chains, dim)
    block = blocks("aboba", source, dim, (integrators.ABOBA, NO_ESTIMATE, 0), None, n_data, batch, PYTHON,
                   parameter=friction, replay=replay_of(model))(np.random.default_rng(3), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, n_chains, dim, n_data=n_data, batch_size=batch)
    rows, normals = (rows[0] if n_data else None), normals[0].transpose(1, 0, 2)
    z = np.concatenate([start.theta, start.momentum], axis=1)
    position, momentum = np.arange(dim), np.arange(dim, 2 * dim)

    def without_friction(theta):
        return _without_friction(_by_hand_gradient(model, theta, rows, normals, n_data, batch), dim, step_size)

    z = _recipe_rows(without_friction(z[:, :dim]), z, step_size / 2, position)                            # A
    kick = without_friction(z[:, :dim])
    z = _recipe_rows(kick, z, step_size / 2, momentum)                                                    # B
    decay = np.exp(-step_size * friction)
    z[:, momentum] = decay * z[:, momentum] + np.sqrt(1.0 - decay**2) * normals[:, 1]                     # O
    z = _recipe_rows(kick, z, step_size / 2, momentum)                                                    # B
    z = _recipe_rows(kick, z, step_size / 2, position)                                                    # A
    np.testing.assert_allclose(block.theta[:, 0], z[:, position], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(block.momentum[:, 0], z[:, momentum], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("noise", ["zero", "known"])
@pytest.mark.parametrize("name", ["baoab", "badodab"])
def test_an_ou_splitting_step_is_the_recipes_moves_around_the_exact_friction(name, noise):
    """BAOAB (Leimkuhler & Matthews 2013 §2; SGHMC's recipe, Ma et al. 2015 Eq. 12) and BADODAB (Leimkuhler & Shang
    2016 §5; SGNHT's, Eq. 15) on a data model's minibatches, from a state with its kept gradient: B and A are the
    generic recipe step's r and θ rows for ε/2 on the recipe without friction (r − (ε/2)g, θ + (ε/2)r), D its ξ row
    for ε/2 (ξ + (ε/2)(rᵀr/d − 1)); O the exact Ornstein–Uhlenbeck solution at the rate c = C (BAOAB) or ξ₁
    (BADODAB), r₂ = e^{−εc} r₁ + L z with LLᵀ = D(1 − e^{−2εc})/c · I less ε²V̂ (SPEC §4.3: with ``known``, V̂ = V(θ₁) =
    N(N − n)/n · S²(θ₁) over all N rows, written here; L its Cholesky factor), z the step's slot 0; the last B's ∇Ũ at
    θ' on the step's minibatch, written out, is the next step's kept gradient."""
    target = logistic_synthetic(n_data=40, dim=3, batch_size=10, n_test=10)
    # V(θ) = N(N − n)/n · S² is about 100 here: ε small enough that h²V̂ leaves the O step's covariance PSD
    constant, step_size, n_chains, dim = 0.7, 0.05 if noise == "zero" else 0.004, 4, 3
    sampler = make_sampler(name, target, noise_estimate=noise,
                           **({"friction": constant} if name == "baoab" else {"diffusion": constant}))
    thermostat = name == "badodab"
    start = state(n_chains, dim)._replace(gradient=np.random.default_rng(5).standard_normal((n_chains, dim)))
    if not thermostat:
        start = start._replace(xi=None)
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(3), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, n_chains, dim, n_data=40, batch_size=10)
    rows, normals = rows[0], normals[0].transpose(1, 0, 2)

    def minibatch_gradient(theta):  # −(N/n) Σ_rows ∇log p(y_i | x_i, θ) − ∇log p(θ)
        return -(40 / 10) * target.log_likelihood_gradients(theta, rows).sum(axis=1) - target.log_prior_gradient(theta)

    def recipe_of(gradient):
        return _recipe("thermostat" if thermostat else "momentum_friction", dim, gradient, np.zeros((dim, dim)),
                       constant, NO_METRIC, step_size)

    def without_friction(gradient):
        return _without_friction(gradient, dim, step_size)

    z = np.concatenate([start.theta, start.momentum] + ([start.xi[:, None]] if thermostat else []), axis=1)
    position, momentum = np.arange(dim), np.arange(dim, 2 * dim)
    z2 = z[:, :2 * dim]
    z2 = _recipe_rows(without_friction(start.gradient), z2, step_size / 2, momentum)                      # B
    z2 = _recipe_rows(without_friction(start.gradient), z2, step_size / 2, position)                      # A
    z[:, :2 * dim] = z2
    rate = np.full(n_chains, constant)
    if thermostat:
        z = _recipe_rows(recipe_of(start.gradient), z, step_size / 2, [2 * dim])                          # D
        rate = z[:, -1]
    decay = np.exp(-step_size * rate)
    for chain in range(n_chains):
        covariance = constant * -np.expm1(-2.0 * step_size * rate[chain]) / rate[chain] * np.eye(dim)
        if noise == "known":  # V(θ₁), the per-example gradients' covariance over all the rows, scaled
            examples = target.log_likelihood_gradients(z[chain:chain + 1, :dim], np.arange(40)[None])[0]
            covariance -= step_size**2 * (40 * (40 - 10) / 10) * np.cov(examples, rowvar=False)
        z[chain, momentum] = (decay[chain] * z[chain, momentum]
                              + np.linalg.cholesky(covariance) @ normals[chain, 0])                       # O
    if thermostat:
        z = _recipe_rows(recipe_of(start.gradient), z, step_size / 2, [2 * dim])                          # D
    z2 = _recipe_rows(without_friction(start.gradient), z[:, :2 * dim], step_size / 2, position)          # A
    kept = minibatch_gradient(z2[:, :dim])
    z[:, :2 * dim] = _recipe_rows(without_friction(kept), z2, step_size / 2, momentum)                    # B
    np.testing.assert_allclose(block.theta[:, 0], z[:, position], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(block.momentum[:, 0], z[:, momentum], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(block.state.gradient, kept, rtol=1e-7, atol=1e-9)
    if thermostat:
        np.testing.assert_allclose(block.xi[:, 0], z[:, -1], rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("preconditioner", ["running", "stationary"])
def test_a_psgld_step_on_a_data_model_is_the_generic_recipe_step(preconditioner):
    """pSGLD (Li et al. 2016 Algorithm 1 with ε_WT = 2ε, SPEC §0) on a data model's minibatches, on the block's draws:
    the recipe's z = θ, H = U, Q = 0 step with ∇Ũ the minibatch gradient written out and D diagonal, written here
    from the rows: Li et al.'s running D = 1 ⊘ (λ + √V_t), V_t = αV_{t−1} + (1 − α)∇Ũ ⊙ ∇Ũ, a function of the history
    (constant in θ: Γ = 0), or the stationary D(θ) = 1 ⊘ (λ + √v(θ)), v = ∇U² + diag V(θ) over all N rows
    (V(θ) = N(N − n)/n · S²(θ)), with Γ_i = ∂_i D_ii by the recipe's finite differences."""
    target = logistic_synthetic(n_data=40, dim=3, batch_size=10, n_test=10)
    alpha, damping, step_size, n_chains, dim = 0.9, 0.1, 0.01, 4, 3
    sampler = make_sampler("psgld", target, noise_estimate="zero", preconditioner=preconditioner, alpha=alpha,
                           damping=damping)
    rng = np.random.default_rng(6)
    start = sampler.init(rng.standard_normal((n_chains, dim)), rng)
    if preconditioner == "running":
        start = start._replace(preconditioner=rng.uniform(0.5, 2.0, (n_chains, dim)))
    block = sampler.engine_blocks(PYTHON)(np.random.default_rng(3), start, np.array([step_size]), 0)
    rows, normals, _ = block_draws(np.random.default_rng(3), 1, n_chains, dim, n_data=40, batch_size=10,
                                   first_slot=1)  # pSGLD on a data model: no gradient-noise slot
    rows, normals = rows[0], normals[0].transpose(1, 0, 2)
    every = np.tile(np.arange(40), (n_chains, 1))
    gradient = -(40 / 10) * target.log_likelihood_gradients(start.theta, rows).sum(axis=1) - \
        target.log_prior_gradient(start.theta)

    def stationary(z):  # D(z) (c, d, d) from all N rows
        examples = target.log_likelihood_gradients(z, every[:z.shape[0]])
        exact = -examples.sum(axis=1) - target.log_prior_gradient(z)
        variance = np.array([np.var(chain, axis=0, ddof=1) for chain in examples]) * 40 * (40 - 10) / 10
        return diagonal_of(1.0 / (damping + np.sqrt(exact**2 + variance)))

    if preconditioner == "running":
        average = alpha * start.preconditioner + (1 - alpha) * gradient**2
        fixed = diagonal_of(1.0 / (damping + np.sqrt(average)))
        diffusion = lambda z: fixed  # noqa: E731 (the history's D, not a function of θ)
    else:
        diffusion = stationary
    recipe = Recipe(lambda z, rng: gradient, diffusion, lambda z: np.zeros((z.shape[0], dim, dim)))
    expected = recipe_step(recipe, start.theta, step_size, ScriptedNormals(normals[:, 1]))
    np.testing.assert_allclose(block.theta[:, 0], expected, rtol=1e-6, atol=1e-9)
    if preconditioner == "running":  # V_t carried to the next step
        np.testing.assert_allclose(block.state.preconditioner, average, rtol=1e-12)
    if preconditioner == "stationary":  # the Γ the recipe took by differences is there, and not negligible
        recipe_without = Recipe(lambda z, rng: gradient, diffusion, lambda z: np.zeros((z.shape[0], dim, dim)),
                                correction=lambda z: np.zeros_like(z))
        without = recipe_step(recipe_without, start.theta, step_size, ScriptedNormals(normals[:, 1]))
        assert not np.allclose(block.theta[:, 0], without, rtol=1e-6, atol=1e-9)


def diagonal_of(values):
    """(c, d) → the diagonal matrices (c, d, d)."""
    return values[:, :, None] * np.eye(values.shape[1])


PRECISION = np.array([[2.0, 0.6], [0.6, 1.0]])  # of U = ½ θᵀPθ: the correlated potential's


def trajectory_blocks(trajectory, metropolis, steps, factor, backend=COMPILED, mode=NO_ESTIMATE, variance=None,
                      friction=0.0):
    """The resampled-trajectory integrator on the correlated potential (d = 2) handed over as a formula (its U too):
    HMC's exact gradient where ``factor`` is 0 (one normal slot a step), else ∇Ũ with each gradient its own slot."""
    exact = not np.any(factor)
    slots = 1 + (0 if exact else steps + 1 if trajectory == integrators.LEAPFROG else 2 * steps)
    function, flow, numbers = IdentityMetric().engine_function(2)
    return Blocks(static(integrators.trajectory), density_source(factor, into=True),
                  (static(function), static(flow), numbers, np.array([friction, float(steps)])),
                  (trajectory, mode, 0, integrators.METROPOLIS if metropolis else integrators.PLAIN),
                  np.zeros((2, 2)) if variance is None else variance, momentum=True, slots=slots,
                  uniforms=metropolis, backend=backend)


@pytest.mark.parametrize("trajectory, metropolis, factor", [
    (integrators.LEAPFROG, True, np.zeros((2, 2))),                      # HMC: exact ∇U, its test
    (integrators.LEAPFROG, False, np.diag([1.0, 0.6])),                  # naive SGHMC: each kick its own noise
    (integrators.ALGORITHM_2, True, np.diag([1.0, 0.6]))])               # SGHMC + MH, V̂ diagonal
def test_a_trajectory_is_the_recipes_moves_and_the_test_on_the_exact_energy(trajectory, metropolis, factor):
    """A resampled trajectory (m = 3) on the correlated potential, on the block's draws: r₀ the step's slot 0; the
    leapfrog (Ma et al. 2015 Eq. 10-11) the generic recipe step's r rows (kicks, ε/2 at either end) and θ rows (drifts)
    on H = U + ½rᵀr without friction, each kick's ∇Ũ with its own slot; Algorithm 2 (Chen et al. 2014) m × (the θ
    rows, then the r rows of SGHMC's recipe with friction C and B̂ = V̂, its noise the next slot); then the
    Metropolis–Hastings test on the exact H with the step's uniform (SPEC §0 K4), written here."""
    steps, step_size, friction, n_chains = 3, 0.4, 1.5, 6
    variance = factor @ factor.T
    mode = DIAGONAL_ESTIMATE if trajectory == integrators.ALGORITHM_2 else NO_ESTIMATE
    blocks_ = trajectory_blocks(trajectory, metropolis, steps, factor, PYTHON, mode, variance, friction=friction)
    start = state(n_chains, 2)
    block = blocks_(np.random.default_rng(4), start, np.array([step_size]), 0)
    _, normals, uniforms = block_draws(np.random.default_rng(4), 1, n_chains, 2, blocks_.slots, uniforms=metropolis)
    normals = normals[0].transpose(1, 0, 2)  # (c, slots, d)
    exact = not np.any(factor)
    position, momentum = np.arange(2), np.arange(2, 4)

    def recipe(z, slot, friction, variance):
        gradient = correlated_potential_gradient(z[:, :2]) + (0.0 if exact else normals[:, slot] @ factor.T)
        return _recipe("momentum_friction", 2, gradient, variance, friction, NO_METRIC, step_size)

    z = np.concatenate([start.theta, normals[:, 0]], axis=1)
    first = z.copy()
    if trajectory == integrators.LEAPFROG:
        for inner in range(steps + 1):
            if inner > 0:
                z = _recipe_rows(recipe(z, 0, 0.0, 0 * variance), z, step_size, position)
            kick = 0.5 if inner in (0, steps) else 1.0
            z = _recipe_rows(recipe(z, 1 + inner, 0.0, 0 * variance), z, kick * step_size, momentum)
    else:
        for inner in range(steps):
            z = _recipe_rows(recipe(z, 0, friction, variance), z, step_size, position)
            injected = np.zeros_like(z)
            injected[:, momentum] = normals[:, 2 + 2 * inner]
            z = _recipe_rows(recipe(z, 1 + 2 * inner, friction, variance), z, step_size, momentum, injected)
    if metropolis:
        def energy(point):
            theta, r = point[:, :2], point[:, 2:]
            return 0.5 * np.einsum("ci,ij,cj->c", theta, PRECISION, theta) + 0.5 * np.sum(r * r, axis=1)

        accept = np.exp(np.minimum(energy(first) - energy(z), 0.0))
        np.testing.assert_allclose(block.accept_probability[:, 0], accept, rtol=1e-9)
        rejected = ~(uniforms[0] < accept)
        assert 0 < rejected.sum() < n_chains, (accept, uniforms[0])
        z[rejected] = first[rejected]
    np.testing.assert_allclose(block.theta[:, 0], z[:, position], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(block.momentum[:, 0], z[:, momentum], rtol=1e-7, atol=1e-9)


@pytest.mark.validate  # a block compiled per case (seconds each): the long tier
@pytest.mark.parametrize("trajectory, factor, mode", [
    (integrators.LEAPFROG, np.zeros((2, 2)), NO_ESTIMATE),
    (integrators.ALGORITHM_2, np.array([[1.0, 0.0], [0.5, 0.8]]), FULL_ESTIMATE)])
def test_a_compiled_trajectory_is_the_python_source(trajectory, factor, mode):
    """Exact HMC with its test, and SGHMC + MH (Algorithm 2 with the full V̂): the same paths and the same acceptance
    probabilities compiled as in Python, with some proposals rejected."""
    variance = factor @ factor.T
    runs = [trajectory_blocks(trajectory, True, 3, factor, backend, mode, variance, friction=1.5)(
        np.random.default_rng(4), state(5, 2), np.full(30, 0.4), 0) for backend in (COMPILED, PYTHON)]
    assert runs[0].status is None and runs[0].stop == 30
    np.testing.assert_allclose(runs[0].theta, runs[1].theta, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(runs[0].momentum, runs[1].momentum, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(runs[0].accept_probability, runs[1].accept_probability, rtol=1e-12, atol=1e-12)
    assert 0.0 < runs[0].accept_probability.min() < 1.0


def test_hmc_with_its_test_keeps_the_exact_gaussian_where_leapfrog_alone_does_not():
    """Exact HMC (m = 3, ε = 1) on U = ½θᵀPθ from 4,000 exact draws of N(0, P⁻¹), 10 steps: with the Metropolis–
    Hastings test the law stays N(0, P⁻¹) (each covariance entry within 10%, 4.5 standard errors); the leapfrog's own
    invariant law at this ε has variances about 2.3 times larger (1/(1 − ε²ω²/4) along P's stiffest direction), so a
    test that did nothing would fail."""
    rng = np.random.default_rng(8)
    covariance = np.linalg.inv(PRECISION)
    start = SamplerState(theta=rng.multivariate_normal(np.zeros(2), covariance, size=4000),
                         momentum=np.zeros((4000, 2)), xi=np.zeros(4000))
    block = trajectory_blocks(integrators.LEAPFROG, True, 3, np.zeros((2, 2)))(rng, start, np.full(10, 1.0), 0)
    final = block.theta[:, -1]
    assert np.all(np.abs(final.mean(axis=0)) < 4 * np.sqrt(np.diag(covariance) / 4000))
    np.testing.assert_allclose(np.cov(final.T), covariance, rtol=0.1, atol=0.1 * covariance.max())
    assert 0.2 < block.accept_probability.mean() < 0.95


def test_minibatches_are_uniform_subsets_without_replacement():
    n_data, batch, draws = 6, 3, 40_000
    rows = block_draws(np.random.default_rng(0), draws, 1, 1, n_data=n_data, batch_size=batch)[0][:, 0]
    assert all(len(set(row)) == batch for row in rows[:1000])
    subsets = {subset: i for i, subset in enumerate(itertools.combinations(range(n_data), batch))}
    counts = np.bincount([subsets[tuple(sorted(row))] for row in rows], minlength=len(subsets))
    assert stats.chisquare(counts).pvalue > 1e-4
    # every subset, not a few of them: a draw with replacement or from range(N − 1) has far fewer or none of some
    assert counts.min() > 0.8 * draws / len(subsets)


def test_minibatches_with_replacement_are_independent_uniform_indices():
    """Each of the n indices uniform on range(N), independently: the index counts are flat and a minibatch of 3 from 6
    repeats an index with probability 1 − 6·5·4/6³ = 4/9."""
    n_data, batch, draws = 6, 3, 40_000
    rows = block_draws(np.random.default_rng(0), draws, 1, 1, n_data=n_data, batch_size=batch,
                       replacement=True)[0][:, 0]
    assert stats.chisquare(np.bincount(rows.ravel(), minlength=n_data)).pvalue > 1e-4
    repeated = np.mean([len(set(row)) < batch for row in rows])
    assert abs(repeated - 4 / 9) < 4 * np.sqrt(4 / 9 * 5 / 9 / draws)


def test_the_compiled_draws_are_numpys_step_by_step():
    """``draw_steps`` (numba's Generator on the run's bit generator) gives, step after step, the numbers of numpy's
    ``random((c, n))``, ``standard_normal((slots, c, d))`` and ``random(c)``, and leaves the Generator where they do."""
    keys, normals, uniforms = np.empty((7, 3, 4)), np.empty((7, 2, 3, 2)), np.empty((7, 3))
    rng, reference = np.random.default_rng(9), np.random.default_rng(9)
    draw_steps(rng, keys, normals, uniforms, 0)
    for k in range(7):
        np.testing.assert_array_equal(keys[k], reference.random((3, 4)))
        np.testing.assert_array_equal(normals[k], reference.standard_normal((2, 3, 2)))
        np.testing.assert_array_equal(uniforms[k], reference.random(3))
    assert rng.random() == reference.random()


def test_draws_from_the_first_slot_on_leave_the_slots_before_it_at_zero():
    """With ``first_slot`` = 1, each step draws its keys, then the normals of slots 1… alone (numpy's
    ``standard_normal((slots − 1, c, d))``), then its uniforms: slot 0 stays 0 and the stream skips it."""
    rng, reference = np.random.default_rng(9), np.random.default_rng(9)
    rows, normals, uniforms = block_draws(rng, 5, 3, 2, slots=3, uniforms=True, n_data=10, batch_size=4,
                                          first_slot=1)
    assert not normals[:, 0].any()
    for k in range(5):
        reference.random((3, 4))
        np.testing.assert_array_equal(normals[k, 1:], reference.standard_normal((2, 3, 2)))
        np.testing.assert_array_equal(uniforms[k], reference.random(3))
    assert rng.random() == reference.random()


@pytest.mark.parametrize("name, options, first_slot", [
    ("sgld", {}, 1), ("sghmc", {}, 1), ("sgnht", {}, 1), ("psgld", {}, 1),
    ("baoab", {}, 0),  # its O step reads slot 0
    ("hmc", {"n_leapfrog": 3}, 0),  # r ~ N(0, I) from slot 0, one slot a step
    ("sghmc_mh", {"n_leapfrog": 3}, 0)])  # r, then each inner step's two slots
def test_a_data_models_blocks_draw_no_gradient_noise_slot_that_nothing_reads(name, options, first_slot):
    """On a data model (its gradient noise is its minibatch) the samplers whose integrator hands slot 0 to the
    estimator alone draw from slot 1 on; those whose integrator reads slot 0 (BAOAB's O step, a trajectory's r) and
    every sampler on a density model (∇U + L z from slot 0) draw them all."""
    data = logistic_synthetic(n_data=40, dim=3, batch_size=10, n_test=10)
    assert make_sampler(name, data, noise_estimate="zero", **options).engine_blocks(PYTHON).first_slot == first_slot
    density = make_target("gaussian_2d_cov")
    assert make_sampler(name, density, noise_estimate="zero", **options).engine_blocks(PYTHON).first_slot == 0


@pytest.mark.parametrize("name", ["langevin", "thermostat"])
def test_a_block_of_minibatches_does_not_depend_on_where_the_run_cuts_its_blocks(name):
    """A data model's blocks draw each step's minibatch and then its normals, step after step (the numpy steps'
    order): 12 steps in blocks of 5, 1 and 6 are the 12 steps of one block, bit for bit (a run resumed from a
    checkpoint cuts its blocks elsewhere). Drawn block by block, all minibatches then all normals, they were not."""
    source = data_source(student_data())
    make = lambda: blocks(name, source, 3, n_data=40, batch_size=10, backend=PYTHON)  # noqa: E731
    whole = make()(np.random.default_rng(4), state(3, 3), np.full(12, 0.01), 0)
    rng, current, paths = np.random.default_rng(4), state(3, 3), []
    for begin, end in ((0, 5), (5, 6), (6, 12)):
        block = make()(rng, current, np.full(end - begin, 0.01), begin)
        current = block.state
        paths.append(block.theta)
    np.testing.assert_array_equal(np.concatenate(paths, axis=1), whole.theta)


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_sgld_with_minibatches_and_the_exact_noise_has_the_euler_schemes_variance():
    """x_i ~ N(µ, 1), N = 50, flat prior: the posterior of µ is N(x̄, 1/N). The per-example gradient x_i − µ has a
    covariance that does not depend on µ, so V̂ = N(N − n)/n · s² (s² the data's variance with N − 1) is exact, and
    SGLD with it is the Euler scheme of the exact Langevin SDE: its stationary law is N(x̄, 1/(N(1 − εN/2))) exactly.
    4,000 chains × 400 steps from the posterior; a factor 2 in the injected noise moves the variance by 100%."""
    rng = np.random.default_rng(11)
    n_data, batch, step_size = 50, 10, 0.005
    data = rng.standard_normal((n_data, 1)) + 0.3
    variance = np.array([[n_data * (n_data - batch) / batch * data.var(ddof=1)]])
    source = data_source(data, gaussian_examples, flat_prior)
    exact_variance = 1.0 / (n_data * (1.0 - step_size * n_data / 2.0))
    mean = data.mean()
    start = SamplerState(theta=mean + np.sqrt(exact_variance) * rng.standard_normal((4000, 1)))
    block = blocks("langevin", source, 1, (integrators.EULER, FULL_ESTIMATE, 0), variance, n_data, batch)(
        rng, start, np.full(400, step_size), 0)
    final = block.theta[:, -1, 0]
    assert abs(final.mean() - mean) < 4 * np.sqrt(exact_variance / final.size)
    assert abs(final.var() / exact_variance - 1.0) < 0.1  # 4 standard errors of a variance from 4,000 draws: 0.09


def test_a_non_finite_step_ends_the_block_as_diverged_and_a_refused_covariance_as_failed():
    """The driver's stops, on its Python source (the compiled block is that source: the long tier's cases above, and
    the compiled stops of tests/engine/test_compiled_blocks.py and test_preconditioned_integrator.py)."""
    data = student_data()
    gaussian = data_source(data[:, :1], gaussian_examples, flat_prior)  # ∇U grows with µ: θ' − x̄ = (1 − εN)(θ − x̄)
    diverging = blocks("langevin", gaussian, 1, n_data=40, batch_size=10, backend=PYTHON)(
        np.random.default_rng(0), state(2, 1), np.full(100, 1e6), 0)
    assert diverging.status == DIVERGED and diverging.stop < 100 and diverging.theta.shape[1] == diverging.stop
    assert np.isfinite(diverging.theta).all() and "non-finite" in diverging.error
    refused = blocks("langevin", data_source(data), 3, (integrators.EULER, DIAGONAL_ESTIMATE, 0), 1e3 * np.eye(3), 40,
                     10, backend=PYTHON)(
        np.random.default_rng(0), state(2, 3), np.full(5, 0.1), 0)
    assert refused.status == FAILED and refused.stop == 0 and "not positive semidefinite" in refused.error


def test_a_static_functions_key_names_its_source(tmp_path):
    first, second = tmp_path / "first_model.py", tmp_path / "second_model.py"
    first.write_text("def gradient(theta):\n    return 2.0 * theta\n")
    second.write_text("def gradient(theta):\n    return 3.0 * theta\n")
    namespaces = []
    for path in (first, second, first):
        namespace = {"__name__": "model"}
        exec(compile(path.read_text(), str(path), "exec"), namespace)
        namespaces.append(static(namespace["gradient"]))
    assert namespaces[0].key == namespaces[2].key != namespaces[1].key
    assert static(lambda theta: theta, cacheable=False).key.split("@")[1].startswith("process-")


def test_a_cache_entry_of_a_model_this_process_has_not_loaded_is_written_back_as_it_was_read():
    """numba rewrites a function's whole cache index when it adds an entry, unpickling and pickling every other
    entry: a model's entry read by a process that has not built that model must pickle back to the same key."""
    unloaded = "tests.some_model.gradient@0123456789abcdef@fedcba9876543210"
    placeholder = pickle.loads(pickle.dumps(static_module._rebuild(unloaded)))
    assert isinstance(placeholder, static_module.UnloadedStaticFunction) and placeholder.static_key == unloaded
    live = static(normal_prior)
    assert pickle.loads(pickle.dumps(static_module._rebuild(live.key))) == numba.typeof(live) != placeholder


class WideModel:
    """A data model with d = 5,000 (rows of N(0, I); g_i = x_i − θ), whose d × d arrays would take 200 MB each."""

    n_data, dim = 40, 5_000

    def __init__(self):
        self.data = np.random.default_rng(0).standard_normal((self.n_data, self.dim))

    @staticmethod
    def row_gradients(theta, rows):
        return rows - theta.reshape(1, -1)

    @staticmethod
    def prior_gradient(theta):
        return -theta


def test_blocks_without_a_noise_estimate_make_nothing_d_by_d():
    """With ``noise_estimate=zero`` no V̂ enters, so the blocks of a wide model (d = 5,000) hold the row (1, d) of its
    (zero) diagonal, and SGHMC's run two steps of 2 chains (the Python source) in a tenth of the memory of one d × d
    array; a V̂ that enters in full is held in full."""
    import tracemalloc

    from sgmcmc.samplers import make_sampler
    from sgmcmc.targets import make_target
    from sgmcmc.targets.user import user_target

    target = user_target(WideModel(), batch_size=10)
    for name in ("sgld", "sgnht", "sghmc"):
        sampler = make_sampler(name, target, noise_estimate="zero")
        blocks = sampler.engine_blocks(PYTHON)
        assert blocks.variance.shape == (1, WideModel.dim)
    full = make_sampler("sgld", make_target("gaussian_2d_cov", noise_variance=[[1.0, 0.3], [0.3, 0.5]]),
                        noise_estimate="known").engine_blocks(PYTHON)
    assert full.variance.shape == (2, 2) and full.options[1] == FULL_ESTIMATE
    rng = np.random.default_rng(1)
    state = sampler.init(np.zeros((2, WideModel.dim)), rng)
    blocks(rng, state, np.full(1, 1e-3), 0)  # the compiled helpers it calls, compiled (a cold cache) before measuring
    tracemalloc.start()
    block = blocks(rng, state, np.full(2, 1e-3), 0)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert block.status is None and block.theta.shape == (2, 2, WideModel.dim)
    assert peak < 20 * 2**20  # one d × d array is 200 MB


def test_blocks_refuse_a_variance_of_the_wrong_shape():
    """Compiled code does not check its indices: a row (1, d) where V̂ enters in full, or columns that are not the
    state's d, is refused before a block runs."""
    source = density_source(np.eye(3))
    with pytest.raises(ValueError, match="variance must be"):
        blocks("langevin", source, 3, options=(integrators.EULER, FULL_ESTIMATE, 0), variance=np.zeros((1, 3)))
    row = blocks("langevin", source, 3, variance=np.zeros((1, 3)), backend=PYTHON)
    with pytest.raises(ValueError, match="columns"):
        row(np.random.default_rng(0), SamplerState(theta=np.zeros((2, 2))), np.full(1, 0.01), 0)
