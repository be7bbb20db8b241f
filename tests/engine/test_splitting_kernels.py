"""BAOAB's and BADODAB's compiled blocks (sgmcmc/engine/splitting_kernels.py) against their numpy steps (the
reference, sgmcmc/samplers/baoab.py, itself pinned to the papers' update in tests/samplers/test_baoab.py).

Every case runs two consecutive blocks from a fresh state (no kept gradient) twice with the same seed: ``numpy_block``
(``sampler.step`` per step) and ``CompiledBlocks``. The first block checks the first gradient F(θ₀), drawn before the
block's normals (``CompiledKernel.prepare``); the second the kept gradient's hand-over from block to block. Paths,
final states (the kept gradient included) agree to 1e-12, and so do the generators' positions after blocks that
complete (after a failure the run ends: the numpy path stops drawing at the failed step, the compiled one has drawn
the block's normals).
Deliberately broken kernels (F recomputed instead of reused, the hand-over dropped, the normals' slots swapped) are
shown to fail the same comparison.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sgmcmc.engine import splitting_kernels
from sgmcmc.engine.blocks import DIVERGED, FAILED, CompiledBlocks, numpy_block
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

FORMULA_TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec")
SAMPLERS = ("baoab", "badodab")
STEPS = np.linspace(0.05, 0.01, 20)


def _target(name, noise_variance=1.0):
    """The gaussian_2d targets with a full V (the kernel's Cholesky path), the others with a diagonal one."""
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


def _assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def _assert_same_blocks(compiled, reference):
    assert len(compiled) == len(reference)
    for mine, theirs in zip(compiled, reference):
        assert (mine.start, mine.stop, mine.status) == (theirs.start, theirs.stop, theirs.status)
        for field in ("theta", "momentum", "xi"):
            if getattr(theirs, field) is None:  # numpy_block's paths of no step are None, CompiledBlocks' empty
                assert getattr(mine, field) is None or getattr(mine, field).size == 0, field
            else:
                _assert_close(getattr(mine, field), getattr(theirs, field))
        for field in ("theta", "momentum", "xi", "gradient"):
            if getattr(theirs.state, field) is None:
                assert getattr(mine.state, field) is None, field
            else:
                _assert_close(getattr(mine.state, field), getattr(theirs.state, field))


def _pair(sampler, blocks, kernel=None, state=None):
    state = _initial(sampler) if state is None else state
    kernel = sampler.compiled_kernel() if kernel is None else kernel
    assert kernel is not None
    reference, reference_next = _blocks(_numpy(sampler), sampler, state, blocks)
    compiled, compiled_next = _blocks(CompiledBlocks(kernel), sampler, state, blocks)
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
    reference, compiled, reference_next, compiled_next = _pair(sampler, [steps, steps])
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
    reference, compiled, _, _ = _pair(sampler, [np.full(10, 0.001), second])
    assert reference[-1].status == compiled[-1].status == FAILED
    assert reference[-1].stop == compiled[-1].stop == 17
    _assert_same_blocks(compiled, reference)


@pytest.mark.parametrize("name", SAMPLERS)
def test_failure_at_a_runs_first_step_keeps_the_state_given(name):
    """Refused at step 1: no good step, and the block's state is the initial one (no kept gradient), as numpy's."""
    sampler = make_sampler(name, make_target("gaussian_1d", noise_variance=400.0), noise_estimate="known")
    reference, compiled, _, _ = _pair(sampler, [np.full(5, 0.02)])
    assert reference[0].status == compiled[0].status == FAILED
    assert reference[0].stop == compiled[0].stop == 0
    assert reference[0].state.gradient is None and compiled[0].state.gradient is None


@pytest.mark.parametrize("name", SAMPLERS)
def test_divergence_ends_the_second_block_at_the_same_step(name):
    """h = 1.5 blows up the double well in the second block: both stop at the same step with the same message."""
    sampler = make_sampler(name, make_target("double_well", noise_variance=1.0), noise_estimate="zero")
    state = _initial(sampler, n_chains=4)
    reference, compiled, _, _ = _pair(sampler, [np.full(10, 0.01), np.full(60, 1.5)], state=state)
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


# --- the comparison fails for broken kernels ---------------------------------------------------------------------


def _recomputing(sampler, kernel):
    """A kernel that recomputes F(θ_n) = −∇U(θ_n) at the start of each block instead of reusing the kept F."""

    def run(state, normals, step_sizes):
        return kernel.run(state._replace(gradient=sampler.target.gradient(state.theta)), normals, step_sizes)

    return dataclasses.replace(kernel, run=run)


def _swapped(kernel):
    """A kernel reading the gradient noise where the O step's is and the other way round."""
    return dataclasses.replace(kernel, run=lambda state, normals, step_sizes: kernel.run(
        state, np.ascontiguousarray(normals[:, ::-1]), step_sizes))


@pytest.mark.parametrize("name", SAMPLERS)
@pytest.mark.parametrize("broken", ["recompute F every step", "hand-over dropped", "normals swapped"])
def test_broken_kernels_fail_the_comparison(name, broken):
    sampler = make_sampler(name, _target("correlated_2d"))
    kernel = sampler.compiled_kernel()
    blocks = [STEPS, STEPS]
    if broken == "recompute F every step":  # blocks of one step: F recomputed at every step
        kernel, blocks = _recomputing(sampler, kernel), [STEPS[k : k + 1] for k in range(12)]
    elif broken == "hand-over dropped":  # the second block starts from the first's F(θ₀), not its last F
        kernel = dataclasses.replace(kernel, state_paths=())
    else:
        kernel = _swapped(kernel)
    reference, compiled, _, _ = _pair(sampler, blocks, kernel=kernel)
    with pytest.raises(AssertionError):
        _assert_same_blocks(compiled, reference)


# --- where the kernel runs ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SAMPLERS)
def test_run_chains_gives_the_same_samples_compiled_and_on_numpy_steps(name, monkeypatch):
    """A run with blocks of 10 steps (eval_every): the kernel's samples equal the numpy steps'."""
    sampler = make_sampler(name, _target("double_well"))
    settings = RunSettings(n_steps=200, n_chains=5, burn_in=50, eval_every=10, progress=False)

    def samples():
        outcome = run_chains(sampler, Constant(0.05), settings, np.random.default_rng(2))
        assert outcome.status == "completed"
        return outcome.samples

    compiled = samples()
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
    _assert_close(compiled, samples())


def test_no_kernel_where_it_does_not_apply():
    """The generic integrator, a full V̂ with the clip, a data target (bounded, Normal-Gamma) stay on the numpy steps;
    a diagonal V̂ with the clip has a kernel."""
    assert make_sampler("baoab", _target("double_well"), integrator="generic").compiled_kernel() is None
    assert make_sampler("badodab", _target("gaussian_2d_cov"), noise_clip=True).compiled_kernel() is None
    assert make_sampler("badodab", _target("double_well"), noise_clip=True).compiled_kernel() is not None
    for name in SAMPLERS:
        assert make_sampler(name, make_target("normal_gamma"), noise_estimate="zero").compiled_kernel() is None


def test_the_imported_helpers_are_the_ones_cached():
    """numba's cache of splitting_kernels.py does not see a change of the helpers it compiles from kernels.py: their
    digest is written in splitting_kernels.py (a mismatch compiles without the cache and fails here)."""
    digest = splitting_kernels.helpers_digest()
    assert digest == splitting_kernels.HELPERS_DIGEST, (
        f"sgmcmc.engine.kernels' helpers changed: set HELPERS_DIGEST = {digest!r} in sgmcmc/engine/splitting_kernels.py")
    assert splitting_kernels.CACHE


@pytest.mark.parametrize("name", SAMPLERS)
def test_exploration_steps_are_refused(name):
    """The cyclical schedule's exploration steps run on the numpy steps without inject's noise and move θ between
    compiled blocks; BAOAB and BADODAB cannot take them (their O step's noise is theirs alone: ``can_explore``), so
    no kept gradient is left behind a θ that moved. A sampler of theirs that could would need that looked at."""
    from sgmcmc.runner import check_exploration
    from sgmcmc.schedules import Cyclical
    from sgmcmc.schema import ConfigError

    sampler = make_sampler(name, _target("double_well"))
    assert not sampler.can_explore()
    with pytest.raises(ConfigError, match="cannot take its step without the injected noise"):
        check_exploration(sampler, Cyclical(0.1, 100, 2, 0.5))
