"""BAOAB's and BADODAB's integrator on the engine (:func:`sgmcmc.engine.integrators.ou_splitting` in the driver's
blocks) against their numpy steps (the reference, sgmcmc/samplers/baoab.py, itself pinned to the papers' update in
tests/samplers/test_baoab.py).

Every case runs two consecutive blocks from a fresh state (no kept gradient) twice with the same seed: ``numpy_block``
(``sampler.step`` per step) and the engine's ``Blocks`` (the integrator's source as Python on every target and noise
estimate; compiled where a block ends in a clip, a refusal or a divergence). A run of every sampler gives the same
samples compiled and as Python (that the runner hands the blocks over whole, not an independent truth). The first block
checks the
first gradient F(θ₀), drawn before the block's normals (``Blocks.prepare``); the second the kept gradient's hand-over
from block to block (the driver's carried vector). Paths, final states (the kept gradient included) agree to 1e-12, and
so do the generators' positions after blocks that complete (after a failure the run ends: the numpy path stops drawing
at the failed step, the engine has drawn the block's normals).
Deliberately broken blocks (F recomputed instead of reused, the hand-over dropped, the normals' slots swapped) are
shown to fail the same comparison.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sgmcmc.engine import driver
from sgmcmc.engine.blocks import DIVERGED, FAILED, numpy_block
from sgmcmc.engine.driver import COMPILED, PYTHON
from sgmcmc.config import RunOptions
from sgmcmc.noise import clip_counters
from sgmcmc.runner import check_exploration, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant, Cyclical
from sgmcmc.schema import ConfigError
from sgmcmc.targets import make_target

FORMULA_TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec")
SAMPLERS = ("baoab", "badodab")
STEPS = np.linspace(0.05, 0.01, 20)


def _target(name, noise_variance=1.0):
    """The gaussian_2d targets with a full V (the full V̂ of the injected noise), the others with a diagonal one."""
    return make_target(name, noise_variance=[[1.0, 0.3], [0.3, 0.5]] if name.startswith("gaussian_2d") else noise_variance)


def _initial(sampler, n_chains=3, seed=5):
    rng = np.random.default_rng(seed)
    state = sampler.init(sampler.target.initial_position(n_chains, rng), rng)
    if state.xi is not None:  # BADODAB: both signs of ξ
        state = state._replace(xi=np.linspace(-0.8, 2.5, n_chains))
    assert state.gradient is None
    return state


def _blocks(advance, sampler, state, blocks, seed=6):
    """Consecutive blocks with one Generator: ``advance(rng, state, step_sizes, start)``; returns the blocks and the
    Generator's next draw (where each path left the stream)."""
    rng = np.random.default_rng(seed)
    out, start = [], 0
    for step_sizes in blocks:
        block = advance(rng, state, step_sizes, start)
        out.append(block)
        if block.status is not None:
            break
        state, start = block.state, block.stop
    return out, rng.random()


def _numpy(sampler):
    return lambda rng, state, step_sizes, start: numpy_block(sampler, rng, state, step_sizes, start)


def _engine(sampler, backend):
    blocks = sampler.engine_blocks(backend)
    assert blocks is not None and blocks.carry == "gradient"
    return blocks


def _assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def _assert_same_blocks(compiled, reference):
    assert len(compiled) == len(reference)
    for mine, theirs in zip(compiled, reference):
        assert (mine.start, mine.stop, mine.status) == (theirs.start, theirs.stop, theirs.status)
        for field in ("theta", "momentum", "xi"):
            if getattr(theirs, field) is None:  # numpy_block's paths of no step are None, the engine's empty
                assert getattr(mine, field) is None or getattr(mine, field).size == 0, field
            else:
                _assert_close(getattr(mine, field), getattr(theirs, field))
        for field in ("theta", "momentum", "xi", "gradient"):
            if getattr(theirs.state, field) is None:
                assert getattr(mine.state, field) is None, field
            else:
                _assert_close(getattr(mine.state, field), getattr(theirs.state, field))


