"""The compiled blocks on the data targets (sgmcmc.engine.data_blocks / data_kernels) against the numpy steps.

Each case runs a few hundred steps twice from the same state and the same seed: ``numpy_block`` (``sampler.step`` per
step, drawing the minibatch keys and then the normals as it goes) and the sampler's :class:`DataKernel` (the same
draws into block arrays, one kernel call per chunk). Both consume the same stream, so the θ, r, ξ paths agree to
rounding (1e-12 relative, or 1e-12 absolute near 0) and the counts (clipped eigenvalues, clipped draws and their
eigendecompositions, reflections), the running estimate and the stop are the same; a kernel that reads another
minibatch, drops a term or takes the other branch of the clipped draw is off by far more.

Logistic regression no longer runs on the data kernels (it hands the engine its rows: its pins are
tests/targets/test_logistic_regression_engine.py); what is left here pins the kernels on Normal-Gamma, and the whole
file is obsolete once Normal-Gamma runs on the engine too (with sgmcmc/engine/data_blocks.py and data_kernels.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sgmcmc.engine import data_blocks
from sgmcmc.engine.blocks import DIVERGED, FAILED, kernel_of, numpy_block
from sgmcmc.engine.data_blocks import DataKernel
from sgmcmc.geometry import RationalMetric
from sgmcmc.noise import clip_counters
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.normal_gamma import NormalGamma
from tests.helpers import RequestStopAt

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
# configs/sampler/*_shang2015.yaml (Table 1 and Fig. 2 of Shang et al. 2015), at A = 1
SHANG = {
    "sghmc": dict(friction=1.0, noise_estimate="running", noise_clip=True, integrator="theta_first"),
    "sgnht": dict(diffusion=1.0, noise_estimate="zero", integrator="theta_first"),
    "ccadl": dict(diffusion=1.0, noise_estimate="running", integrator="theta_first"),
}


TARGETS = {"normal_gamma": lambda: make_target("normal_gamma", data_seed=1)}
STEPS = {"normal_gamma": (0.001, 0.01)}


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
@pytest.mark.parametrize("target_name", ["normal_gamma"])
def test_other_samplers_and_integrators_equal_numpy_steps(name, params, target_name):
    sampler = make_sampler(name, TARGETS[target_name](), **params)
    reference, compiled, *counts = _pair(sampler, np.linspace(0.004, 0.001, 200))
    assert reference.status is None
    _assert_same_block(reference, compiled, counts)


def test_clipped_draws_take_both_branches():
    """SGHMC's clipped draw on Normal-Gamma, h from 0.0005 to 0.01: some chain-steps have a Cholesky factor, others
    are eigendecomposed with eigenvalues clipped; the counts and the samples are the numpy steps' own."""
    sampler = make_sampler("sghmc", TARGETS["normal_gamma"](), **SHANG["sghmc"])
    reference, compiled, numpy_counts, compiled_counts = _pair(sampler, np.linspace(0.0005, 0.01, 300))
    draws, decompositions = numpy_counts
    assert draws == 4 * 300 and 0 < decompositions < draws
    assert reference.clipped.sum() > 0
    _assert_same_block(reference, compiled, (numpy_counts, compiled_counts))


@pytest.mark.parametrize("name, step_size", [("sghmc", 0.005), ("sgnht", 0.005), ("ccadl", 0.005), ("sgld", 0.01)])
def test_reflections_are_counted(name, step_size):
    """Normal-Gamma started near γ = 0: γ ≤ 0 is reflected (and r_γ flipped) in the same steps on both paths.

    Near γ = 0 the gradient's (N + 1)/(2γ) makes the dynamics stiff: at h = 0.01 all four diverge within 5 to 27
    steps, through values near 1e34 (CCAdL) whose last bits (other summation orders in V_t) grow to 1e-9
    relative in one step. The momentum samplers therefore take h = 0.005 (a reflection, then all 300 steps compared);
    SGLD reflects only where it also diverges (h = 0.01: dozens of reflections, then the same stop)."""
    target = make_target("normal_gamma", data_seed=1, initial_position=(0.5, 0.02))
    params = SHANG.get(name, dict(noise_estimate="zero"))
    sampler = make_sampler(name, target, **params)
    theta0 = np.stack([np.full(8, 0.5), 0.002 * np.arange(1, 9)], axis=1)
    reference, compiled, *counts = _pair(sampler, np.full(300, step_size), n_chains=8, theta0=theta0)
    assert reference.reflected.sum() > 0
    _assert_same_block(reference, compiled, counts)


