"""The cyclical schedule's exploration phase (Zhang et al. 2020, Eq. 1 and Algorithm 1; ``schedule.exploration``):
which steps explore and their step sizes (Eq. 1 written out here), that exploration steps inject no noise and keep no
samples (against hand-written loops of SGLD and SGHMC, on the engine's blocks), that a
run stopped in either phase resumes bit for bit, that the compiled blocks and their source as Python agree, and that a
sampler which cannot explore refuses the key in one line."""

import math
from dataclasses import replace

import numpy as np
import pytest

from sgmcmc.checkpoint import load_latest
from sgmcmc.checkpoint import Checkpointer
from sgmcmc.config import ConfigError
from sgmcmc.engine.driver import Blocks
from sgmcmc.evaluation import Evaluator
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.schedules import make_schedule
from tests.helpers import RequestStopAt, build
from tests.test_checkpoint import _assert_same


def eq1(k: int, step_size: float, n_steps: int, n_cycles: int) -> float:
    """Zhang et al. (2020) Eq. 1 at the paper's 1-based iteration k."""
    length = math.ceil(n_steps / n_cycles)
    return step_size / 2 * (math.cos(math.pi * ((k - 1) % length) / length) + 1)


def test_phases_and_step_sizes_follow_eq_1_and_algorithm_1():
    # K = 20, M = 4: cycles of 5; β = 0.4 → r = 0, 0.2 explore, 0.4 (not < 0.4), 0.6, 0.8 sample
    schedule = make_schedule("cyclical", 0.5, 20, n_cycles=4, exploration=0.4)
    assert [t for t in range(20) if schedule.exploring(t)] == [0, 1, 5, 6, 10, 11, 15, 16]
    assert [schedule(t) for t in range(20)] == pytest.approx([eq1(t + 1, 0.5, 20, 4) for t in range(20)], abs=1e-15)
    assert schedule(0) == 0.5 and schedule(5) == 0.5  # every cycle restarts at ε₀
    # K/M not an integer: L = ⌈10/3⌉ = 4, the last cycle short; β = 0.3 → r = 0, 0.25 explore
    schedule = make_schedule("cyclical", 1.0, 10, n_cycles=3, exploration=0.3)
    assert [t for t in range(10) if schedule.exploring(t)] == [0, 1, 4, 5, 8, 9]
    assert [schedule.phase_end(t) for t in (0, 1, 2, 3, 4, 8)] == [2, 2, 4, 4, 6, 10]
    # β = 0 (the default): no step explores, one phase
    schedule = make_schedule("cyclical", 1.0, 10, n_cycles=3)
    assert not any(schedule.exploring(t) for t in range(10)) and schedule.phase_end(3) == 10


def _settings(n_steps=20, burn_in=0, thin=1):
    return RunOptions(n_steps=n_steps, n_chains=3, burn_in=burn_in, thin=thin, eval_every=5, progress=False)


THETA0 = np.array([[0.5, -0.3], [1.0, 1.0], [-2.0, 0.1]])


def test_sgld_exploration_steps_are_gradient_steps_and_keep_no_samples():
    """Against a hand-written loop: θ' = θ − ε∇Ũ in exploration steps, θ' = θ − ε∇Ũ + √(2ε) z in sampling steps
    (noise_estimate zero), the same normals drawn in both; the kept states are the sampling steps' only. On the
    engine's blocks (Blocks.without_noise)."""
    sampler = build("sgld", "gaussian_2d_cov", {"noise_variance": 0.5}, noise_estimate="zero")
    schedule = make_schedule("cyclical", 0.1, 20, n_cycles=4, exploration=0.4)
    outcome = run_chains(sampler, schedule, _settings(), np.random.default_rng(7), theta0=THETA0)
    rng, theta, kept = np.random.default_rng(7), THETA0.copy(), []
    covariance = np.array([[1.0, 0.9], [0.9, 1.0]])
    for t in range(20):
        step = eq1(t + 1, 0.1, 20, 4)
        gradient = np.linalg.solve(covariance, theta.T).T + np.sqrt(0.5) * rng.standard_normal(theta.shape)
        injected = np.sqrt(2 * step) * rng.standard_normal(theta.shape)
        explore = ((t % 5) / 5) < 0.4
        theta = theta - step * gradient + (0.0 if explore else injected)
        if not explore:
            kept.append(theta)
    np.testing.assert_allclose(outcome.samples, np.stack(kept, axis=1), rtol=1e-12, atol=1e-12)
    assert outcome.samples.shape == (3, 12, 2) and outcome.moments.count == 12
    np.testing.assert_allclose(outcome.final_theta, theta, rtol=1e-12)
    # the kept draws' step sizes are the sampling steps'
    np.testing.assert_allclose(outcome.sample_stats["step_size"], [eq1(t + 1, 0.1, 20, 4) for t in range(20)
                                                                   if (t % 5) / 5 >= 0.4])


