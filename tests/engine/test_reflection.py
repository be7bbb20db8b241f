"""The engine's reflection at the boundary of a target's support (``engine_functions()["reflect"]``, the driver's
``Blocks.reflect``) on Normal-Gamma (SPEC T7, §4.8: γ ≤ 0 → −γ with r_γ flipped).

The reflection of one chain is pinned to that rule in tests/targets/test_normal_gamma.py. In the blocks, every integrator order
of the momentum samplers is checked against what the rule implies: every state of the path is in the support (γ > 0),
the block reports reflections (each case asserts some, so that it can fail), and a chain that never reflected takes
the steps of the same block without the reflection (the same rows and normals: a block draws them whatever its
state), so the reflection touches nothing but the chains that cross γ = 0. Chains start at γ = 0.0513 with r_γ down
to −60 at h = 0.001, so that γ crosses 0 in some chains within the first steps (nearer γ = 0 the (N + 1)/(2γ) of the
gradient throws the chains out, or makes the running estimate's ε(2C − εΣ̂) indefinite); the engine's source runs as
Python (the compiled block is that source: tests/engine/test_driver.py, and one compiled case here). The steps
themselves are pinned to the recipe in tests/engine/test_driver.py and tests/samplers/test_recipe_agreement.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sgmcmc.engine.blocks import DIVERGED
from sgmcmc.engine.driver import COMPILED, PYTHON, Blocks
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.normal_gamma import NormalGamma
from tests.helpers import experiment_sampler

N_CHAINS, STEPS = 6, 150
START, STEP_SIZE = (0.3, 0.0513), 0.001
DOWNWARD = np.array([-60.0, -40.0, -30.0, 0.0, 20.0, -50.0])  # r_γ of each chain


def start(sampler):
    """Chains at (µ, γ) = :data:`START` with r_γ = :data:`DOWNWARD` (r_µ and ξ as ``init`` draws them)."""
    theta0 = np.tile(START, (N_CHAINS, 1))
    state = sampler.init(theta0, np.random.default_rng(0))
    if state.momentum is not None:
        momentum = state.momentum.copy()
        momentum[:, 1] = DOWNWARD
        state = state._replace(momentum=momentum)
    return state


def pair(sampler, step_sizes, backend=PYTHON, seed=3):
    """(the engine's block without the reflection, with it) from :func:`start` on the same random numbers."""
    blocks = sampler.engine_blocks(backend)
    assert isinstance(blocks, Blocks) and blocks.reflect is not None
    state = start(sampler)
    unreflected = dataclasses.replace(blocks, reflect=None)(np.random.default_rng(seed), state, step_sizes, 0)
    return unreflected, blocks(np.random.default_rng(seed), state, step_sizes, 0)


def assert_reflected_where_it_crossed(unreflected, engine):
    """Every state of the reflected path in γ > 0; the chains that never reflected are the unreflected block's to the
    end of the shorter of the two blocks (rounding aside), and its states leave the support in the others."""
    assert np.all(engine.theta[:, :, 1] > 0)
    crossed = engine.reflected.sum(axis=1) > 0
    steps = min(engine.stop, unreflected.stop)
    assert crossed.any()
    for field in ("theta", "momentum", "xi"):
        expected = getattr(unreflected, field)
        if expected is None:
            assert getattr(engine, field) is None, field
        else:
            np.testing.assert_allclose(getattr(engine, field)[~crossed, :steps], expected[~crossed, :steps],
                                       rtol=1e-12, atol=1e-12)
    assert np.all(np.min(unreflected.theta[crossed, :steps, 1], axis=1) <= 0)
    if engine.momentum is not None:  # r_γ flipped where γ crossed: up after the first reflection of a chain moving down
        first = np.argmax(engine.reflected > 0, axis=1)
        chains = np.flatnonzero(crossed)
        assert np.all(engine.momentum[chains, first[chains], 1] > 0)


# every integrator order of the momentum samplers, with the noise estimates the engine takes on a data model
CASES = [
    ("sghmc", dict(integrator="theta_first", noise_estimate="zero", friction=10.0)),
    ("sghmc", dict(integrator="splitting", noise_estimate="running", friction=10.0)),
    ("sghmc", dict(integrator="euler", noise_estimate="running", running_form="diagonal", friction=10.0)),
    ("sghmc", dict(integrator="aboba", noise_estimate="zero", friction=10.0)),
    ("sgnht", dict(integrator="theta_first", noise_estimate="running", diffusion=10.0)),
    ("sgnht", dict(integrator="splitting", noise_estimate="zero", diffusion=10.0)),
    ("sgnht", dict(integrator="euler", noise_estimate="running", running_form="diagonal", noise_clip=True,
                   diffusion=10.0)),
    ("ccadl", dict(integrator="theta_first", diffusion=10.0)),
    ("ccadl", dict(integrator="euler", running_form="diagonal", diffusion=10.0)),
    ("sghmc", dict(integrator="splitting", noise_estimate="known", friction=10.0)),
    ("sgnht", dict(integrator="euler", noise_estimate="known", noise_clip=True, diffusion=10.0)),
]


@pytest.mark.parametrize("name, params", CASES)
def test_the_engine_reflects_the_chains_that_cross_the_boundary_and_no_other(name, params):
    sampler = make_sampler(name, make_target("normal_gamma", data_seed=1), **params)
    unreflected, engine = pair(sampler, np.full(STEPS, STEP_SIZE))
    assert engine.status is None and engine.reflected.sum() >= 3
    assert_reflected_where_it_crossed(unreflected, engine)


def test_sgld_reflects_up_to_its_divergence():
    """SGLD from γ near 0 (no momentum to flip): the drift ε(N + 1)/(2γ) throws γ up and back through 0 until the
    chains diverge; every kept state is in the support, and the chains that never crossed are the unreflected ones."""
    sampler = make_sampler("sgld", make_target("normal_gamma", data_seed=1), noise_estimate="zero")
    unreflected, engine = pair(sampler, np.full(60, 0.01))
    assert engine.status == DIVERGED and engine.reflected.sum() > 10
    assert_reflected_where_it_crossed(unreflected, engine)


@pytest.mark.validate  # a block compiled for this model and order (seconds): the long tier
def test_the_compiled_block_reflects_as_its_python_source():
    """SGHMC theta_first (Shang et al. 2015 Eq. 14, as Table 1 runs it) compiled, with the running estimate."""
    sampler = make_sampler("sghmc", make_target("normal_gamma", data_seed=1), integrator="theta_first",
                           noise_estimate="running", friction=10.0)
    unreflected, engine = pair(sampler, np.full(STEPS, STEP_SIZE), backend=COMPILED)
    python = sampler.engine_blocks(PYTHON)(np.random.default_rng(3), start(sampler), np.full(STEPS, STEP_SIZE), 0)
    assert engine.reflected.sum() >= 3
    np.testing.assert_array_equal(engine.reflected, python.reflected)
    np.testing.assert_allclose(engine.theta, python.theta, rtol=1e-12, atol=1e-12)
    assert_reflected_where_it_crossed(unreflected, engine)


def test_samplers_on_normal_gamma_run_on_the_engine_and_a_target_without_boundary_reports_no_reflections():
    """SGLD, SGHMC, SGNHT and CCAdL with a zero, running (full or diagonal) or known (V(θ), a pass over all the data)
    noise estimate run on the engine on Normal-Gamma (the Python backend: the same decision without compiling). A
    target on all of R^d hands over no reflection: its blocks report none."""
    target = make_target("normal_gamma")
    for name in ("sgld", "sghmc", "sgnht", "ccadl"):
        for params in (dict(noise_estimate="zero"), dict(noise_estimate="running"),
                       dict(noise_estimate="running", running_form="diagonal"), dict(noise_estimate="known")):
            assert isinstance(make_sampler(name, target, **params).engine_blocks(PYTHON), Blocks), (name, params)
    sampler = make_sampler("sghmc", make_target("double_well"), noise_estimate="zero")
    blocks = sampler.engine_blocks(PYTHON)
    assert blocks.reflect is None
    state = sampler.init(np.zeros((2, 1)), np.random.default_rng(0))
    assert blocks(np.random.default_rng(1), state, np.full(3, 0.01), 0).reflected is None


@pytest.mark.parametrize("sampler_config", [
    "sghmc_shang2015", "sgnht_shang2015", "ccadl_shang2015"])
@pytest.mark.parametrize("population", ["false", "true"])
def test_the_table1_samplers_run_on_the_engine(sampler_config, population):
    """The samplers of ccadl_table1 (Normal-Gamma) as their configs build them run on the engine's blocks."""
    name, params = experiment_sampler(sampler_config, "ccadl_table1", [f"vars.finite_population={population}",
                                                                      "vars.A=10"])
    assert isinstance(make_sampler(name, make_target("normal_gamma"), **params).engine_blocks(PYTHON), Blocks)


def test_a_subclass_gets_no_blocks():
    """A subclass of Normal-Gamma (which may change its gradients): no blocks."""

    class Shifted(NormalGamma):
        def log_prior_gradient(self, theta):
            return super().log_prior_gradient(theta) + 1.0

    assert make_sampler("ccadl", Shifted()).engine_blocks(PYTHON) is None


def test_a_run_on_the_engine_counts_its_reflections():
    """run_chains on the engine's blocks, SGHMC from γ = 0.01 at h = 0.01 (r ~ N(0, I): θ + εr crosses γ = 0 once):
    the run's ``reflections`` (metrics.json's) is the sum of the blocks' counts, which the kept draws' ``reflected``
    (every step kept) hold."""
    sampler = make_sampler("sghmc", make_target("normal_gamma", data_seed=1), integrator="theta_first",
                           noise_estimate="zero")
    settings = RunOptions(n_steps=150, n_chains=N_CHAINS, burn_in=0, eval_every=50, progress=False, backend=PYTHON)
    outcome = run_chains(sampler, Constant(0.01), settings, np.random.default_rng(3),
                         theta0=np.tile([0.3, 0.01], (N_CHAINS, 1)))
    assert outcome.status == "completed" and outcome.reflections > 0
    assert outcome.sample_stats["reflected"].sum() == outcome.reflections
