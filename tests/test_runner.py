"""The driver: burn-in and thinning, divergence, interruption, determinism."""

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sgmcmc.config import ConfigError, RunOptions
from sgmcmc.engine.driver import PYTHON
from sgmcmc.evaluation import Evaluator
from sgmcmc.experiment import run_experiment
from sgmcmc.geometry import RationalMetric
from sgmcmc.runner import RunningMoments, blocks_for, run_chains
from sgmcmc.results import new_run_folder
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.double_well import DoubleWell
from sgmcmc.targets.user import load_model_class, user_target
from tests.helpers import RequestStopAt, build, composed


def test_burn_in_and_thinning_keep_the_right_steps():
    sampler = build("sgld", "gaussian_1d")
    settings = RunOptions(n_steps=100, n_chains=3, burn_in=40, thin=6, eval_every=50, progress=False)
    outcome = run_chains(sampler, Constant(0.01), settings, np.random.default_rng(0))
    assert outcome.samples.shape == (3, 10, 1) and settings.n_kept == 10
    # Replaying the same random numbers by hand, one step at a time on the engine's blocks (their source as Python):
    # samples are the states after steps 46, 52, ..., 100.
    rng = np.random.default_rng(0)
    state = sampler.init(sampler.target.initial_position(3, rng), rng)
    blocks = sampler.engine_blocks(PYTHON)
    kept = []
    for t in range(1, 101):
        state = blocks(rng, state, np.array([0.01]), t - 1).state
        if t > 40 and (t - 40) % 6 == 0:
            kept.append(state.theta)
    np.testing.assert_array_equal(outcome.samples, np.stack(kept, axis=1))


@pytest.mark.parametrize("name", ["sghmc", "hmc"])  # a compiled and a numpy-step sampler
def test_interruption_keeps_what_the_run_had(name):
    sampler = build(name, "double_well")
    stop = RequestStopAt(30)
    # a stop request waits for the block in progress: blocks of one step each (block_seconds 0) stop right at it
    settings = RunOptions(n_steps=100, n_chains=4, burn_in=10, eval_every=10, progress=False, block_seconds=0.0)
    outcome = run_chains(sampler, Constant(0.1), settings, np.random.default_rng(0), stop_requested=lambda: stop.requested,
                         observers=[stop])
    assert outcome.status == "interrupted" and outcome.steps_done == 30
    assert outcome.samples.shape == (4, 20, 1)
    assert [row["step"] for row in outcome.trace] == [10, 20, 30]


@pytest.mark.parametrize("name", ["sghmc", "hmc"])  # a compiled and a numpy-step sampler
def test_blocks_cut_at_every_step_give_the_same_run(name):
    """The observers see a long block in parts at the trace's rows (Block.parts): the same samples, trace rows and
    moments as a run whose blocks are one step each (block_seconds 0), where every row is a block's own end."""
    runs = []
    for seconds in (0.0, 60.0):
        settings = RunOptions(n_steps=95, n_chains=3, burn_in=17, thin=4, eval_every=10, progress=False,
                              block_seconds=seconds)
        runs.append(run_chains(build(name, "double_well"), Constant(0.1), settings, np.random.default_rng(3),
                               evaluator=Evaluator(build(name, "double_well").target)))
    one_step, long = runs
    np.testing.assert_array_equal(long.samples, one_step.samples)
    np.testing.assert_array_equal(long.moments.mean, one_step.moments.mean)
    assert [row["step"] for row in long.trace] == [10, 20, 30, 40, 50, 60, 70, 80, 90, 95]
    assert long.trace == one_step.trace


@pytest.mark.parametrize("integrator", ["euler", "generic"])  # the engine's blocks and the numpy steps
def test_a_failure_right_after_a_trace_row_keeps_the_row(integrator):
    """SGLD's step after row 20 fails (ε = NaN from step 21): the row at step 20 is written whether the blocks end
    at every step or the run's one long block does (its part up to the row is clean, the failure a part of no steps)."""
    def schedule(t):  # step t + 1's ε
        return 0.1 if t < 20 else float("nan")

    for seconds in (0.0, 60.0):
        settings = RunOptions(n_steps=100, n_chains=3, burn_in=5, eval_every=10, progress=False, block_seconds=seconds)
        sampler = build("sgld", "double_well", integrator=integrator)
        outcome = run_chains(sampler, schedule, settings, np.random.default_rng(0), evaluator=Evaluator(sampler.target))
        assert outcome.status in ("diverged", "failed") and outcome.steps_done == 20, (seconds, outcome.status)
        assert [row["step"] for row in outcome.trace] == [10, 20], seconds


