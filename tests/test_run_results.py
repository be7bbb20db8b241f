"""Run and sweep folders read back as arviz.InferenceData (sgmcmc.run_results, re-exported by sgmcmc.results).

The truths are independent of the loader: samples.npz as numpy reads it, a hand loop of the engine's blocks, one step
at a time, from the run's seed (the thermostat ξ, the Metropolis probabilities, the clipped counts at the kept steps), a
:class:`~sgmcmc.observers.PathObserver` of the blocks (LDA's reflections), the schedules' formulas, the manifest
written by :mod:`sgmcmc_cli.sweep`, and an uninterrupted run for the interrupted, killed and resumed ones."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import sgmcmc
from sgmcmc import experiment
from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import PYTHON
from sgmcmc.experiment import build, run_experiment
from sgmcmc.observers import PathObserver
from sgmcmc.results import load_run, load_sweep
from sgmcmc.runner import run_chains
from tests.helpers import RequestStopAt
from tests.targets.test_lda import N_TOPICS, WORDS
from tests.targets.test_lda import _config as lda_config

# One worker takes the whole module (make's --dist loadgroup), so that its module fixture `sweep_folder` is built
# once a run: a sweep's folder, 1.7 s.
pytestmark = pytest.mark.xdist_group("test_run_results")

ROOT = Path(__file__).resolve().parents[1]
THREADS = {key: "1" for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
N_STEPS, N_CHAINS, BURN_IN, THIN, EVAL_EVERY = 60, 5, 15, 2, 10
KEPT_STEPS = BURN_IN + THIN * np.arange(1, (N_STEPS - BURN_IN) // THIN + 1)  # 17, 19, ..., 59
RUNS = {  # name -> (sampler, target, schedule, the sample statistics the run must have)
    "sgnht-double_well-polynomial": ({"name": "sgnht", "step_size": 0.05}, "double_well",
                                     {"name": "polynomial", "b": 50.0, "gamma": 0.55}, {"step_size", "xi"}),
    "hmc-double_well": ({"name": "hmc", "step_size": 0.1, "n_leapfrog": 3}, "double_well", {"name": "constant"},
                        {"step_size", "acceptance_rate"}),
    # a data target (minibatches, the running noise estimate); ε = 0.007 clips one variance at some kept draws, two at others
    "sgnht-normal_gamma-clip": ({"name": "sgnht", "step_size": 0.007, "noise_estimate": "running",
                                 "running_form": "diagonal", "noise_clip": True}, "normal_gamma", {"name": "constant"},
                                {"step_size", "xi", "clipped", "reflected"}),
}


def config(tmp_path, name, results="runs", **run):
    sampler, target, schedule, _ = RUNS[name]
    return {"seed": 4, "sampler": dict(sampler), "target": {"name": target}, "schedule": dict(schedule),
            "run": {"n_steps": N_STEPS, "n_chains": N_CHAINS, "burn_in": BURN_IN, "thin": THIN, "eval_every": EVAL_EVERY,
                    "progress": False, "figures": False, "results_dir": str(tmp_path / results), **run}}


def npz(path) -> dict:
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def step_size_formula(schedule: dict, step_size: float, steps) -> np.ndarray:
    """ε_{t−1} for each step t, from the schedules' formulas (sgmcmc/schedules.py's docstring)."""
    t = np.asarray(steps, dtype=float) - 1
    if schedule["name"] == "constant":
        return np.full(t.shape, step_size)
    return step_size * (1 + t / schedule["b"]) ** -schedule["gamma"]


def hand_loop(run_config) -> dict:
    """θ, ξ, accept probability, clipped and reflected at the kept steps, by running the sampler's engine blocks (their
    source as Python) one step at a time from the run's seed (run_chains draws the initial positions, then blocks,
    each drawing its numbers step after step: no other draw on these targets)."""
    built = build(run_config)
    rng = np.random.default_rng(run_config["seed"])
    state = built.sampler.init(built.target.initial_position(N_CHAINS, rng), rng)
    blocks = kernel_of(built.sampler, PYTHON)
    kept = {"theta": [], "xi": [], "accept_probability": [], "clipped": [], "reflected": []}
    for t in range(1, N_STEPS + 1):
        block = blocks(rng, state, np.array([built.schedule(t - 1)]), t - 1)
        state = block.state
        if t in KEPT_STEPS:
            kept["theta"].append(state.theta)
            kept["xi"].append(state.xi)
            for name in ("accept_probability", "clipped", "reflected"):
                path = getattr(block, name)
                kept[name].append(None if path is None else path[:, 0])
    return {name: np.stack(values, axis=1) for name, values in kept.items() if values[0] is not None}


def no_warnings(function, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return function(*args, **kwargs)


# ------------------------------------------------------------------------------------------------- one run


@pytest.mark.parametrize("name", sorted(RUNS))
def test_run_folder_round_trips_to_inference_data(name, tmp_path):
    run_config = config(tmp_path, name)
    folder, status = run_experiment(run_config)
    assert status == "completed"
    written = npz(folder / "samples.npz")
    data = no_warnings(load_run(folder).to_inference_data)  # the trace group too: no warning from ArviZ 0.23
    assert set(data.groups()) == {"posterior", "sample_stats", "trace"}

    theta = data.posterior["theta"]
    dim = written["theta"].shape[2]
    assert theta.dims == ("chain", "draw", "parameter") and theta.shape == (N_CHAINS, KEPT_STEPS.size, dim)
    np.testing.assert_array_equal(theta.values, written["theta"])  # exactly samples.npz
    np.testing.assert_array_equal(data.posterior["draw"], KEPT_STEPS)
    np.testing.assert_array_equal(data.posterior["chain"], np.arange(N_CHAINS))
    np.testing.assert_array_equal(data.posterior["parameter"], np.arange(dim))

    reference = hand_loop(run_config)
    np.testing.assert_allclose(theta.values, reference["theta"], rtol=1e-12, atol=1e-12)
    stats = data.sample_stats
    assert set(stats.data_vars) == RUNS[name][3]
    assert all(stats[key].dims == ("chain", "draw") for key in stats.data_vars)
    expected_step_sizes = step_size_formula(run_config["schedule"], run_config["sampler"]["step_size"], KEPT_STEPS)
    np.testing.assert_allclose(stats["step_size"].values, np.broadcast_to(expected_step_sizes, (N_CHAINS, KEPT_STEPS.size)),
                               rtol=1e-14)
    for key, stored in (("xi", "xi"), ("acceptance_rate", "accept_probability")):  # ArviZ's name, samples.npz's
        if key in stats:
            np.testing.assert_allclose(stats[key].values, reference[stored], rtol=1e-12, atol=1e-12, err_msg=key)
    for key in ("clipped", "reflected"):
        if key in stats:
            np.testing.assert_array_equal(stats[key].values, reference[key], err_msg=key)
    if "clipped" in stats:  # the comparison above could tell a shifted draw from the right one
        assert len(np.unique(stats["clipped"].values)) > 1

    metrics = json.loads((folder / "metrics.json").read_text())
    provenance = json.loads((folder / "provenance.json").read_text())
    attrs = data.posterior.attrs
    assert {key: attrs[key] for key in ("sampler", "target", "schedule", "seed", "inference_library")} == {
        "sampler": RUNS[name][0]["name"], "target": RUNS[name][1], "schedule": RUNS[name][2]["name"], "seed": 4,
        "inference_library": "sgmcmc"}
    assert (attrs["git_commit"], attrs["sgmcmc_version"], attrs["created_at"]) == (
        provenance["git_commit"], sgmcmc.__version__, provenance["started_utc"])
    assert metrics["final"] and all(attrs[f"final.{key}"] == value if value is not None else f"final.{key}" not in attrs
                                    for key, value in metrics["final"].items())  # nulls left out
    assert (attrs["status"], attrs["steps_done"], attrs["n_samples"]) == ("completed", N_STEPS, N_CHAINS * KEPT_STEPS.size)
    assert data.sample_stats.attrs["sampler"] == data.trace.attrs["sampler"] == RUNS[name][0]["name"]

    trace = data.trace
    np.testing.assert_array_equal(trace["step"], np.arange(EVAL_EVERY, N_STEPS + 1, EVAL_EVERY))
    with open(folder / "trace.csv") as handle:
        header = handle.readline().strip().split(",")
        rows = np.genfromtxt(handle, delimiter=",")
    assert set(trace.data_vars) == set(header) - {"step"}
    np.testing.assert_array_equal(trace["step_size"], rows[:, header.index("step_size")])


def test_lda_run_round_trips_with_its_reflections(tmp_path):
    """Online LDA on tests/targets/test_lda.py's tiny corpus (written in tmp_path): the reflections of the Gamma
    coordinates at the kept steps are those of the run's blocks."""
    run_config = lda_config(tmp_path, "sgrld", 0.01, n_steps=40, burn_in=10, thin=5, figures=False)
    folder, status = run_experiment(run_config)
    assert status == "completed"
    data = no_warnings(load_run(folder).to_inference_data)
    written = npz(folder / "samples.npz")
    kept = 10 + 5 * np.arange(1, 7)
    assert data.posterior["theta"].shape == (1, 6, N_TOPICS * len(WORDS))
    np.testing.assert_array_equal(data.posterior["theta"].values, written["theta"])
    np.testing.assert_array_equal(data.posterior["draw"], kept)
    np.testing.assert_allclose(data.sample_stats["step_size"].values[0], 0.01 * (1 + (kept - 1) / 1000.0) ** -0.55,
                               rtol=1e-14)

    built = build(run_config)
    blocks = PathObserver(lambda block: (np.arange(block.start + 1, block.stop + 1), block.reflected))
    run_chains(built.sampler, built.schedule, built.settings, np.random.default_rng(run_config["seed"]), observers=[blocks])
    steps = np.concatenate([step for step, _ in blocks.values])
    reflected = np.concatenate([path for _, path in blocks.values], axis=1)
    expected = reflected[:, np.searchsorted(steps, kept)]
    assert expected.sum() > 0 and len(np.unique(expected)) > 1
    np.testing.assert_array_equal(data.sample_stats["reflected"].values, expected)


