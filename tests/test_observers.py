"""The observers of a run's blocks (sgmcmc/observers.py): what they keep does not depend on how the run is cut into
blocks, the incremental trace scores equal a scoring of all samples, and the observers see the same run from the
compiled blocks as from their source run as Python."""

from __future__ import annotations

import time

import numpy as np
import pytest

from sgmcmc.checkpoint import Checkpointer
from sgmcmc.evaluation import Evaluator, RunningScore
from sgmcmc.observers import ProgressObserver, Snapshots, kept_positions
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
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
    run = RunOptions(**{"n_steps": 300, "n_chains": 7, "burn_in": 50, "thin": 3, "eval_every": 40, "progress": False, **settings})
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
def test_a_compiled_run_equals_a_run_of_the_same_source_as_python(name, target):
    """The observers (samples, moments, trace) see the same run from the compiled blocks and from the Python backend."""
    compiled = _outcome(name, target)
    reference = _outcome(name, target, backend="python")
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


# ------------------------------------------------------------------ run.path_statistics and run.snapshot_every


def _path_config(tmp_path, name, **run):
    return {"seed": 4, "sampler": {"name": "sgnht", "step_size": 0.05}, "target": {"name": "double_well"},
            "schedule": {"name": "constant"},
            "run": {"n_steps": 60, "n_chains": 5, "burn_in": 15, "thin": 2, "eval_every": 10, "progress": False,
                    "figures": False, "results_dir": str(tmp_path / name), "checkpoint_every_s": 0.0,
                    "checkpoint_every_steps": 5, "path_statistics": True, "snapshot_every": 7, "snapshot_until": 40, **run}}


def _files(folder) -> dict:
    out = {}
    for name in ("samples", "path_statistics", "snapshots"):
        with np.load(folder / f"{name}.npz") as data:
            out.update({f"{name}.{key}": data[key] for key in data.files})
    return out