@pytest.mark.parametrize("name, params", [("sghmc", dict(noise_estimate="running", integrator="theta_first")),
                                          ("sgnht", dict(noise_estimate="running", integrator="theta_first")),
                                          ("sgld", dict(noise_estimate="running"))])
@pytest.mark.parametrize("target_name", ["normal_gamma"])
def test_not_psd_stops_at_the_same_step(name, params, target_name):
    """Without the clip, the running estimate's ε(2D − εΣ̂) is refused at the same step, with the same message (a
    full Σ̂ without a Cholesky factor; for d = 1 a negative variance, with the smallest one in the message)."""
    sampler = make_sampler(name, TARGETS[target_name](), **params)
    steps = np.concatenate([np.full(20, 0.0005), np.full(20, 0.2)])
    reference, compiled, *_ = _pair(sampler, steps)
    assert reference.status == FAILED and 20 <= reference.stop < 40
    _assert_same_block(reference, compiled)


# (target, sampler, h, seed): in the last steps of a blow-up r' is a difference of terms of 1e50 and more, which can
# amplify a rounding difference into the leading digits; these cases agree to the end (and CCAdL's friction on
# Normal-Gamma blows up that way at most step sizes: h = 0.045, seed 7 is one that agrees)
DIVERGING = [("normal_gamma", "sghmc", 0.1, 5), ("normal_gamma", "sgnht", 0.2, 5), ("normal_gamma", "ccadl", 0.045, 7)]


@pytest.mark.parametrize("target_name, name, step_size, seed", DIVERGING)
def test_divergence_stops_at_the_same_step(target_name, name, step_size, seed):
    """A step size that blows the chains up: both stop at the same step and keep the same last finite state."""
    sampler = make_sampler(name, TARGETS[target_name](), **SHANG[name])
    reference, compiled, *counts = _pair(sampler, np.full(300, step_size), seed=seed)
    assert reference.status == DIVERGED and reference.stop < 300
    _assert_same_block(reference, compiled, counts)


def test_chunks_of_a_block_give_the_same_bits(monkeypatch):
    """A block cut into kernel calls of a few steps (``KEY_ELEMENTS``) gives the same samples bit for bit."""
    sampler = make_sampler("ccadl", TARGETS["normal_gamma"](), **SHANG["ccadl"])
    state = sampler.init(sampler.target.initial_position(3, np.random.default_rng(0)), np.random.default_rng(1))
    steps = np.full(100, 0.001)
    whole = sampler.compiled_kernel()(np.random.default_rng(2), state, steps, 0)
    monkeypatch.setattr(data_blocks, "KEY_ELEMENTS", 7 * 3 * sampler.target.n_data)
    assert sampler.compiled_kernel().chunk_steps(3) == 7
    chunked = sampler.compiled_kernel()(np.random.default_rng(2), state, steps, 0)
    for field in ("theta", "momentum", "xi"):
        np.testing.assert_array_equal(getattr(chunked, field), getattr(whole, field))
    np.testing.assert_array_equal(chunked.state.noise, whole.state.noise)


def _shang_config(sampler_name: str, experiment: str, overrides=()) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        config = compose(config_name="config", overrides=[f"+experiment={experiment}", f"sampler={sampler_name}",
                                                          *overrides])
    return OmegaConf.to_container(config, resolve=True)["sampler"]