# ArviZ 0.23's plot_trace calls matplotlib's normalize_kwargs the way matplotlib 3.11 deprecates (ArviZ's warning)
@pytest.mark.filterwarnings("ignore:Passing a dict or None as alias_mapping:DeprecationWarning")
def test_summary_plot_trace_netcdf_and_the_command_line(tmp_path, capsys):
    import arviz as az
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sgmcmc.run_results import main

    folder, _ = run_experiment(config(tmp_path, "sgnht-normal_gamma-clip"))
    samples = npz(folder / "samples.npz")["theta"]
    result = load_run(folder)
    data = result.to_inference_data()
    summary = az.summary(data, round_to="none")
    np.testing.assert_allclose(summary["mean"].values, samples.mean(axis=(0, 1)), rtol=1e-12)
    np.testing.assert_allclose(summary["sd"].values, samples.reshape(-1, 2).std(axis=0, ddof=1), rtol=1e-12)
    axes = az.plot_trace(data)
    assert axes.shape == (1, 2)
    lines = axes[0, 1].get_lines()  # the trace panel: one line per chain and parameter, against the draws' steps
    plotted = sorted(tuple(line.get_ydata()) for line in lines)
    assert plotted == sorted(tuple(samples[c, :, j]) for c in range(N_CHAINS) for j in range(2))
    assert all(np.array_equal(line.get_xdata(), KEPT_STEPS) for line in lines)
    plt.close("all")

    path = result.to_netcdf()
    assert path == folder / "samples.nc"
    back = az.from_netcdf(str(path))
    np.testing.assert_array_equal(back.posterior["theta"].values, samples)
    np.testing.assert_array_equal(back.sample_stats["clipped"].values, npz(folder / "samples.npz")["clipped"])
    assert back.posterior.attrs["final.kl_pq"] == json.loads((folder / "metrics.json").read_text())["final"]["kl_pq"]
    assert set(back.groups()) == {"posterior", "sample_stats", "trace"}

    capsys.readouterr()
    assert main([str(folder), "--netcdf"]) == 0
    out = capsys.readouterr().out
    assert "ess_bulk" in out and "theta[0]" in out and "theta[1]" in out and f"wrote {path}" in out
    assert main([str(tmp_path / "nowhere")]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and error.startswith("error: ") and "nowhere" in error


def test_old_folder_gets_the_schedule_s_step_sizes_and_a_user_model_its_parameter_names(tmp_path):
    name = "sgnht-double_well-polynomial"
    run_config = config(tmp_path, name)
    folder, _ = run_experiment(run_config)
    theta = npz(folder / "samples.npz")["theta"]
    np.savez_compressed(folder / "samples.npz", theta=theta)  # as written before the sample statistics were kept
    data = load_run(folder).to_inference_data()
    assert set(data.sample_stats.data_vars) == {"step_size"}
    expected = step_size_formula(run_config["schedule"], 0.05, KEPT_STEPS)
    np.testing.assert_allclose(data.sample_stats["step_size"].values[0], expected, rtol=1e-14)
    np.testing.assert_array_equal(data.posterior["theta"].values, theta)

    np.savez_compressed(folder / "samples.npz", theta=theta, parameter_names=np.array(["location"]))
    data = load_run(folder).to_inference_data()
    assert list(data.posterior["parameter"].values) == ["location"]
    np.testing.assert_array_equal(data.posterior["theta"].sel(parameter="location").values, theta[:, :, 0])


def test_importing_sgmcmc_results_imports_no_arviz_until_a_folder_is_loaded():
    code = ("import sys, sgmcmc.results as results\n"
            "before = [m for m in ('arviz', 'xarray', 'pandas', 'sgmcmc.run_results') if m in sys.modules]\n"
            "print(before, results.load_run.__module__, 'arviz' in sys.modules)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[] sgmcmc.run_results True"


# -------------------------------------------------------------------- failed, interrupted, killed, resumed


def _stopping_at(step):
    def stopping(*args, observers=(), stop_requested=None, **kwargs):
        stop = RequestStopAt(step)
        return run_chains(*args, observers=[*observers, stop], stop_requested=lambda: stop.requested, **kwargs)

    return stopping


@pytest.mark.parametrize("name", ["hmc-double_well", "sgnht-normal_gamma-clip"])
def test_interrupted_killed_and_resumed_runs(name, tmp_path, monkeypatch):
    """Stopped after 31 steps (a checkpoint every 5): the folder loads with the uninterrupted run's first draws; with
    samples.npz and metrics.json gone (as a killed run leaves it) it loads them from its checkpoint; resumed, every
    array of samples.npz equals the uninterrupted run's bit for bit."""
    whole_folder, _ = run_experiment(config(tmp_path, name, "whole", checkpoint_every_steps=5))
    whole = npz(whole_folder / "samples.npz")
    with monkeypatch.context() as patch:
        patch.setattr(experiment, "run_chains", _stopping_at(31))
        folder, status = run_experiment(config(tmp_path, name, "stopped", checkpoint_every_steps=5))
    assert status == "interrupted"
    steps_done = json.loads((folder / "metrics.json").read_text())["steps_done"]
    n_kept = int(np.sum(KEPT_STEPS <= steps_done))
    assert 31 <= steps_done < N_STEPS and 0 < n_kept < KEPT_STEPS.size

    interrupted = load_run(folder)
    data = interrupted.to_inference_data()
    assert interrupted.status == "interrupted" and data.posterior.attrs["status"] == "interrupted"
    np.testing.assert_array_equal(data.posterior["theta"].values, whole["theta"][:, :n_kept])
    np.testing.assert_array_equal(data.posterior["draw"], KEPT_STEPS[:n_kept])

    saved = {path.name: path.read_bytes() for path in folder.iterdir() if path.name in ("samples.npz", "metrics.json")}
    for file in saved:
        (folder / file).unlink()
    killed = load_run(folder)
    assert killed.samples_source == "checkpoint.npz" and killed.metrics == {} and killed.status == "interrupted"
    data = killed.to_inference_data()
    np.testing.assert_array_equal(data.posterior["theta"].values, whole["theta"][:, :n_kept])
    for key in RUNS[name][3] - {"step_size"}:  # ArviZ's names; samples.npz's accept_probability is acceptance_rate
        stored = {"acceptance_rate": "accept_probability"}.get(key, key)
        np.testing.assert_array_equal(data.sample_stats[key].values, whole[stored][:, :n_kept], err_msg=key)
    for file, content in saved.items():
        (folder / file).write_bytes(content)

    resumed_folder, status = run_experiment(config(tmp_path, name, "stopped", checkpoint_every_steps=5,
                                                   resume=str(folder)))
    assert status == "completed" and resumed_folder == folder
    resumed = npz(folder / "samples.npz")
    stored = {{"acceptance_rate": "accept_probability"}.get(key, key) for key in RUNS[name][3]}  # samples.npz's names
    assert sorted(resumed) == sorted(whole) == sorted({"theta", *stored})
    for key in whole:
        np.testing.assert_array_equal(resumed[key], whole[key], err_msg=key)


def test_a_run_that_failed_before_sampling_loads_with_zero_draws(tmp_path, monkeypatch):
    def failing(*args, **kwargs):
        raise RuntimeError("injected bug")

    monkeypatch.setattr(experiment, "run_chains", failing)
    with pytest.raises(experiment.RunFailed) as raised:
        run_experiment(config(tmp_path, "sgnht-double_well-polynomial"))
    result = load_run(raised.value.folder)
    assert result.status == "failed" and result.samples_source is None and result.trace.empty
    data = no_warnings(result.to_inference_data)
    assert data.posterior["theta"].shape == (N_CHAINS, 0, 0) and data.posterior["draw"].size == 0
    assert data.posterior.attrs["status"] == "failed" and "injected bug" in data.posterior.attrs["error"]
    assert data.groups() == ["posterior"]  # no sample statistics, no trace rows: ArviZ leaves empty groups out


def test_a_folder_that_is_not_a_run_or_a_sweep_is_a_one_line_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such folder") as raised:
        load_run(tmp_path / "missing")
    assert str(tmp_path / "missing") in str(raised.value)
    (tmp_path / "empty").mkdir()
    for load, missing in ((load_run, "no config.yaml"), (load_sweep, "no manifest.json")):
        with pytest.raises(ValueError) as raised:
            load(tmp_path / "empty")
        message = str(raised.value)
        assert "\n" not in message and str(tmp_path / "empty") in message and missing in message, message
    (tmp_path / "empty" / "config.yaml").write_text("just: text\n")
    with pytest.raises(ValueError, match="is not a run's config"):
        load_run(tmp_path / "empty")


# -------------------------------------------------------------------------------------------------- sweeps


@pytest.fixture(scope="module")
def sweep_folder(tmp_path_factory):
    """``run.py -m`` over two step sizes and two seeds, one of them invalid: 4 jobs, 2 with run folders."""
    tmp_path = tmp_path_factory.mktemp("sweep")
    command = [sys.executable, str(ROOT / "run.py"), "-m", "sampler=sgnht", "target=double_well",
               "sampler.step_size=0.05,0.1", "seed=1,-1", f"run.n_steps={N_STEPS}", f"run.n_chains={N_CHAINS}",
               f"run.burn_in={BURN_IN}", f"run.thin={THIN}", f"run.eval_every={EVAL_EVERY}", "run.progress=false",
               "run.figures=false", f"run.results_dir={tmp_path / 'runs'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=600,
                            env=dict(os.environ, PYTHONPATH=str(ROOT), **THREADS))
    assert result.returncode == 1, result.stderr  # the jobs with seed=-1 fail
    return tmp_path / "sweep"


def test_sweep_lists_every_job_and_stacks_its_runs(sweep_folder):
    manifest = json.loads((sweep_folder / "manifest.json").read_text())
    ran = {job["job"]: Path(job["run_folder"]) for job in manifest["jobs"] if job["run_folder"]}
    assert len(manifest["jobs"]) == 4 and len(ran) == 2
    sweep = load_sweep(sweep_folder)
    assert sorted(sweep.runs) == sorted(ran)
    assert sorted(sweep.skipped) == sorted(job["job"] for job in manifest["jobs"] if not job["run_folder"])
    assert all("seed=-1 is invalid" in why for why in sweep.skipped.values())
    assert {job: run.folder for job, run in sweep.runs.items()} == ran

    table = sweep.table()
    assert len(table) == 4 and sorted(table["job"]) == [0, 1, 2, 3]

    separate = sweep.to_inference_data()
    assert sorted(separate) == sorted(ran)
    combined = no_warnings(sweep.to_inference_data, combined=True)
    theta = combined.posterior["theta"]
    assert theta.dims == ("run", "chain", "draw", "parameter") and theta.shape == (2, N_CHAINS, KEPT_STEPS.size, 1)
    np.testing.assert_array_equal(combined.posterior["run"], sorted(ran))
    for job, folder in ran.items():
        written = npz(folder / "samples.npz")
        np.testing.assert_array_equal(theta.sel(run=job).values, written["theta"])
        np.testing.assert_array_equal(combined.sample_stats["xi"].sel(run=job).values, written["xi"])
        overrides = " ".join(next(j["overrides"] for j in manifest["jobs"] if j["job"] == job))
        assert combined.posterior["overrides"].sel(run=job).item() == overrides
        step_size = yaml.safe_load((folder / "config.yaml").read_text())["sampler"]["step_size"]
        np.testing.assert_array_equal(combined.sample_stats["step_size"].sel(run=job).values, step_size)
    assert combined.trace["kl_pq"].dims == ("run", "step")
    assert combined.posterior.attrs["sampler"] == "sgnht" and "seed" in combined.posterior.attrs  # shared by both


def test_a_sweep_of_runs_with_other_shapes_does_not_combine(tmp_path):
    from sgmcmc_cli import sweep

    folders = [run_experiment(config(tmp_path, "sgnht-double_well-polynomial", n_chains=n))[0] for n in (3, 4)]
    sweep.plan(tmp_path / "sweep", [["run.n_chains=3"], ["run.n_chains=4"]], "by hand")
    for number, folder in enumerate(folders):
        sweep.record(tmp_path / "sweep", number, [f"run.n_chains={3 + number}"], "completed", str(folder))
    sweep.finish(tmp_path / "sweep")
    result = load_sweep(tmp_path / "sweep")
    assert [run.samples.shape[0] for run in result.runs.values()] == [3, 4]
    with pytest.raises(ValueError) as raised:
        result.to_inference_data(combined=True)
    message = str(raised.value)
    assert "\n" not in message and "'chain': 3" in message and "'chain': 4" in message, message
    assert "job 0" in message and "job 1" in message


def test_unreadable_files_are_one_line_errors_and_a_big_posterior_is_summarised_in_part(tmp_path, capsys):
    """A corrupt samples.npz or trace.csv, or a killed run's unusable checkpoint, is a one-line ValueError naming the
    file (the command line: exit 2), not zero draws; the command line's summary of 60 parameters shows the first 50."""
    from sgmcmc.run_results import SUMMARY_MAX_PARAMETERS, main

    folder, status = run_experiment(config(tmp_path, "hmc-double_well"))
    wide = np.random.default_rng(0).standard_normal((N_CHAINS, KEPT_STEPS.size, 60))
    np.savez(folder / "samples.npz", theta=wide)
    assert main([str(folder)]) == 0
    printed = capsys.readouterr().out
    assert f"the first {SUMMARY_MAX_PARAMETERS} of 60 parameters" in printed
    assert "theta[49]" in printed and "theta[50]" not in printed

    (folder / "trace.csv").write_text('step,n_samples\n1,"2\n')
    with pytest.raises(ValueError, match=r"trace.csv is unreadable") as error:
        load_run(folder)
    assert "\n" not in str(error.value)
    (folder / "samples.npz").write_bytes(b"PK\x03\x04 not an archive")
    with pytest.raises(ValueError, match=r"samples.npz is unreadable") as error:
        load_run(folder)
    assert "\n" not in str(error.value) and main([str(folder)]) == 2
    (folder / "samples.npz").unlink()
    (folder / "checkpoint.npz").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match=r"no samples.npz, and its checkpoint is unusable"):
        load_run(folder)