def test_sghmc_exploration_steps_are_sgd_with_momentum():
    """SGHMC's splitting step without its N(0, 2Cε) noise in the exploration steps (hand-written loop), on the engine's
    blocks."""
    sampler = build("sghmc", "gaussian_2d_cov", {"noise_variance": 0.5}, noise_estimate="zero", friction=2.0)
    schedule = make_schedule("cyclical", 0.1, 20, n_cycles=2, exploration=0.5)
    outcome = run_chains(sampler, schedule, _settings(burn_in=3, thin=2), np.random.default_rng(11), theta0=THETA0)
    rng, theta, kept = np.random.default_rng(11), THETA0.copy(), []
    momentum = rng.standard_normal(theta.shape)
    covariance = np.array([[1.0, 0.9], [0.9, 1.0]])
    for t in range(20):
        step = eq1(t + 1, 0.1, 20, 2)
        gradient = np.linalg.solve(covariance, theta.T).T + np.sqrt(0.5) * rng.standard_normal(theta.shape)
        injected = np.sqrt(2 * 2.0 * step) * rng.standard_normal(theta.shape)
        explore = ((t % 10) / 10) < 0.5
        momentum = momentum - step * gradient - step * 2.0 * momentum + (0.0 if explore else injected)
        theta = theta + step * momentum
        if not explore and t + 1 > 3 and (t + 1 - 3) % 2 == 0:
            kept.append(theta)
    np.testing.assert_allclose(outcome.samples, np.stack(kept, axis=1), rtol=1e-12, atol=1e-12)
    assert outcome.samples.shape[1] == 4  # steps 7, 9, 17, 19: sampling (t mod 10 >= 5), past burn-in, thinned


