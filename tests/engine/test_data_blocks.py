"""The compiled blocks on the data targets (sgmcmc.engine.data_blocks / data_kernels) against the numpy steps: logistic
regression, the last target on them (Normal-Gamma runs on the engine's blocks: tests/engine/test_reflection.py).

Each case runs a few hundred steps twice from the same state and the same seed: ``numpy_block`` (``sampler.step`` per
step, drawing the minibatch keys and then the normals as it goes) and the sampler's :class:`DataKernel` (the same
draws into block arrays, one kernel call per chunk). Both consume the same stream, so the θ, r, ξ paths agree to
rounding (1e-12 relative, or 1e-12 absolute near 0) and the counts (clipped eigenvalues, clipped draws and their
eigendecompositions, reflections), the running estimate and the stop are the same; a kernel that reads another
minibatch, drops a term or takes the other branch of the clipped draw is off by far more.
"""

from __future__ import annotations


import numpy as np
import pytest

from sgmcmc.engine import data_blocks
from sgmcmc.engine.blocks import DIVERGED, FAILED, kernel_of, numpy_block
from sgmcmc.engine.data_blocks import DataKernel
from sgmcmc.geometry import RationalMetric
from sgmcmc.noise import clip_counters
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.logistic_regression import LogisticRegression
from tests.helpers import RequestStopAt, experiment_sampler

# configs/sampler/*_shang2015.yaml (Table 1 and Fig. 2 of Shang et al. 2015), at A = 1
SHANG = {
    "sghmc": dict(friction=1.0, noise_estimate="running", noise_clip=True, integrator="theta_first"),
    "sgnht": dict(diffusion=1.0, noise_estimate="zero", integrator="theta_first"),
    "ccadl": dict(diffusion=1.0, noise_estimate="running", integrator="theta_first"),
}


def logistic(n_data=300, dim=12, batch_size=30, seed=0, kind=LogisticRegression) -> LogisticRegression:
    """A small synthetic logistic regression (features N(0, I)/2, labels from a random w): d = 12 takes the kernel's
    BLAS product for V_t, d <= 8 its loops."""
    rng = np.random.default_rng(seed)
    features = 0.5 * rng.standard_normal((n_data, dim))
    labels = np.where(features @ rng.standard_normal(dim) + 0.3 * rng.standard_normal(n_data) > 0, 1, -1)
    return kind(features, labels, batch_size=batch_size, initial_scale=0.3)


TARGETS = {"logistic": logistic, "logistic_d3": lambda: logistic(dim=3, batch_size=12),
           "logistic_d1": lambda: logistic(dim=1, batch_size=20)}
STEPS = {"logistic": (0.002, 0.02), "logistic_d3": (0.002, 0.02), "logistic_d1": (0.002, 0.02)}


def _pair(sampler, step_sizes, n_chains=4, seed=5, theta0=None):
    """(numpy block, compiled block, numpy clip counter change, compiled clip counter change) from one state."""
    rng = np.random.default_rng(seed)
    theta0 = sampler.target.initial_position(n_chains, rng) if theta0 is None else theta0
    state = sampler.init(theta0, rng)
    kernel = sampler.compiled_kernel()
    assert isinstance(kernel, DataKernel)
    before = clip_counters.snapshot()
    reference = numpy_block(sampler, np.random.default_rng(seed + 1), state, step_sizes, start=0)
    middle = clip_counters.snapshot()
    compiled = kernel(np.random.default_rng(seed + 1), state, step_sizes, start=0)
    after = clip_counters.snapshot()
    return reference, compiled, np.subtract(middle, before), np.subtract(after, middle)


def _assert_close(actual, expected):
    np.testing.assert_allclose(actual, expected, rtol=1e-12, atol=1e-12)