@pytest.mark.parametrize("experiment", ["ccadl_table1"])
@pytest.mark.parametrize("sampler_config", ["sghmc_shang2015", "sgnht_shang2015", "ccadl_shang2015"])
@pytest.mark.parametrize("population", ["false", "true"])
def test_paper_samplers_never_fall_back_to_numpy_steps(experiment, sampler_config, population):
    """The samplers of ccadl_table1 (Normal-Gamma) as their configs build them run in compiled blocks: the runner's
    kernel is a :class:`DataKernel` (ccadl_fig2's, on logistic regression, run on the engine:
    tests/targets/test_logistic_regression_engine.py)."""
    config = _shang_config(sampler_config, experiment, [f"vars.finite_population={population}", "vars.A=10"])
    params = {key: value for key, value in config.items() if key not in ("name", "step_size")}
    assert isinstance(kernel_of(make_sampler(config["name"], TARGETS["normal_gamma"](), **params)), DataKernel)


def test_subclasses_and_replaced_methods_run_on_the_numpy_steps():
    """A subclass of a data target (which may change its gradients) or a method replaced on the instance: no kernel."""

    class Shifted(NormalGamma):
        def log_prior_gradient(self, theta):
            return super().log_prior_gradient(theta) + 1.0

    assert make_sampler("ccadl", Shifted(), **SHANG["ccadl"]).compiled_kernel() is None
    patched = make_sampler("sghmc", make_target("normal_gamma"), **SHANG["sghmc"])
    patched.inject = lambda *args: None
    assert patched.compiled_kernel() is None
    # the known V(θ) (a full-data pass) and the diagonal running form stay on the numpy steps
    assert make_sampler("ccadl", make_target("normal_gamma"), noise_estimate="known").compiled_kernel() is None
    assert make_sampler("ccadl", make_target("normal_gamma"), running_form="diagonal").compiled_kernel() is None
    # a position-dependent metric (S, F, γ of θ) is not the data kernel's S = I, F = C·I
    rational = RationalMetric([0.7, 0.25], [2.0, 0.5])
    assert make_sampler("sgrhmc", make_target("normal_gamma"), metric=rational).compiled_kernel() is None


def _run(sampler, settings, step_size=0.01, seed=3, **kwargs):
    return run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed), **kwargs)


@pytest.mark.parametrize("name", ["sghmc", "ccadl"])
def test_runs_have_the_numpy_runs_samples_and_metrics(name, monkeypatch):
    """run_chains on the compiled blocks and on the numpy steps (``COMPILED = False``): the same samples, moments and
    counters (clipped eigenvalues, clipped draws, eigendecompositions, reflections)."""
    target = make_target("normal_gamma", data_seed=1, initial_position=(0.3, 0.003))
    settings = RunOptions(n_steps=400, n_chains=6, burn_in=100, eval_every=100, progress=False)
    compiled = _run(make_sampler(name, target, **SHANG[name]), settings, 0.004)
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
    reference = _run(make_sampler(name, target, **SHANG[name]), settings, 0.004)
    assert compiled.status == reference.status == "completed"
    _assert_close(compiled.samples, reference.samples)
    _assert_close(compiled.moments.mean, reference.moments.mean)
    assert reference.reflections > 0 and (name != "sghmc" or reference.clip_draws > reference.clip_decompositions > 0)
    assert ((compiled.noise_clips, compiled.reflections, compiled.clip_draws, compiled.clip_decompositions)
            == (reference.noise_clips, reference.reflections, reference.clip_draws, reference.clip_decompositions))
    if name == "ccadl":
        assert compiled.thermostat_mean == pytest.approx(reference.thermostat_mean, rel=1e-12)


def test_stopped_and_resumed_run_equals_the_uninterrupted_run(tmp_path):
    """The runner checkpoints between compiled blocks: a run stopped and resumed from its checkpoint (state, running
    estimate, Generator, counters) ends with the uninterrupted run's samples bit for bit."""
    from sgmcmc.checkpoint import Checkpointer, load_latest

    def run(folder=None, stop_at=None, resume=None):
        sampler = make_sampler("sghmc", make_target("normal_gamma", data_seed=1), **SHANG["sghmc"])
        assert isinstance(sampler.compiled_kernel(), DataKernel)
        stop = RequestStopAt(float("inf") if stop_at is None else stop_at)
        checkpointer = Checkpointer(folder, "hash", every_steps=25) if folder is not None else None
        return _run(sampler, RunOptions(n_steps=150, n_chains=3, burn_in=20, eval_every=50, progress=False),
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
