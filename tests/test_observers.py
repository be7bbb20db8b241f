"""The observers of a run's blocks (sgmcmc/observers.py): what they keep does not depend on how the run is cut into
blocks, the incremental trace scores equal a scoring of all samples, and a compiled run equals a numpy-step run."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.checkpoint import Checkpointer
from sgmcmc.evaluation import Evaluator, RunningScore
from sgmcmc.observers import kept_positions
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.schedules import Constant, Polynomial
from tests.helpers import build


@pytest.mark.parametrize("start, stop, burn_in, thin", [(0, 10, 0, 1), (0, 10, 3, 2), (4, 17, 3, 3), (20, 25, 30, 2),
                                                        (29, 40, 30, 4)])
def test_kept_positions_are_the_kept_steps(start, stop, burn_in, thin):
    steps = np.arange(start + 1, stop + 1)
    expected = [t - start - 1 for t in steps if t > burn_in and (t - burn_in) % thin == 0]
    np.testing.assert_array_equal(kept_positions(start, stop, burn_in, thin), expected)


def _outcome(name, target, tmp_path=None, every_steps=0, **settings):
    sampler = build(name, target)
    checkpointer = Checkpointer(tmp_path, "hash", every_steps=every_steps) if every_steps else None
    run = RunSettings(**{"n_steps": 300, "n_chains": 7, "burn_in": 50, "thin": 3, "eval_every": 40, "progress": False, **settings})
    return run_chains(sampler, Polynomial(0.05, b=100.0), run, np.random.default_rng(11), Evaluator(sampler.target),
                      checkpointer=checkpointer)


@pytest.mark.parametrize("name, target", [("sgnht", "double_well"), ("sghmc", "correlated_2d"), ("hmc", "gaussian_1d")])
def test_cutting_the_run_into_other_blocks_changes_no_bit(name, target, tmp_path):
    """Periodic checkpoints every 7 steps end a block there: samples, moments, ξ and the trace stay bit for bit."""
    whole = _outcome(name, target)
    cut = _outcome(name, target, tmp_path, every_steps=7)
    np.testing.assert_array_equal(whole.samples, cut.samples)
    np.testing.assert_array_equal(whole.moments.mean, cut.moments.mean)
    np.testing.assert_array_equal(whole.moments.covariance(), cut.moments.covariance())
    assert (whole.thermostat_mean, whole.thermostat_se, whole.acceptance_rate) == (cut.thermostat_mean, cut.thermostat_se,
                                                                                    cut.acceptance_rate)
    assert str(whole.trace) == str(cut.trace)


@pytest.mark.parametrize("name, target", [("sgld", "gaussian_1d"), ("sgrhmc", "correlated_2d"), ("sgnht", "double_well")])
def test_a_compiled_run_equals_a_numpy_step_run(name, target, monkeypatch):
    compiled = _outcome(name, target)
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
    reference = _outcome(name, target)
    np.testing.assert_allclose(compiled.samples, reference.samples, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(compiled.moments.mean, reference.moments.mean, rtol=1e-11, atol=1e-11)
    assert [row["step"] for row in compiled.trace] == [row["step"] for row in reference.trace]
    for got, expected in zip(compiled.trace, reference.trace):
        assert got.keys() == expected.keys()
        np.testing.assert_allclose(list(got.values()), list(expected.values()), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("target", ["double_well", "correlated_2d", "normal_gamma"])
def test_running_scores_equal_a_scoring_of_all_samples(target):
    """Counts added block by block give the KL, moment errors and marginal RMSE of the pooled samples (W1 when asked)."""
    sampler = build("sgld", target)
    evaluator = Evaluator(sampler.target)
    rng = np.random.default_rng(0)
    samples = sampler.target.initial_position(5, rng)[:, None, :] + 0.3 * rng.standard_normal((5, 120, sampler.target.dim))
    running = RunningScore(evaluator, 5)
    for start in range(0, 120, 17):
        running.update(samples[:, start : start + 17])
    pooled = samples.reshape(-1, sampler.target.dim)
    expected = evaluator.score(pooled)
    got = running.score(pooled)
    assert got.keys() == expected.keys()
    for key in expected:
        assert got[key] == pytest.approx(expected[key], rel=1e-12, abs=1e-12), key
    assert "w1" not in running.score()


def test_trace_is_linear_in_the_run_length():
    """W1 (which sorts every sample) is computed at trace rows 1, 2, 4, 8, … and the last row only."""
    outcome = _outcome("sgld", "double_well", n_steps=1000, eval_every=50, burn_in=0, thin=1)
    rows_with_w1 = [index + 1 for index, row in enumerate(outcome.trace) if "w1" in row]
    assert rows_with_w1 == [1, 2, 4, 8, 16, 20]
    assert all("kl_pq" in row for row in outcome.trace)