def _assert_same_block(reference, compiled, counts=None):
    assert (compiled.status, compiled.stop, compiled.error) == (reference.status, reference.stop, reference.error)
    for field in ("theta", "momentum", "xi"):
        expected = getattr(reference, field)
        if expected is None:
            assert getattr(compiled, field) is None, field
        else:
            _assert_close(getattr(compiled, field), expected)
    for field in ("clipped", "reflected"):
        expected = getattr(reference, field)
        if expected is None:
            assert getattr(compiled, field) is None, field
        else:
            np.testing.assert_array_equal(getattr(compiled, field), expected)
    for field in ("theta", "momentum", "xi", "noise"):
        expected = getattr(reference.state, field)
        if expected is None:
            assert getattr(compiled.state, field) is None, field
        else:
            _assert_close(getattr(compiled.state, field), expected)
    assert compiled.state.noise_count == reference.state.noise_count
    if counts is not None:
        np.testing.assert_array_equal(counts[1], counts[0])  # clipped draws and their eigendecompositions


def _shang_cases():
    for target in TARGETS:
        for name, params in SHANG.items():
            for population in ((False, True) if params["noise_estimate"] == "running" else (False,)):
                for step in STEPS[target]:
                    for friction in (1.0, 10.0):
                        yield target, name, population, step, friction


@pytest.mark.parametrize("target_name, name, finite_population, step_size, coefficient", list(_shang_cases()))
def test_shang_samplers_equal_numpy_steps(target_name, name, finite_population, step_size, coefficient):
    params = {**SHANG[name], "finite_population": finite_population,
              ("friction" if name == "sghmc" else "diffusion"): coefficient}
    sampler = make_sampler(name, TARGETS[target_name](), **params)
    reference, compiled, *counts = _pair(sampler, np.full(300, step_size))
    assert reference.status is None and reference.stop == 300
    _assert_same_block(reference, compiled, counts)


@pytest.mark.parametrize("name, params", [
    ("sgld", dict(noise_estimate="zero")),
    ("sgld", dict(noise_estimate="running", noise_clip=True)),
    ("sghmc", dict(integrator="splitting", noise_estimate="running", noise_clip=True)),
    ("sghmc", dict(integrator="euler", noise_estimate="zero")),
    ("sgnht", dict(integrator="splitting", noise_estimate="running", noise_clip=True)),
    ("sgnht", dict(integrator="euler", noise_estimate="zero")),
    ("sgnht", dict(integrator="theta_first", noise_estimate="running", noise_clip=True)),
    ("ccadl", dict(integrator="euler")),
    ("ccadl", dict(noise_clip=True)),
    ("sgrhmc", dict(integrator="theta_first", noise_estimate="running", noise_clip=True)),  # identity metric: C = 1
    ("naive_sgrhmc", dict(integrator="splitting", noise_estimate="zero")),
])
@pytest.mark.parametrize("target_name", ["logistic"])
def test_other_samplers_and_integrators_equal_numpy_steps(name, params, target_name):
    sampler = make_sampler(name, TARGETS[target_name](), **params)
    reference, compiled, *counts = _pair(sampler, np.linspace(0.004, 0.001, 200))
    assert reference.status is None
    _assert_same_block(reference, compiled, counts)


@pytest.mark.parametrize("name, params", [("sghmc", dict(noise_estimate="running", integrator="theta_first")),
                                          ("sgnht", dict(noise_estimate="running", integrator="theta_first")),
                                          ("sgld", dict(noise_estimate="running"))])
@pytest.mark.parametrize("target_name", ["logistic_d3", "logistic_d1"])
def test_not_psd_stops_at_the_same_step(name, params, target_name):
    """Without the clip, the running estimate's ε(2D − εΣ̂) is refused at the same step, with the same message (a
    full Σ̂ without a Cholesky factor; for d = 1 a negative variance, with the smallest one in the message)."""
    sampler = make_sampler(name, TARGETS[target_name](), **params)
    steps = np.concatenate([np.full(20, 0.0005), np.full(20, 0.2)])
    reference, compiled, *_ = _pair(sampler, steps)
    assert reference.status == FAILED and 20 <= reference.stop < 40
    _assert_same_block(reference, compiled)