def _pair(sampler, blocks, advance=None, state=None, backend=PYTHON):
    """(numpy blocks, the engine's blocks, where each left the Generator); ``advance`` replaces the engine's."""
    state = _initial(sampler) if state is None else state
    advance = _engine(sampler, backend) if advance is None else advance
    reference, reference_next = _blocks(_numpy(sampler), sampler, state, blocks)
    compiled, compiled_next = _blocks(advance, sampler, state, blocks)
    return reference, compiled, reference_next, compiled_next


@pytest.mark.parametrize("target_name", FORMULA_TARGETS)
@pytest.mark.parametrize("noise", ["known", "zero"])
@pytest.mark.parametrize("name", SAMPLERS)
def test_two_blocks_equal_the_numpy_steps(name, noise, target_name):
    sampler = make_sampler(name, _target(target_name), noise_estimate=noise)
    reference, compiled, reference_next, compiled_next = _pair(sampler, [STEPS, STEPS[::-1]])
    assert [block.stop for block in reference] == [20, 40] and reference[-1].status is None
    assert reference[-1].state.gradient is not None
    _assert_same_blocks(compiled, reference)
    assert compiled_next == reference_next  # the same random numbers consumed


def test_small_friction_takes_the_ou_limit():
    """C = 1e-14: (1 − e^{−2hC})/(2hC) at its limit 1, as ``ou_fraction`` has it."""
    sampler = make_sampler("baoab", _target("correlated_2d"), friction=1e-14, noise_estimate="zero")
    reference, compiled, _, _ = _pair(sampler, [STEPS, STEPS])
    _assert_same_blocks(compiled, reference)


@pytest.mark.parametrize("name", SAMPLERS)
def test_clipped_counts_equal(name):
    """V = 400 exceeds the O step's variance at h = 0.02: the diagonal clip sets it to 0 and counts it."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known", noise_clip=True)
    steps = np.full(20, 0.02)
    reference, compiled, reference_next, compiled_next = _pair(sampler, [steps, steps], backend=COMPILED)
    assert sum(block.clipped.sum() for block in reference) > 0
    for mine, theirs in zip(compiled, reference):
        np.testing.assert_array_equal(mine.clipped, theirs.clipped)
    _assert_same_blocks(compiled, reference)
    assert compiled_next == reference_next


@pytest.mark.parametrize("name", SAMPLERS)
def test_not_psd_ends_the_second_block_at_the_same_step(name):
    """The O step's covariance refused at the 8th step of the second block (h = 0.02 with V = 400): status failed at
    the same step, the same last good state (its kept gradient included)."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known")
    second = np.concatenate([np.full(7, 0.001), np.full(5, 0.02)])
    reference, compiled, _, _ = _pair(sampler, [np.full(10, 0.001), second], backend=COMPILED)
    assert reference[-1].status == compiled[-1].status == FAILED
    assert reference[-1].stop == compiled[-1].stop == 17
    _assert_same_blocks(compiled, reference)