@pytest.mark.parametrize("name", ["sgld", "sghmc"])
def test_compiled_and_python_backends_agree(name):
    """The sampling and the exploration blocks run compiled on gaussian_2d_cov (the engine's blocks, and
    Blocks.without_noise); their source run as Python gives the same samples from the same random numbers."""
    assert isinstance(build(name, "gaussian_2d_cov").engine_blocks(), Blocks)
    schedule = make_schedule("cyclical", 0.05, 300, n_cycles=3, exploration=0.3)
    settings = _settings(n_steps=300, burn_in=50, thin=3)

    def run(backend):
        sampler = build(name, "gaussian_2d_cov")
        return run_chains(sampler, schedule, replace(settings, backend=backend), np.random.default_rng(5), theta0=THETA0)

    compiled, reference = run("compiled"), run("python")
    assert compiled.samples.shape == reference.samples.shape
    np.testing.assert_allclose(compiled.samples, reference.samples, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("stop_at", [12, 33])  # stopped in an exploration phase and in a sampling phase
def test_a_run_stopped_and_resumed_across_a_phase_boundary_equals_the_whole_run(stop_at, tmp_path):
    schedule = make_schedule("cyclical", 0.05, 60, n_cycles=3, exploration=0.7)  # cycles of 20: steps 0-13 explore
    settings = RunOptions(n_steps=60, n_chains=4, burn_in=5, thin=2, eval_every=10, progress=False)

    def run(folder=None, stop=float("inf"), resume=None):
        sampler = build("sghmc", "gaussian_2d_cov")
        request = RequestStopAt(stop)
        checkpointer = Checkpointer(folder, "hash", every_steps=4) if folder is not None else None
        return run_chains(sampler, schedule, settings, np.random.default_rng(3), Evaluator(sampler.target),
                          stop_requested=lambda: request.requested, checkpointer=checkpointer, resume=resume,
                          observers=[request])

    whole = run()
    stopped = run(tmp_path, stop_at)
    assert stopped.status == "interrupted" and stopped.steps_done < 60
    checkpoint, _ = load_latest(tmp_path, "hash")
    _assert_same(whole, run(resume=checkpoint))


def test_a_sampler_that_cannot_explore_refuses_the_key_in_one_line():
    from sgmcmc.experiment import build as build_config
    from tests.test_checkpoint import CONFIG

    for sampler in ({"name": "sgnht", "step_size": 0.1}, {"name": "sghmc", "step_size": 0.1, "integrator": "aboba",
                                                          "noise_estimate": "zero"}):
        config = {**CONFIG, "sampler": sampler, "schedule": {"name": "cyclical", "n_cycles": 2, "exploration": 0.5}}
        with pytest.raises(ConfigError, match=r"^schedule\.exploration=0\.5: .*cannot take its step without the "
                                              r"injected noise") as error:
            build_config(config)
        assert "\n" not in str(error.value)
    config = {**CONFIG, "sampler": {"name": "sgld", "step_size": 0.1},
              "schedule": {"name": "cyclical", "n_cycles": 2, "exploration": 1.5}}
    with pytest.raises(ConfigError, match="schedule.exploration"):
        build_config(config)


def test_the_averaged_predictive_leaves_out_the_exploration_states():
    """A target's test-set predictive (SGHMC paper T11/T12) averages only sampling-phase states: here every 4th step
    after burn-in 5, in cycles of 20 whose first 10 steps explore, so steps 12, 16, 20, 32, 36, 40 (of 40)."""
    from sgmcmc.samplers import make_sampler
    from tests.helpers import HierarchicalGaussian

    sampler = make_sampler("sghmc", HierarchicalGaussian(noise_variance=0.5, gibbs_every=0, predict_every=4),
                           noise_estimate="zero")
    schedule = make_schedule("cyclical", 0.05, 40, n_cycles=2, exploration=0.5)
    settings = RunOptions(n_steps=40, n_chains=2, burn_in=5, eval_every=10, progress=False)
    outcome = run_chains(sampler, schedule, settings, np.random.default_rng(0))
    assert outcome.predictive["predictions_averaged"] == 6


def test_a_noise_free_start_is_sgd_with_momentum_then_sghmc():
    """run.noise_free_steps: the first k steps are SGHMC's step without its noise (SGD with momentum, the SGHMC
    authors' first epoch), the rest SGHMC's, at the constant schedule's step size; no state of the first k is kept
    (hand-written loop, on the engine's blocks)."""
    sampler = build("sghmc", "gaussian_2d_cov", {"noise_variance": 0.5}, noise_estimate="zero", friction=2.0)
    settings = replace(_settings(n_steps=20, burn_in=0), noise_free_steps=7)
    outcome = run_chains(sampler, make_schedule("constant", 0.1, 20), settings, np.random.default_rng(13),
                         theta0=THETA0)
    rng, theta, kept = np.random.default_rng(13), THETA0.copy(), []
    momentum = rng.standard_normal(theta.shape)
    covariance = np.array([[1.0, 0.9], [0.9, 1.0]])
    for t in range(20):
        gradient = np.linalg.solve(covariance, theta.T).T + np.sqrt(0.5) * rng.standard_normal(theta.shape)
        injected = np.sqrt(2 * 2.0 * 0.1) * rng.standard_normal(theta.shape)
        momentum = momentum - 0.1 * gradient - 0.1 * 2.0 * momentum + (0.0 if t < 7 else injected)
        theta = theta + 0.1 * momentum
        if t >= 7:
            kept.append(theta)
    np.testing.assert_allclose(outcome.samples, np.stack(kept, axis=1), rtol=1e-12, atol=1e-12)
    assert outcome.samples.shape[1] == 13


def test_a_sampler_that_cannot_take_a_noise_free_step_refuses_the_key_in_one_line():
    from sgmcmc.experiment import build as build_config
    from tests.test_checkpoint import CONFIG

    config = {**CONFIG, "sampler": {"name": "sgnht", "step_size": 0.1}, "run": {**CONFIG["run"], "noise_free_steps": 5}}
    with pytest.raises(ConfigError, match=r"^run\.noise_free_steps=5: sgnht .*cannot take its step without the "
                                          r"injected noise") as error:
        build_config(config)
    assert "\n" not in str(error.value)


def test_noise_free_steps_that_leave_no_sampling_step_are_refused():
    from sgmcmc.experiment import build as build_config
    from tests.test_checkpoint import CONFIG

    config = {**CONFIG, "sampler": {"name": "sgld", "step_size": 0.1},
              "run": {**CONFIG["run"], "noise_free_steps": CONFIG["run"]["n_steps"]}}
    with pytest.raises(ConfigError, match=r"^run\.noise_free_steps=\d+ leaves no step of run\.n_steps=\d+ that samples"):
        build_config(config)
