"""BAOAB's and BADODAB's integrator on the engine (:func:`sgmcmc.engine.integrators.ou_splitting` in the driver's
blocks), across blocks. The step itself is pinned to the recipe's rows in turn around the exact Ornstein–Uhlenbeck
step, with the kept gradient, in tests/engine/test_driver.py; here, what a run adds: the gradient kept from block to
block.

Every case runs the same steps from a fresh state (no kept gradient) with the same seed as several blocks, each
starting from the last one's state, and as one block (the integrator's source as Python; compiled where a block ends
in a clip, a refusal or a divergence). A block takes the first gradient F(θ₀) in a pass of one step before its own (``Blocks.first_carry``)
and its normals (K, slots, c, d) in step order, so the two consume the same random numbers in the same order: paths,
final states (the kept gradient included) and the generator's position agree to 1e-12 only if each block starts from
the gradient the last one kept. Deliberately broken blocks (F recomputed instead of reused, the hand-over dropped, the
normals' slots swapped) are shown to fail the same comparison.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sgmcmc.engine import driver
from sgmcmc.engine.blocks import DIVERGED, FAILED
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
# BAOAB's friction C and BADODAB's A set to 1: the O step's D' = (1 − e^{−2h})/(2h), between 0.98 and 1 at h ≤ 0.02
UNIT_DIFFUSION = {"baoab": {"friction": 1.0}, "badodab": {"diffusion": 1.0}}


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


def _engine(sampler, backend):
    blocks = sampler.engine_blocks(backend)
    assert blocks is not None and blocks.carry == "gradient"
    return blocks


def _assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def _assert_same_run(pieces, whole):
    """The blocks ``pieces`` against the one block ``whole`` of the same steps: where each ended, the paths end to
    end, and the last state (its kept gradient included)."""
    assert (pieces[0].start, pieces[-1].stop, pieces[-1].status) == (whole.start, whole.stop, whole.status)
    for field in ("theta", "momentum", "xi"):
        if getattr(whole, field) is None:
            assert all(getattr(piece, field) is None for piece in pieces), field
        else:
            _assert_close(np.concatenate([getattr(piece, field) for piece in pieces], axis=1), getattr(whole, field))
    for field in ("theta", "momentum", "xi", "gradient"):
        if getattr(whole.state, field) is None:
            assert getattr(pieces[-1].state, field) is None, field
        else:
            _assert_close(getattr(pieces[-1].state, field), getattr(whole.state, field))


def _pair(sampler, blocks, advance=None, state=None, backend=PYTHON):
    """(the steps as one block, as the blocks ``blocks``, where each left the Generator); ``advance`` replaces the
    engine's blocks for the pieces (the one block is always the engine's)."""
    state = _initial(sampler) if state is None else state
    engine = _engine(sampler, backend)
    (whole,), whole_next = _blocks(engine, sampler, state, [np.concatenate(blocks)])
    pieces, pieces_next = _blocks(engine if advance is None else advance, sampler, state, blocks)
    return whole, pieces, whole_next, pieces_next


@pytest.mark.parametrize("target_name", FORMULA_TARGETS)
@pytest.mark.parametrize("noise", ["known", "zero"])
@pytest.mark.parametrize("name", SAMPLERS)
def test_two_blocks_are_the_one_block_of_their_steps(name, noise, target_name):
    sampler = make_sampler(name, _target(target_name), noise_estimate=noise)
    whole, pieces, whole_next, pieces_next = _pair(sampler, [STEPS, STEPS[::-1]])
    assert [block.stop for block in pieces] == [20, 40] and whole.status is None
    assert whole.state.gradient is not None
    _assert_same_run(pieces, whole)
    assert pieces_next == whole_next  # the same random numbers consumed


def test_small_friction_takes_the_ou_limit():
    """C = 1e-14: (1 − e^{−2hC})/(2hC) at its limit 1, as ``_ou_fraction`` has it (a 0/0 would leave NaN)."""
    sampler = make_sampler("baoab", _target("correlated_2d"), friction=1e-14, noise_estimate="zero")
    whole, pieces, _, _ = _pair(sampler, [STEPS, STEPS])
    assert np.all(np.isfinite(whole.theta))
    _assert_same_run(pieces, whole)


@pytest.mark.parametrize("name", SAMPLERS)
def test_the_clip_zeroes_and_counts_every_o_step_variance_where_the_estimate_exceeds_it(name):
    """V = 400 at h = 0.02: the O step's covariance h(2D' − hV) is negative at every step (2D' < 2 < 8), so the
    diagonal clip sets it to 0 and counts it once per chain and step, in both blocks."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known",
                           noise_clip=True, **UNIT_DIFFUSION[name])
    steps = np.full(20, 0.02)
    whole, pieces, whole_next, pieces_next = _pair(sampler, [steps, steps], backend=COMPILED)
    for block in pieces:
        np.testing.assert_array_equal(block.clipped, np.ones((3, 20), dtype=int))
    _assert_same_run(pieces, whole)
    assert pieces_next == whole_next