@pytest.mark.parametrize("stop_at", [7, 23, 41])
def test_a_stopped_and_resumed_run_writes_the_same_path_statistics_and_snapshots(stop_at, tmp_path, monkeypatch):
    """run_experiment stopped after ``stop_at`` steps (a checkpoint every 5) and resumed from its folder writes
    path_statistics.npz and snapshots.npz equal, bit for bit, to the uninterrupted run's (they are checkpointed)."""
    from sgmcmc import experiment
    from tests.helpers import RequestStopAt

    whole_folder, status = experiment.run_experiment(_path_config(tmp_path, "whole"))
    assert status == "completed"

    def stopping(*args, observers=(), stop_requested=None, **kwargs):
        stop = RequestStopAt(stop_at)
        return run_chains(*args, observers=[*observers, stop], stop_requested=lambda: stop.requested, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(experiment, "run_chains", stopping)
        folder, status = experiment.run_experiment(_path_config(tmp_path, "stopped"))
    assert status == "interrupted"
    assert experiment.run_experiment(_path_config(tmp_path, "stopped", resume=str(folder)))[1] == "completed"
    whole, resumed = _files(whole_folder), _files(folder)
    assert whole.keys() == resumed.keys() == {"samples.theta", "samples.step_size", "samples.xi",
                                              "path_statistics.step", "path_statistics.xi",
                                              "path_statistics.xi2", "path_statistics.r2", "snapshots.step",
                                              "snapshots.theta"}
    for key in whole:
        np.testing.assert_array_equal(whole[key], resumed[key], err_msg=key)


def test_path_statistics_and_snapshots_are_the_run_s_own_chains(tmp_path):
    """Per step, the chain means of ξ, ξ², r·r/d of the run's blocks; θ at step 0 (as run_chains draws it) and every
    7th step up to 40; and the samples are those of a run without the two files."""
    from sgmcmc import experiment
    from sgmcmc.observers import PathObserver

    folder, _ = experiment.run_experiment(_path_config(tmp_path, "run", burn_in=0, thin=1))
    plain, _ = experiment.run_experiment(_path_config(tmp_path, "plain", burn_in=0, thin=1, path_statistics=False,
                                                      snapshot_every=0))
    assert not (plain / "path_statistics.npz").exists() and not (plain / "snapshots.npz").exists()
    with np.load(plain / "samples.npz") as data:
        samples = data["theta"]
    files = _files(folder)
    np.testing.assert_array_equal(files["samples.theta"], samples)
    sampler = build("sgnht", "double_well")
    blocks = PathObserver(lambda block: (block.xi, block.momentum))
    rng = np.random.default_rng(4)
    theta0 = sampler.target.initial_position(5, rng)
    run_chains(sampler, Constant(0.05), RunOptions(n_steps=60, n_chains=5, burn_in=0, eval_every=10, progress=False),
               rng, theta0=theta0, observers=[blocks])
    xi = np.concatenate([x for x, _ in blocks.values], axis=1)
    momentum = np.concatenate([r for _, r in blocks.values], axis=1)
    np.testing.assert_array_equal(files["path_statistics.step"], np.arange(1, 61))
    np.testing.assert_allclose(files["path_statistics.xi"], xi.mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(files["path_statistics.xi2"], (xi**2).mean(axis=0), rtol=1e-14)
    np.testing.assert_allclose(files["path_statistics.r2"], (momentum**2).mean(axis=(0, 2)), rtol=1e-14)
    np.testing.assert_array_equal(files["snapshots.step"], [0, 7, 14, 21, 28, 35])
    np.testing.assert_array_equal(files["snapshots.theta"][:, 0], theta0)
    np.testing.assert_array_equal(files["snapshots.theta"][:, 1:], samples[:, [6, 13, 20, 27, 34]])


def test_clipped_draws_and_their_eigendecompositions_are_counted_per_run():
    """A full V̂ larger than the injected 2D on some directions: every clipped draw is counted, and those without a
    Cholesky factor (a negative eigenvalue) as eigendecompositions; a covariance that stays PSD needs none."""
    from sgmcmc.samplers import make_sampler
    from sgmcmc.targets import make_target

    def counts(noise_variance):
        target = make_target("gaussian_2d_cov", noise_variance=noise_variance)
        sampler = make_sampler("sgld", target, noise_estimate="known", noise_clip=True)
        outcome = run_chains(sampler, Constant(0.05), RunOptions(n_steps=30, n_chains=4, burn_in=0, progress=False),
                             np.random.default_rng(0))
        return outcome.clip_draws, outcome.clip_decompositions, outcome.noise_clips

    assert counts([[60.0, 20.0], [20.0, 30.0]]) == (120, 120, 120)  # ε(2 − εV) has one negative eigenvalue
    assert counts([[1.0, 0.5], [0.5, 1.0]]) == (120, 0, 0)


def test_the_progress_bar_draws_its_last_line_once_when_the_output_is_not_a_terminal(monkeypatch, capsys):
    """Where stderr is a pipe or a file, a carriage return does not erase the line before it: a last line drawn by the
    final block and drawn again when the bar closes shows twice. The bar is made to draw at once and at every block."""
    import tqdm.std

    drawing = tqdm.std.tqdm.__init__

    def at_once(bar, *args, **kwargs):
        drawing(bar, *args, **{**kwargs, "delay": 0, "mininterval": 0, "miniters": 1})

    monkeypatch.setattr(tqdm.std.tqdm, "__init__", at_once)
    outcome = _outcome("sgld", "double_well", progress=True)
    assert outcome.steps_done == 300
    lines = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line.strip()]
    assert len(lines) > 2, lines  # the bar was drawn along the way
    assert sum("300/300" in line for line in lines) == 1, lines


def test_a_progress_bar_due_during_its_last_block_is_drawn_once(capsys):
    """A run whose delay passes during its last block: the last block only moves the count, and close draws it."""
    from types import SimpleNamespace

    progress = ProgressObserver(SimpleNamespace(rows=[]), total=5, delay=0.01)
    time.sleep(0.02)
    progress.update(SimpleNamespace(stop=5))
    progress.close()
    lines = [line for line in capsys.readouterr().err.replace("\r", "\n").splitlines() if line.strip()]
    assert len(lines) == 1 and "5/5" in lines[0], lines


# ------------------------------------------------- Gibbs steps and the averaged predictive (SGHMC paper T11/T12)

def test_gibbs_within_sgld_samples_the_hierarchical_joint():
    """SGLD on θ with a Gibbs step of λ every 10 steps leaves the joint invariant: at the end, 2,000 independent
    chains give λ ~ Gamma(3, 3) and θ_i ~ Student t(6) with scale 1 (KS tests). Holding λ at 1 instead gives θ ~ N(0, 1),
    and E θ² = 1 instead of 6/4 · 1 = 1.5, which the second-moment check rejects: it sees a Gibbs step that does nothing
    (E θ² over 8,000 draws has a standard error of about 0.04 at the t's kurtosis 6)."""
    from scipy import stats

    from sgmcmc.samplers import make_sampler
    from tests.helpers import HierarchicalGaussian

    settings = RunOptions(n_steps=3000, n_chains=2000, burn_in=2000, thin=1000, eval_every=1000, progress=False)
    target = HierarchicalGaussian(shape=3.0, rate=3.0, gibbs_every=10)
    outcome = run_chains(make_sampler("sgld", target, noise_estimate="zero"), Constant(0.01), settings,
                         np.random.default_rng(0))
    assert outcome.status == "completed"
    precisions = target.hyperparameters()["precision_a"]
    assert stats.kstest(precisions, stats.gamma(3.0, scale=1 / 3.0).cdf).pvalue > 1e-3
    student = stats.t(6.0)
    assert stats.kstest(outcome.final_theta[:, 0], student.cdf).pvalue > 1e-3
    assert stats.kstest(outcome.final_theta[:, 2], student.cdf).pvalue > 1e-3
    assert np.mean(outcome.final_theta**2) == pytest.approx(1.5, abs=0.15)
    frozen = HierarchicalGaussian(shape=3.0, rate=3.0, gibbs_every=0)  # no Gibbs step: λ stays at its initial 1
    still = run_chains(make_sampler("sgld", frozen, noise_estimate="zero"), Constant(0.01), settings,
                       np.random.default_rng(0))
    assert abs(np.mean(still.final_theta**2) - 1.5) > 0.3


def test_gibbs_steps_come_every_k_steps_and_enter_the_trace():
    from sgmcmc.samplers import make_sampler
    from sgmcmc.observers import PathObserver
    from tests.helpers import HierarchicalGaussian

    target = HierarchicalGaussian(gibbs_every=7)
    calls = []
    original = target.gibbs_update
    target.gibbs_update = lambda theta, rng, mode=False: (calls.append(theta.copy()), original(theta, rng, mode))
    ends = PathObserver(lambda block: block.stop)
    settings = RunOptions(n_steps=50, n_chains=3, burn_in=10, eval_every=10, progress=False)
    outcome = run_chains(make_sampler("sgld", target, noise_estimate="zero"), Constant(0.05), settings,
                         np.random.default_rng(1), observers=[ends])
    assert len(calls) == 50 // 7 and set(range(7, 50, 7)) <= set(ends.values)  # blocks end at every Gibbs step
    assert all("precision_a" in row and "precision_b" in row for row in outcome.trace)
    assert outcome.hyperparameters == {name: float(np.mean(v)) for name, v in target.hyperparameters().items()}


@pytest.mark.parametrize("name", ["baoab", "badodab"])
def test_a_gibbs_step_drops_the_kept_gradient_of_the_old_hyperparameters(name):
    """BAOAB and BADODAB reuse the last step's ∇Ũ(θ) for their next first half kick. After a Gibbs step of λ (every 7
    steps) that gradient is λ_old·θ₇ (λ_old = 1, the initial precisions): the run continues from a state without it,
    and step 8 kicks with the gradient at the new λ. Checked from the states at steps 7 and 8 alone (noise-free
    gradients, h = 0.05): both samplers start a step with B then A and end it with A then B, so
    r₂ = r₈ + (h/2)λ_new θ₈, θ₁ = θ₈ − (h/2)r₂, r₁ = (θ₁ − θ₇)/(h/2), and the kick's gradient is (r₇ − r₁)/(h/2),
    which must be λ_new θ₇ (with the stale gradient it is θ₇)."""
    from sgmcmc.observers import PathObserver
    from sgmcmc.samplers import make_sampler
    from tests.helpers import HierarchicalGaussian

    half = 0.025
    target = HierarchicalGaussian(gibbs_every=7)
    seen = PathObserver(lambda block: (block.stop, block.state.gradient, block.state.theta, block.state.momentum,
                                       {key: value.copy() for key, value in target.hyperparameters().items()}))
    settings = RunOptions(n_steps=8, n_chains=3, burn_in=0, eval_every=8, progress=False)
    outcome = run_chains(make_sampler(name, target, noise_estimate="zero"), Constant(2 * half), settings,
                         np.random.default_rng(3), observers=[seen])
    assert outcome.status == "completed"
    records = {stop: rest for stop, *rest in seen.values}
    assert {7, 8} <= set(records)  # the Gibbs step (every 7) ends a block
    kept, theta7, momentum7, values = records[7]
    assert kept is None
    precision = np.repeat(np.stack([values["precision_a"], values["precision_b"]], axis=1), 2, axis=1)
    assert np.max(np.abs(precision - 1.0)) > 0.05  # the Gibbs step moved λ: the old and new gradients differ
    kept, theta8, momentum8, _ = records[8]
    np.testing.assert_allclose(kept, precision * theta8, rtol=1e-12)
    momentum2 = momentum8 + half * precision * theta8
    momentum1 = ((theta8 - half * momentum2) - theta7) / half
    kicked_with = (momentum7 - momentum1) / half
    np.testing.assert_allclose(kicked_with, precision * theta7, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("name, averaged", [("sghmc", True), ("sgd_momentum", False)])
def test_the_predictive_averages_one_prediction_per_interval_after_burn_in(name, averaged):
    """A sampler's predictive metric is that of the mean of the predictions at steps 25, 30, …, 60 (burn-in 20,
    every 5); an optimiser's is the last point's own."""
    from sgmcmc.observers import Snapshots
    from sgmcmc.samplers import make_sampler
    from tests.helpers import HierarchicalGaussian

    target = HierarchicalGaussian(noise_variance=0.5, gibbs_every=0, predict_every=5)
    snapshots = Snapshots(4, 4, every=5)
    settings = RunOptions(n_steps=60, n_chains=4, burn_in=20, eval_every=10, progress=False)
    sampler = make_sampler(name, target, **({"noise_estimate": "zero"} if name == "sghmc" else {}))
    outcome = run_chains(sampler, Constant(0.05), settings, np.random.default_rng(2), observers=[snapshots])
    arrays = snapshots.arrays()
    kept = arrays["step"] > 20 if averaged else arrays["step"] == 60
    expected = arrays["theta"][:, kept, 0].mean(axis=1)  # per chain, then the mean over chains
    assert outcome.predictive["first"] == pytest.approx(expected.mean(), rel=1e-12)
    assert outcome.predictive["predictions_averaged"] == (8 if averaged else 0)
    assert outcome.predictive["first_sd"] == pytest.approx(np.std(expected, ddof=1), rel=1e-12)
    rows = {row["step"]: row for row in outcome.trace}
    assert all("first" in rows[step] for step in (10, 20, 30, 40, 50, 60))


def test_an_optimiser_keeps_the_initial_hyperparameters():
    """No Gibbs step for an optimiser (sgmcmc.runner.run_chains says why): the precisions stay at 1, nothing is drawn for
    them, and its run equals the same run on a target that has no Gibbs step at all."""
    from sgmcmc.samplers import make_sampler
    from tests.helpers import HierarchicalGaussian

    settings = RunOptions(n_steps=40, n_chains=3, burn_in=10, eval_every=10, progress=False)
    with_gibbs, without = HierarchicalGaussian(gibbs_every=5), HierarchicalGaussian(gibbs_every=0)
    outcomes = [run_chains(make_sampler("sgd", target), Constant(0.05), settings, np.random.default_rng(4))
                for target in (with_gibbs, without)]
    assert outcomes[0].hyperparameters == {"precision_a": 1.0, "precision_b": 1.0}
    np.testing.assert_array_equal(outcomes[0].final_theta, outcomes[1].final_theta)


def test_a_run_starts_from_the_initial_hyperparameters_and_an_optimiser_may_take_the_mode():
    """Two runs in a row on one target equal two runs on fresh targets (each starts from λ = 1); with
    optimiser_hyperparameters = "mode" an optimiser's last Gibbs step sets λ to the conditional's mode at that θ."""
    from sgmcmc.samplers import make_sampler
    from tests.helpers import HierarchicalGaussian

    settings = RunOptions(n_steps=40, n_chains=3, burn_in=10, eval_every=10, progress=False)
    shared = HierarchicalGaussian(noise_variance=0.5, gibbs_every=5)
    again = [run_chains(make_sampler("sgld", shared, noise_estimate="zero"), Constant(0.05), settings,
                        np.random.default_rng(4)) for _ in range(2)]
    fresh = run_chains(make_sampler("sgld", HierarchicalGaussian(noise_variance=0.5, gibbs_every=5),
                                    noise_estimate="zero"), Constant(0.05), settings, np.random.default_rng(4))
    for outcome in again:
        np.testing.assert_array_equal(outcome.final_theta, fresh.final_theta)
        assert outcome.hyperparameters == fresh.hyperparameters
    target = HierarchicalGaussian(noise_variance=0.5, gibbs_every=5)
    target.optimiser_hyperparameters = "mode"
    snapshots = Snapshots(3, 4, every=35, until=35)
    run_chains(make_sampler("sgd", target), Constant(0.05), settings, np.random.default_rng(4), observers=[snapshots])
    theta = snapshots.arrays()["theta"][:, 0]  # θ after step 35, the last Gibbs step (none at the last step, 40)
    shape, rate = 3.0 + 2 / 2, 3.0 + 0.5 * np.sum(theta[:, :2] ** 2, axis=1)  # Gamma(3, 3) prior, 2 coordinates
    np.testing.assert_allclose(target.hyperparameters()["precision_a"], (shape - 1) / rate)