def test_divergence_stops_and_keeps_finite_samples():
    sampler = build("sgld", "double_well")
    settings = RunOptions(n_steps=500, n_chains=200, burn_in=0, eval_every=100, progress=False)
    outcome = run_chains(sampler, Constant(0.12), settings, np.random.default_rng(0))
    assert outcome.status == "diverged"
    assert outcome.samples.shape[1] == outcome.steps_done < 500
    assert np.isfinite(outcome.samples).all()


def test_acceptance_rate_is_reported_for_metropolis_samplers():
    sampler = build("hmc", "double_well", n_leapfrog=5)
    outcome = run_chains(sampler, Constant(0.1), RunOptions(n_steps=50, n_chains=20, burn_in=10, eval_every=25, progress=False),
                         np.random.default_rng(0))
    assert 0.8 < outcome.acceptance_rate <= 1.0
    assert all("acceptance_rate" in row for row in outcome.trace)


def test_run_folders_are_never_reused_even_in_parallel(tmp_path):
    with ThreadPoolExecutor(8) as pool:
        made = list(pool.map(lambda _: new_run_folder(tmp_path, "same-label"), range(64)))
    assert len(set(made)) == 64 and all(folder.is_dir() for folder in made)


def test_running_moments_match_numpy():
    rng = np.random.default_rng(0)
    steps = rng.normal(size=(50, 3, 4)) * [1.0, 2.0, 0.5, 3.0] + [0.0, 1.0, -2.0, 5.0]
    moments = RunningMoments(3, 4)
    for theta in steps:
        moments.update(theta)
    np.testing.assert_allclose(moments.mean, steps.mean(axis=0))
    for chain in range(3):
        np.testing.assert_allclose(moments.covariance()[chain], np.cov(steps[:, chain].T))
    mean, covariance = moments.pooled()
    pooled = steps.reshape(-1, 4)
    np.testing.assert_allclose(mean, pooled.mean(axis=0))
    np.testing.assert_allclose(covariance, np.cov(pooled.T))


def test_no_covariance_in_high_dimension(monkeypatch):
    monkeypatch.setattr("sgmcmc.observers.MOMENT_COVARIANCE_MAX_DIM", 2)
    moments = RunningMoments(2, 3)
    moments.update(np.ones((2, 3)))
    moments.update(np.zeros((2, 3)))
    assert moments.covariance() is None
    np.testing.assert_allclose(moments.mean, 0.5)


def test_a_sampler_without_engine_blocks_is_refused_in_one_line_and_runs_with_the_generic_step():
    """A subclass of a target has no engine blocks (tests/engine/test_compiled_blocks.py): every integrator but the
    generic recipe step is refused with a one-line ConfigError naming sampler.integrator; the generic step runs."""
    class ShiftedWell(DoubleWell):
        def gradient_1d(self, x):
            return super().gradient_1d(x - 1.0)

    settings = RunOptions(n_steps=20, n_chains=2, burn_in=0, eval_every=20, progress=False)
    with pytest.raises(ConfigError, match=r"^sampler=sgld \(integrator euler\) has no engine blocks: target 'double_well' "
                                          r"hands the engine no functions.*; set sampler.integrator=generic") as error:
        run_chains(make_sampler("sgld", ShiftedWell()), Constant(0.1), settings, np.random.default_rng(0))
    assert "\n" not in str(error.value)
    outcome = run_chains(make_sampler("sgld", ShiftedWell(), integrator="generic"), Constant(0.1), settings,
                         np.random.default_rng(0))
    assert outcome.status == "completed" and outcome.samples.shape == (2, 20, 1)


MODEL_WITH_ITS_OWN_METRIC = """
import numpy as np
from sgmcmc.geometry import DiagonalMetric


class Softened(DiagonalMetric):
    \"\"\"G(θ)^(-1/2) = 1/√(1 + θ²), written by hand: RationalMetric(1, 1)'s.\"\"\"

    def inverse_sqrt(self, theta):
        return 1.0 / np.sqrt(1.0 + theta**2)

    def inverse_sqrt_derivative(self, theta):
        return -theta * (1.0 + theta**2) ** -1.5


class WithoutEngine(Softened):
    def engine_function(self, dim):
        return None


class Gaussian:
    dim = 2

    def grad_log_density(self, theta):
        return -theta

    def metric(self):
        return Softened()


class GaussianWithoutEngine(Gaussian):
    def metric(self):
        return WithoutEngine()
"""


