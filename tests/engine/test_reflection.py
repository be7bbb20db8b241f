"""The engine's reflection at the boundary of a target's support (``engine_functions()["reflect"]``, the driver's
``Blocks.reflect``) on Normal-Gamma (SPEC T7, §4.8: γ ≤ 0 → −γ with r_γ flipped), against the numpy steps.

The engine draws each step's minibatch (Floyd's algorithm) and then its normals; ``tests.helpers.EngineStream`` hands
the numpy steps the same rows and normals in the order they ask for them (per step the minibatch keys, then the
injected noise), so the two paths take the same steps: θ, r, ξ to rounding (the rows are summed in another order), the reflections per
chain and step and the stop exactly. Chains start at γ = 0.0513 with r_γ down to −60 at h = 0.001, so that γ
crosses 0 in some chains within the first steps (each case asserts reflections, so that it can fail; nearer γ = 0 the
(N + 1)/(2γ) of the gradient throws the chains out, or makes the running estimate's ε(2C − εΣ̂) indefinite); the
engine's source runs as Python (the compiled block is that source: tests/engine/test_driver.py, and one compiled case
here).
"""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import DIVERGED, numpy_block
from sgmcmc.engine.driver import COMPILED, PYTHON, Blocks
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.normal_gamma import NormalGamma
from tests.helpers import EngineStream, experiment_sampler

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
    """(the numpy steps' block, the engine's block) from :func:`start` on the same random numbers."""
    blocks = sampler.engine_blocks(backend)
    assert isinstance(blocks, Blocks) and blocks.reflect is not None
    state = start(sampler)
    engine = blocks(np.random.default_rng(seed), state, step_sizes, 0)
    stream = EngineStream(np.random.default_rng(seed), sampler.target.batch_size)
    reference = numpy_block(sampler, stream, state, step_sizes, 0)
    return reference, engine


def assert_same_block(reference, engine):
    assert (engine.status, engine.stop) == (reference.status, reference.stop)
    for field in ("theta", "momentum", "xi"):
        expected = getattr(reference, field)
        if expected is None:
            assert getattr(engine, field) is None, field
        else:
            np.testing.assert_allclose(getattr(engine, field), expected, rtol=1e-9, atol=1e-12)
    np.testing.assert_array_equal(engine.reflected, reference.reflected)
    if reference.state.noise is not None:
        np.testing.assert_allclose(engine.state.noise, reference.state.noise, rtol=1e-9, atol=1e-12)
        assert engine.state.noise_count == reference.state.noise_count


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
def test_the_engine_reflects_where_the_numpy_steps_do(name, params):
    sampler = make_sampler(name, make_target("normal_gamma", data_seed=1), **params)
    reference, engine = pair(sampler, np.full(STEPS, STEP_SIZE))
    assert reference.status is None and reference.reflected.sum() >= 3
    assert_same_block(reference, engine)


def test_sgld_reflects_where_the_numpy_steps_do_up_to_the_same_divergence():
    """SGLD from γ near 0 (no momentum to flip): the drift ε(N + 1)/(2γ) throws γ up and back through 0 until the
    chains diverge; the reflections and the stop are the numpy steps' (the old data kernel's pin)."""
    sampler = make_sampler("sgld", make_target("normal_gamma", data_seed=1), noise_estimate="zero")
    reference, engine = pair(sampler, np.full(60, 0.01))
    assert reference.status == DIVERGED and reference.reflected.sum() > 10
    assert_same_block(reference, engine)


@pytest.mark.validate  # a block compiled for this model and order (seconds): the long tier
def test_the_compiled_block_reflects_as_its_python_source():
    """SGHMC theta_first (Shang et al. 2015 Eq. 14, as Table 1 runs it) compiled, with the running estimate."""
    sampler = make_sampler("sghmc", make_target("normal_gamma", data_seed=1), integrator="theta_first",
                           noise_estimate="running", friction=10.0)
    reference, engine = pair(sampler, np.full(STEPS, STEP_SIZE), backend=COMPILED)
    assert reference.reflected.sum() >= 3
    assert_same_block(reference, engine)


def test_samplers_on_normal_gamma_run_on_the_engine_and_a_target_without_boundary_reports_no_reflections():
    """SGLD, SGHMC, SGNHT and CCAdL with a zero, running (full or diagonal) or known (V(θ), a pass over all the data)
    noise estimate run on the engine on Normal-Gamma (the Python backend: the same decision without compiling). A
    target on all of R^d hands over no reflection: its blocks report none, as its numpy steps."""
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
    assert numpy_block(sampler, np.random.default_rng(1), state, np.full(3, 0.01), 0).reflected is None


@pytest.mark.parametrize("sampler_config", [
    "sghmc_shang2015", "sgnht_shang2015", "ccadl_shang2015"])
@pytest.mark.parametrize("population", ["false", "true"])
def test_the_table1_samplers_run_on_the_engine(sampler_config, population):
    """The samplers of ccadl_table1 (Normal-Gamma) as their configs build them run on the engine's blocks."""
    name, params = experiment_sampler(sampler_config, "ccadl_table1", [f"vars.finite_population={population}",
                                                                      "vars.A=10"])
    assert isinstance(make_sampler(name, make_target("normal_gamma"), **params).engine_blocks(PYTHON), Blocks)


def test_a_subclass_runs_on_the_numpy_steps():
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