@pytest.mark.parametrize("name", SAMPLERS)
def test_failure_at_a_runs_first_step_keeps_the_state_given(name):
    """Refused at step 1: no good step, and the block's state is the initial one (no kept gradient), as numpy's."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known")
    reference, compiled, _, _ = _pair(sampler, [np.full(5, 0.02)], backend=COMPILED)
    assert reference[0].status == compiled[0].status == FAILED
    assert reference[0].stop == compiled[0].stop == 0
    assert reference[0].state.gradient is None and compiled[0].state.gradient is None


@pytest.mark.parametrize("name", SAMPLERS)
def test_divergence_ends_the_second_block_at_the_same_step(name):
    """h = 1.5 blows up the double well in the second block: both stop at the same step with the same message."""
    sampler = make_sampler(name, make_target("double_well", noise_variance=1.0), noise_estimate="zero")
    state = _initial(sampler, n_chains=4)
    reference, compiled, _, _ = _pair(sampler, [np.full(10, 0.01), np.full(60, 1.5)], state=state, backend=COMPILED)
    assert reference[-1].status == compiled[-1].status == DIVERGED
    assert 10 < reference[-1].stop == compiled[-1].stop < 70
    assert reference[-1].error == compiled[-1].error
    _assert_same_blocks(compiled, reference)


@pytest.mark.parametrize("name", SAMPLERS)
def test_blocks_of_one_step_equal_the_numpy_steps(name):
    """The hand-over at every step: twelve blocks of one step each."""
    sampler = make_sampler(name, _target("correlated_2d"))
    reference, compiled, reference_next, compiled_next = _pair(sampler, [STEPS[k : k + 1] for k in range(12)])
    _assert_same_blocks(compiled, reference)
    assert compiled_next == reference_next


# --- the comparison fails for broken blocks ----------------------------------------------------------------------


def _recomputing(sampler, blocks):
    """Blocks that recompute F(θ_n) = −∇U(θ_n) at the start of each block instead of reusing the kept F."""
    return lambda rng, state, step_sizes, start: blocks(
        rng, state._replace(gradient=sampler.target.gradient(state.theta)), step_sizes, start)


def _forgetful(blocks):
    """Blocks whose final state keeps the gradient the block started from (on a run's first block, F(θ₀))."""

    def advance(rng, state, step_sizes, start):
        if state.gradient is None:
            state = blocks.prepare(rng, state)
        block = blocks(rng, state, step_sizes, start)
        return dataclasses.replace(block, state=block.state._replace(gradient=state.gradient))

    return advance


class _SwappedSlots:
    """A Generator whose blocks of normals (K, slots, c, d) have their two slots swapped: the O step reads the
    gradient noise's normals and the other way round."""

    def __init__(self, rng):
        self.rng = rng

    def standard_normal(self, size=None):
        values = self.rng.standard_normal(size)
        return np.ascontiguousarray(values[:, ::-1]) if np.ndim(values) == 4 else values

    def __getattr__(self, name):
        return getattr(self.rng, name)


@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("broken", ["recompute F every step", "hand-over dropped", "normals swapped"])
def test_broken_blocks_fail_the_comparison(name, broken):
    sampler = make_sampler(name, _target("correlated_2d"))
    blocks = _engine(sampler, PYTHON)
    steps = [STEPS, STEPS]
    if broken == "recompute F every step":  # blocks of one step: F recomputed at every step
        advance, steps = _recomputing(sampler, blocks), [STEPS[k : k + 1] for k in range(12)]
    elif broken == "hand-over dropped":  # the second block starts from the first's F(θ₀), not its last F
        advance = _forgetful(blocks)
    else:
        def advance(rng, state, step_sizes, start):
            return blocks(_SwappedSlots(rng), state, step_sizes, start)
    reference, compiled, _, _ = _pair(sampler, steps, advance=advance)
    with pytest.raises(AssertionError):
        _assert_same_blocks(compiled, reference)


# --- where the engine runs -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLERS)
def test_run_chains_gives_the_same_samples_compiled_and_as_python(name):
    """A run with blocks of 10 steps (eval_every): the compiled blocks' samples equal their source's run as Python."""
    sampler = make_sampler(name, _target("double_well"))

    def samples(backend):
        settings = RunOptions(n_steps=200, n_chains=5, burn_in=50, eval_every=10, progress=False, backend=backend)
        outcome = run_chains(sampler, Constant(0.05), settings, np.random.default_rng(2))
        assert outcome.status == "completed"
        return outcome.samples

    _assert_close(samples(COMPILED), samples(PYTHON))


def test_engine_blocks_where_they_apply_and_not_elsewhere():
    """The generic integrator is the recipe's step, not the engine's; a V̂ with the clip runs on the engine (diagonal
    here, full in the next test), and so do SVRG's estimator with the known V(θ₁) about each chain's own centre, a data
    model with a boundary (Normal-Gamma, its reflection pinned in tests/engine/test_estimators.py) and one on all of
    R^d (Welling & Teh's mixture)."""
    from sgmcmc.gradient_estimators import make_estimator

    assert make_sampler("baoab", _target("double_well"), integrator="generic").engine_blocks(PYTHON) is None
    assert make_sampler("badodab", _target("double_well"), noise_clip=True).engine_blocks(PYTHON) is not None
    for name in SAMPLERS:
        assert make_sampler(name, make_estimator("svrg", make_target("normal_gamma"))).engine_blocks(PYTHON)
        assert make_sampler(name, make_target("normal_gamma"), noise_estimate="zero").engine_blocks(PYTHON)
        assert make_sampler(name, make_target("welling_teh_mixture"), noise_estimate="zero").engine_blocks(PYTHON)


@pytest.mark.parametrize("name", SAMPLERS)
def test_a_full_estimate_with_the_clip_equals_the_numpy_steps(name):
    """A full V = 100·[[1, 0.3], [0.3, 0.5]] with the clip: over h = 0.05 … 0.01 some O steps have a Cholesky factor
    and others are eigendecomposed with an eigenvalue clipped (sgmcmc.noise.clipped_gaussian); samples, clipped
    counts and the draws counted are the numpy steps'."""
    sampler = make_sampler(name, make_target("gaussian_2d_cov", noise_variance=[[100.0, 30.0], [30.0, 50.0]]),
                           noise_clip=True)
    before = clip_counters.snapshot()
    reference, _ = _blocks(_numpy(sampler), sampler, _initial(sampler), [STEPS])
    middle = clip_counters.snapshot()
    compiled, _ = _blocks(_engine(sampler, PYTHON), sampler, _initial(sampler), [STEPS])
    after = clip_counters.snapshot()
    draws, fallbacks = np.subtract(middle, before)
    assert 0 < fallbacks < draws and reference[0].clipped.sum() > 0
    _assert_same_blocks(compiled, reference)
    np.testing.assert_array_equal(compiled[0].clipped, reference[0].clipped)
    assert tuple(np.subtract(after, middle)) == (draws, fallbacks)


@pytest.mark.parametrize("name", SAMPLERS)
def test_the_compiled_block_is_the_python_source(name):
    """Two blocks compiled and as Python on the same random numbers: the same bits."""
    sampler = make_sampler(name, _target("double_well"))
    _, compiled, _, compiled_next = _pair(sampler, [STEPS, STEPS], backend=COMPILED)
    _, python, _, python_next = _pair(sampler, [STEPS, STEPS], backend=PYTHON)
    for mine, theirs in zip(compiled, python):
        for field in ("theta", "momentum", "xi"):
            np.testing.assert_array_equal(getattr(mine, field), getattr(theirs, field))
        np.testing.assert_array_equal(mine.state.gradient, theirs.state.gradient)
    assert compiled_next == python_next


@pytest.mark.validate  # a block compiled per combination of options (seconds each): the long tier
@pytest.mark.parametrize("name", SAMPLERS)
def test_a_block_compiled_for_its_options_gives_the_generic_blocks_samples(name, monkeypatch):
    """Runs compile a block per combination of options as integer literals (driver.SPECIALISE); the test suite
    compiles one for all. The two give the same bits."""
    sampler = make_sampler(name, _target("gaussian_2d_cov"), noise_estimate="known")
    runs = []
    for specialise in (True, False):
        monkeypatch.setattr(driver, "SPECIALISE", specialise)
        runs.append(_pair(sampler, [STEPS, STEPS], backend=COMPILED)[1])
    for mine, theirs in zip(*runs):
        np.testing.assert_array_equal(mine.theta, theirs.theta)
        np.testing.assert_array_equal(mine.momentum, theirs.momentum)


@pytest.mark.parametrize("name", SAMPLERS)
def test_exploration_steps_are_refused(name):
    """The cyclical schedule's exploration steps run on the numpy steps without inject's noise and move θ between
    compiled blocks; BAOAB and BADODAB cannot take them (their O step's noise is theirs alone: ``can_explore``), so
    no kept gradient is left behind a θ that moved. A sampler of theirs that could would need that looked at."""
    sampler = make_sampler(name, _target("double_well"))
    assert not sampler.can_explore()
    with pytest.raises(ConfigError, match="cannot take its step without the injected noise"):
        check_exploration(sampler, Cyclical(0.1, 100, 2, 0.5))