def _user_metric_model(tmp_path, monkeypatch):
    (tmp_path / "own_metric.py").write_text(MODEL_WITH_ITS_OWN_METRIC)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "own_metric.py"


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
@pytest.mark.parametrize("name, options", [("sgrld", {}), ("sgrhmc", {"integrator": "aboba", "noise_estimate": "zero"})])
def test_a_user_metric_runs_on_the_engine_through_its_own_methods(name, options, tmp_path, monkeypatch):
    """A user's DiagonalMetric with no engine function of its own: the blocks call its methods in Python
    (DiagonalMetric.engine_function, its flow one Runge–Kutta step) and say so; its samples are the built-in
    RationalMetric(1, 1)'s, whose compiled functions are pinned to the recipe (tests/engine/test_driver.py), to 1e-12
    over 300 steps. SGRLD's Euler step reads the metric door, gSGRHMC's aboba both doors (the metric and the flow);
    each new integrator here is two compiled blocks more for the suite."""
    model = load_model_class(f"{_user_metric_model(tmp_path, monkeypatch)}:Gaussian")()
    settings = RunOptions(n_steps=300, n_chains=3, burn_in=0, eval_every=300, progress=False)
    samples = []
    for metric in ({}, {"metric": RationalMetric([1.0], [1.0])}):
        sampler = make_sampler(name, user_target(model), **options, **metric)
        outcome = run_chains(sampler, Constant(0.05), settings, np.random.default_rng(1), blocks=blocks_for(sampler))
        assert outcome.status == "completed"
        samples.append(outcome.samples)
    np.testing.assert_allclose(samples[0], samples[1], rtol=0, atol=1e-12)
    assert np.std(samples[0]) > 0.1  # the chains moved


def test_a_user_metric_runs_in_python_from_the_compiled_blocks_and_says_so(tmp_path, monkeypatch, caplog):
    model = load_model_class(f"{_user_metric_model(tmp_path, monkeypatch)}:Gaussian")()
    with caplog.at_level("WARNING"):
        assert blocks_for(make_sampler("sgrld", user_target(model))) is not None
    assert "sgrld on <python object> calls the metric's methods in Python from the compiled blocks" in caplog.text


def test_a_user_metric_without_an_engine_function_is_refused_before_the_run_folder(tmp_path, monkeypatch):
    """SGRLD on a user's model whose metric's engine_function is None: one ConfigError line naming the metric and
    sampler.integrator=generic, raised by the build, so no run folder is made; the generic step runs it."""
    path = _user_metric_model(tmp_path, monkeypatch)
    overrides = ["target=custom", f"target.model={path}:GaussianWithoutEngine", "sampler=sgrld",
                 "run.n_steps=20", "run.burn_in=0", "run.n_chains=2", "run.progress=false", "run.figures=false",
                 f"run.results_dir={tmp_path / 'runs'}"]
    with pytest.raises(ConfigError, match=r"^sampler=sgrld \(integrator euler\) has no engine blocks: the metric G\(θ\) "
                                          r"of target .*\(WithoutEngine\) has no engine function.*integrator=generic"):
        run_experiment(composed(*overrides))
    assert not (tmp_path / "runs").exists()
    folder, status = run_experiment(composed(*overrides, "sampler.integrator=generic"))
    assert status == "completed"


def test_the_step_of_a_sampler_is_the_generic_recipe_step_only():
    """Sampler.step is the recipe's step (integrator=generic); any other integrator's update is the engine's, and
    step() says so instead of taking some other update."""
    sampler = make_sampler("sgld", DoubleWell())
    state = sampler.init(np.zeros((2, 1)), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"^sgld's euler integrator runs on the engine's blocks"):
        sampler.step(np.random.default_rng(0), state, 0.1)
    new_state, _ = make_sampler("sgld", DoubleWell(), integrator="generic").step(np.random.default_rng(0), state, 0.1)
    assert new_state.theta.shape == (2, 1) and np.all(np.isfinite(new_state.theta))