# (target, sampler, h, seed): in the last steps of a blow-up r' is a difference of terms of 1e50 and more, which can
# amplify a rounding difference into the leading digits; these cases agree to the end
DIVERGING = [("logistic", "sgnht", 0.5, 5), ("logistic", "ccadl", 0.5, 5)]


@pytest.mark.parametrize("target_name, name, step_size, seed", DIVERGING)
def test_divergence_stops_at_the_same_step(target_name, name, step_size, seed):
    """A step size that blows the chains up: both stop at the same step and keep the same last finite state."""
    sampler = make_sampler(name, TARGETS[target_name](), **SHANG[name])
    reference, compiled, *counts = _pair(sampler, np.full(300, step_size), seed=seed)
    assert reference.status == DIVERGED and reference.stop < 300
    _assert_same_block(reference, compiled, counts)


@pytest.mark.parametrize("name", ["sghmc", "sgnht", "ccadl"])
def test_full_batch_and_one_dimension(name):
    """n = N (nothing drawn for the minibatch; with the exact scale Σ̂ = 0, the elementwise branch of the noise) and
    d = 1 (a 1×1 Σ̂ is diagonal)."""
    for target, population in ((logistic(n_data=40, dim=3, batch_size=40), True), (logistic(n_data=40, dim=3, batch_size=40), False),
                               (logistic(dim=1, batch_size=20), False)):
        sampler = make_sampler(name, target, **{**SHANG[name], "finite_population": population})
        reference, compiled, *counts = _pair(sampler, np.full(200, 0.01))
        assert reference.status is None
        _assert_same_block(reference, compiled, counts)


def test_chunks_of_a_block_give_the_same_bits(monkeypatch):
    """A block cut into kernel calls of a few steps (``KEY_ELEMENTS``) gives the same samples bit for bit."""
    sampler = make_sampler("ccadl", TARGETS["logistic"](), **SHANG["ccadl"])
    state = sampler.init(sampler.target.initial_position(3, np.random.default_rng(0)), np.random.default_rng(1))
    steps = np.full(100, 0.01)
    whole = sampler.compiled_kernel()(np.random.default_rng(2), state, steps, 0)
    monkeypatch.setattr(data_blocks, "KEY_ELEMENTS", 7 * 3 * 300)
    assert sampler.compiled_kernel().chunk_steps(3) == 7
    chunked = sampler.compiled_kernel()(np.random.default_rng(2), state, steps, 0)
    for field in ("theta", "momentum", "xi"):
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field))
    np.testing.assert_array_equal(chunked.state.noise, whole.state.noise)


@pytest.mark.parametrize("experiment", ["ccadl_fig2"])
@pytest.mark.parametrize("sampler_config", ["sghmc_shang2015", "sgnht_shang2015", "ccadl_shang2015"])
@pytest.mark.parametrize("population", ["false", "true"])
def test_paper_samplers_never_fall_back_to_numpy_steps(experiment, sampler_config, population):
    """The samplers of ccadl_fig2 (logistic regression) as their configs build them run in compiled blocks: the
    runner's kernel is a :class:`DataKernel`."""
    name, params = experiment_sampler(sampler_config, experiment, [f"vars.finite_population={population}", "vars.A=10"])
    assert isinstance(kernel_of(make_sampler(name, TARGETS["logistic"](), **params)), DataKernel)