@pytest.mark.parametrize("name", SAMPLERS)
def test_not_psd_ends_the_second_block_at_its_first_step(name):
    """The O step's covariance h(2D' − hV) refused at the 8th step of the second block (h = 0.02 with V = 400: 2D' < 2
    < 8; before it h = 0.001: 2D' > 1.99 > 0.4): status failed at step 18, the 17 steps before it kept, and the last good state (its kept gradient included)
    that of the one block of those steps."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known",
                           **UNIT_DIFFUSION[name])
    second = np.concatenate([np.full(7, 0.001), np.full(5, 0.02)])
    whole, pieces, _, _ = _pair(sampler, [np.full(10, 0.001), second], backend=COMPILED)
    assert pieces[-1].status == FAILED and pieces[-1].stop == 17 and pieces[-1].error.startswith("step 18:")
    _assert_same_run(pieces, whole)


@pytest.mark.parametrize("name", SAMPLERS)
def test_failure_at_a_runs_first_step_keeps_the_state_given(name):
    """Refused at step 1: no good step, and the block's state is the initial one (no kept gradient)."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known",
                           **UNIT_DIFFUSION[name])
    state = _initial(sampler)
    whole, pieces, _, _ = _pair(sampler, [np.full(5, 0.02)], state=state, backend=COMPILED)
    assert pieces[0].status == FAILED and pieces[0].stop == 0
    assert pieces[0].state.gradient is None
    _assert_close(pieces[0].state.theta, state.theta)


@pytest.mark.parametrize("name", SAMPLERS)
def test_divergence_ends_the_second_block_at_its_step(name):
    """h = 1.5 blows up the double well in the second block: the run stops at the first non-finite state, says which
    step, and keeps the steps before it, as the one block of the same steps does."""
    sampler = make_sampler(name, make_target("double_well", noise_variance=1.0), noise_estimate="zero")
    state = _initial(sampler, n_chains=4)
    whole, pieces, _, _ = _pair(sampler, [np.full(10, 0.01), np.full(60, 1.5)], state=state, backend=COMPILED)
    assert pieces[-1].status == DIVERGED and 10 < pieces[-1].stop < 70
    assert pieces[-1].error.startswith(f"non-finite state at step {pieces[-1].stop + 1} in ")
    assert pieces[-1].error == whole.error
    _assert_same_run(pieces, whole)


@pytest.mark.parametrize("name", SAMPLERS)
def test_blocks_of_one_step_are_the_one_block_of_their_steps(name):
    """The hand-over at every step: twelve blocks of one step each."""
    sampler = make_sampler(name, _target("correlated_2d"))
    whole, pieces, whole_next, pieces_next = _pair(sampler, [STEPS[k : k + 1] for k in range(12)])
    _assert_same_run(pieces, whole)
    assert pieces_next == whole_next


# --- the comparison fails for broken blocks ----------------------------------------------------------------------


def _recomputing(sampler, blocks):
    """Blocks that recompute F(θ_n) = −∇U(θ_n) at the start of each block instead of reusing the kept F."""
    return lambda rng, state, step_sizes, start: blocks(
        rng, state._replace(gradient=sampler.target.gradient(state.theta)), step_sizes, start)


def _forgetful(blocks):
    """Blocks whose final state keeps the gradient the block started from (on a run's first block, F(θ₀))."""

    def advance(rng, state, step_sizes, start):
        if state.gradient is None:
            state = blocks.first_carry(rng, state).state
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
    whole, pieces, _, _ = _pair(sampler, steps, advance=advance)
    with pytest.raises(AssertionError):
        _assert_same_run(pieces, whole)


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
def test_a_full_estimate_with_the_clip_counts_its_draws_and_fallbacks(name):
    """A full V = 100·[[1, 0.3], [0.3, 0.5]] with the clip: over h = 0.05 … 0.01 some O steps have a Cholesky factor
    and others are eigendecomposed with an eigenvalue clipped (the draw itself is pinned to
    sgmcmc.noise.clipped_gaussian in tests/engine/test_injection.py). One full draw per chain and step is counted, one
    fallback per chain and step with a clipped eigenvalue, and the run is the one block of its steps."""
    sampler = make_sampler(name, make_target("gaussian_2d_cov", noise_variance=[[100.0, 30.0], [30.0, 50.0]]),
                           noise_clip=True)
    before = clip_counters.snapshot()
    pieces, _ = _blocks(_engine(sampler, PYTHON), sampler, _initial(sampler), [STEPS[:10], STEPS[10:]])
    draws, fallbacks = np.subtract(clip_counters.snapshot(), before)
    clipped = np.concatenate([block.clipped for block in pieces], axis=1)
    assert draws == clipped.size == 3 * STEPS.size
    assert 0 < fallbacks == np.count_nonzero(clipped) < draws
    (whole,), _ = _blocks(_engine(sampler, PYTHON), sampler, _initial(sampler), [STEPS])
    _assert_same_run(pieces, whole)
    np.testing.assert_array_equal(clipped, whole.clipped)


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
    """The cyclical schedule's exploration steps run the engine's blocks without inject's noise and move θ between
    blocks; BAOAB and BADODAB cannot take them (their O step's noise is theirs alone: ``can_explore``), so
    no kept gradient is left behind a θ that moved. A sampler of theirs that could would need that looked at."""
    sampler = make_sampler(name, _target("double_well"))
    assert not sampler.can_explore()
    with pytest.raises(ConfigError, match="cannot take its step without the injected noise"):
        check_exploration(sampler, Cyclical(0.1, 100, 2, 0.5))