def test_subclasses_and_replaced_methods_run_on_the_numpy_steps():
    """A subclass of a data target (which may change its gradients) or a method replaced on the instance: no kernel."""

    class Shifted(LogisticRegression):
        def log_prior_gradient(self, theta):
            return super().log_prior_gradient(theta) + 1.0

    assert isinstance(make_sampler("ccadl", logistic(dim=2), **SHANG["ccadl"]).compiled_kernel(), DataKernel)
    assert make_sampler("ccadl", logistic(dim=2, kind=Shifted), **SHANG["ccadl"]).compiled_kernel() is None
    patched = make_sampler("sghmc", logistic(dim=2), **SHANG["sghmc"])
    patched.inject = lambda *args: None
    assert patched.compiled_kernel() is None
    # the known V(θ) (a full-data pass) and the diagonal running form stay on the numpy steps
    assert make_sampler("ccadl", logistic(dim=2), noise_estimate="known").compiled_kernel() is None
    assert make_sampler("ccadl", logistic(dim=2), running_form="diagonal").compiled_kernel() is None
    # a position-dependent metric (S, F, γ of θ) is not the data kernel's S = I, F = C·I
    rational = RationalMetric([0.7, 0.25], [2.0, 0.5])
    assert make_sampler("sgrhmc", logistic(dim=2), metric=rational).compiled_kernel() is None


def _run(sampler, settings, step_size=0.01, seed=3, **kwargs):
    return run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed), **kwargs)


@pytest.mark.parametrize("name", ["sghmc", "ccadl"])
def test_runs_have_the_numpy_runs_samples_and_metrics(name, monkeypatch):
    """run_chains on the compiled blocks and on the numpy steps (``COMPILED = False``): the same samples, moments and
    counters (clipped eigenvalues, clipped draws, eigendecompositions)."""
    target = logistic(dim=3, batch_size=12)
    settings = RunSettings(n_steps=400, n_chains=6, burn_in=100, eval_every=100, progress=False)
    compiled = _run(make_sampler(name, target, **SHANG[name]), settings, 0.004)
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
    reference = _run(make_sampler(name, target, **SHANG[name]), settings, 0.004)
    assert compiled.status == reference.status == "completed"
    _assert_close(compiled.samples, reference.samples)
    _assert_close(compiled.moments.mean, reference.moments.mean)
    assert name != "sghmc" or reference.clip_draws > 0
    assert ((compiled.noise_clips, compiled.reflections, compiled.clip_draws, compiled.clip_decompositions)
            == (reference.noise_clips, reference.reflections, reference.clip_draws, reference.clip_decompositions))
    if name == "ccadl":
        assert compiled.thermostat_mean == pytest.approx(reference.thermostat_mean, rel=1e-12)


def test_stopped_and_resumed_run_equals_the_uninterrupted_run(tmp_path):
    """The runner checkpoints between compiled blocks: a run stopped and resumed from its checkpoint (state, running
    estimate, Generator, counters) ends with the uninterrupted run's samples bit for bit."""
    from sgmcmc.checkpoint import Checkpointer, load_latest

    def run(folder=None, stop_at=None, resume=None):
        sampler = make_sampler("sghmc", logistic(dim=3, batch_size=12), **SHANG["sghmc"])
        assert isinstance(sampler.compiled_kernel(), DataKernel)
        stop = RequestStopAt(float("inf") if stop_at is None else stop_at)
        checkpointer = Checkpointer(folder, "hash", every_steps=25) if folder is not None else None
        return _run(sampler, RunSettings(n_steps=150, n_chains=3, burn_in=20, eval_every=50, progress=False),
                    stop_requested=lambda: stop.requested, checkpointer=checkpointer, resume=resume, observers=[stop])

    whole = run()
    stopped = run(folder=tmp_path, stop_at=60)
    assert stopped.status == "interrupted" and 60 <= stopped.steps_done < 150
    checkpoint, _ = load_latest(tmp_path, "hash")
    resumed = run(resume=checkpoint)
    np.testing.assert_array_equal(resumed.samples, whole.samples)
    np.testing.assert_array_equal(resumed.final_theta, whole.final_theta)
    assert ((resumed.noise_clips, resumed.clip_draws, resumed.clip_decompositions, resumed.reflections)
            == (whole.noise_clips, whole.clip_draws, whole.clip_decompositions, whole.reflections))
