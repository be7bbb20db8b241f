"""Failures a user meets, through the command line (issue 18): a run that would not fit in memory, a results folder
that cannot be created, a run that fails mid-way (a full disk, a data file found bad) and an unexpected exception.
Each is one line on stderr, no traceback on the terminal, the right exit code, metrics.json status ``failed`` where
a run folder exists and the traceback in its run.log; the memory estimate against a hand computation."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.common import compose
from sgmcmc import experiment
from sgmcmc.experiment import build, run_experiment
from sgmcmc.samplers import make_sampler

ROOT = Path(__file__).resolve().parents[1]
TINY = ["run.n_steps=10", "run.n_chains=4", "run.burn_in=0", "run.eval_every=5", "run.progress=false",
        "run.figures=false"]
THREADS = {key: "1" for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
# kept samples of 100,000 chains x 10^7 steps x d = 1: 8e12 bytes, 7450.6 GiB
BEYOND_MEMORY = ["target=double_well", "run.n_chains=100000", "run.n_steps=10000000", "run.burn_in=0"]

# Runs run.py as ``python run.py`` does (its __main__), after replacing a function of sgmcmc.experiment: a failure
# from inside a real run, where none can be provoked from outside.
INJECT = """
import errno, runpy, sys
import sgmcmc.experiment as experiment
from sgmcmc.data import DataError

class FailAtStep:  # an observer of the run's blocks: raises once the chains have done 5 steps
    name = "fail_at_step"

    def update(self, block):
        if block.stop >= 5:
            raise {error}

def run_chains(*args, observers=(), original=experiment.run_chains, **kwargs):
    return original(*args, observers=[*observers, FailAtStep()], **kwargs)

def write_samples(path, **arrays):
    raise OSError(errno.ENOSPC, "No space left on device", str(path))

def build(config):
    raise {error}

experiment.{attribute} = {function}
runpy.run_path({run_py!r}, run_name="__main__")
"""


def command_line(*args, results_dir, replace=None, error=None):
    """``python run.py <args> run.results_dir=<results_dir>``; with ``replace`` that function of sgmcmc.experiment
    replaced by INJECT's function of the same name (``_build`` by its ``build``), which raises ``error``."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **THREADS)
    env.pop("HYDRA_FULL_ERROR", None)
    start = [str(ROOT / "run.py")]
    if replace is not None:
        start = ["-c", INJECT.format(error=error, attribute=replace, function=replace.lstrip("_"),
                                     run_py=str(ROOT / "run.py"))]
    command = [sys.executable, *start, *args, f"run.results_dir={results_dir}"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def one_line(result, code: int, *needles) -> str:
    """The run's only stderr line: exit ``code``, no traceback on stdout or stderr, ``needles`` in the line."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr, result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert all(needle in lines[0] for needle in needles), lines[0]
    return lines[0]


def run_folders(results_dir: Path) -> list[Path]:
    return sorted(path for path in results_dir.iterdir() if path.is_dir()) if results_dir.is_dir() else []


def assert_failed_run(result, results_dir: Path, *needles) -> dict:
    """A run that failed after its folder existed: one line naming run.log, exit 1, metrics.json status failed with
    the error, the traceback in run.log; returns metrics.json."""
    line = one_line(result, 1, "run.log", *needles)
    (folder,) = run_folders(results_dir)
    assert result.stdout.strip().splitlines()[-1] == str(folder)  # the last line printed is the run folder
    assert f"traceback in {folder / 'run.log'}" in line
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["status"] == "failed" and all(needle in metrics["error"] for needle in needles), metrics
    assert "\n" not in metrics["error"] and metrics["error"] in line
    log = (folder / "run.log").read_text()
    assert "Traceback (most recent call last)" in log and f"run failed: {metrics['error']}" in log, log
    return metrics


# -- the memory guard --------------------------------------------------------------------------------------------


def test_run_beyond_memory_stops_before_its_folder_with_one_line(tmp_path):
    results = tmp_path / "runs"
    line = one_line(command_line(*BEYOND_MEMORY, results_dir=results), 2, "7450.6 GiB", "GiB is available",
                    "run.n_chains", "run.thin")
    assert not results.exists(), line


def test_a_sweep_records_the_job_beyond_memory_as_failed_and_runs_the_others(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **THREADS)
    command = [sys.executable, str(ROOT / "run.py"), "-m", "run.n_chains=4,1000000000000",
               *(item for item in TINY if not item.startswith("run.n_chains=")),
               f"run.results_dir={tmp_path / 'runs'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr, result.stderr
    manifest = json.loads((tmp_path / "sweep" / "manifest.json").read_text())
    assert [job["status"] for job in manifest["jobs"]] == ["completed", "failed"], manifest
    failed = manifest["jobs"][1]
    assert failed["run_folder"] is None and "GiB of memory" in failed["error"] and "run.n_chains" in failed["error"]
    assert len(run_folders(tmp_path / "runs")) == 1


def test_memory_estimate_against_a_hand_computation():
    from sgmcmc.memory import RunShape, big_arrays, run_shape, snapshot_count

    # CCAdL's default (full running estimate) on the DRBM's letter data: d = 16*100 + 100 + 100*26 + 26 = 4326
    drbm = RunShape(n_chains=1000, dim=4326, n_kept=1000, running_full=True)
    assert [(array.nbytes, array.keys[:2]) for array in big_arrays(drbm)] == [
        (4 * 1000 * 4326**2 * 8, ("run.n_chains", "sampler.running_form=diagonal")),  # 598,823,424,000 bytes
        (1000 * 1000 * 4326 * 8, ("run.n_chains", "run.thin"))]  # 34,608,000,000 bytes
    # a built run: CCAdL on Normal-Gamma (d = 2, a data target on the engine's blocks), 3 chains, steps 11..50
    # kept every 4th (10), snapshots at steps 0, 7, 14, 21, 28 (5)
    # (the engine's blocks as Python: the build compiles none, and the shapes do not depend on it)
    config = compose(["target=normal_gamma", "sampler=ccadl", "run.n_chains=3", "run.n_steps=50", "run.burn_in=10",
                      "run.thin=4", "run.snapshot_every=7", "run.snapshot_until=30", "run.backend=python"])
    built = build(config)
    shape = run_shape(built.sampler, built.settings)
    assert shape == RunShape(n_chains=3, dim=2, n_kept=10, n_snapshots=5, moment_covariance=True, running_full=True)
    sizes = {array.what.split(" (")[0]: array.nbytes for array in big_arrays(shape)}
    assert sizes == {"kept samples": 3 * 10 * 2 * 8, "snapshots": 3 * 5 * 2 * 8, "moment covariances": 2 * 3 * 4 * 8,
                     "full running noise estimate": 4 * 3 * 4 * 8}
    assert snapshot_count(50, 7, None) == 8 and snapshot_count(50, 7, 100) == 8 and snapshot_count(50, 0, None) == 0
    # the known V(θ) of a data target, and no data kernel's matrices on the engine's blocks (Normal-Gamma's)
    config = compose(["target=normal_gamma", "sampler=sgld", "sampler.noise_estimate=known", "sampler.step_size=1e-4",
                      "run.n_chains=3", "run.backend=python"])
    built = build(config)
    shape = run_shape(built.sampler, built.settings)
    assert shape.known_data_noise and not shape.running_full
    config = compose(["target=normal_gamma", "sampler=sgld", "sampler.noise_estimate=zero", "sampler.step_size=1e-4",
                      "run.n_chains=3", "run.backend=python"])
    built = build(config)
    shape = run_shape(built.sampler, built.settings)
    assert not shape.known_data_noise
    # HMC takes noise_estimate=running but keeps no Î in its state: nothing counted for it
    hmc = make_sampler("hmc", built.target, noise_estimate="running")
    assert not run_shape(hmc, built.settings).running_full
    # a data target that keeps its V(θ) unknown (the BPMF's d = 204,666: its noise_covariance is None) has no d×d
    # matrix with noise_estimate=known
    from numpy.random import default_rng as make_rng

    from sgmcmc.targets.bpmf import BPMF

    bpmf = BPMF([0, 1, 1], [1, 0, 1], [4, 2, 5], n_users=2, n_items=2, latent_dim=3, batch_size=2)
    sgld = make_sampler("sgld", bpmf, noise_estimate="known")
    assert bpmf.noise_covariance(bpmf.initial_position(1, make_rng(0))) is None
    assert not run_shape(sgld, built.settings).known_data_noise


def test_memory_problem_line_and_available_memory(tmp_path):
    from sgmcmc.memory import GIB, ArrayEstimate, available_memory, memory_problem

    arrays = [ArrayEstimate("kept samples", 3 * GIB, ("run.n_chains", "run.thin")),
              ArrayEstimate("running", GIB, ("run.n_chains", "sampler.running_form=diagonal")),
              ArrayEstimate("tiny", 1, ("run.snapshot_every",))]
    assert memory_problem(arrays, 4 * GIB + 1) is None and memory_problem(arrays, None) is None
    line = memory_problem(arrays, 2 * GIB)
    assert line == ("the run needs at least 4.0 GiB of memory and 2.0 GiB is available: kept samples 3.0 GiB, running "
                    "1.0 GiB; change run.n_chains, run.thin, sampler.running_form=diagonal")
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal:       16384 kB\nMemFree:         1024 kB\nMemAvailable:    2048 kB\n")
    cgroup = tmp_path / "cgroup"
    cgroup.mkdir()
    assert available_memory(meminfo, cgroup) == 2048 * 1024
    (cgroup / "memory.max").write_text("max\n")
    assert available_memory(meminfo, cgroup) == 2048 * 1024
    (cgroup / "memory.max").write_text(f"{1024 * 1024}\n")
    (cgroup / "memory.current").write_text(f"{1024 * 1024 - 4096}\n")
    assert available_memory(meminfo, cgroup) == 4096
    assert available_memory(tmp_path / "none", tmp_path / "none") > 0  # os.sysconf's free pages


# -- the results folder ------------------------------------------------------------------------------------------


def test_a_results_dir_that_cannot_be_created_is_one_line(tmp_path):
    a_file = tmp_path / "a_file"
    a_file.write_text("not a folder")
    for results in (a_file / "runs", a_file):
        line = one_line(command_line(*TINY, results_dir=results), 2, f"run.results_dir={results}", f"{a_file} is a file",
                        "set run.results_dir to a folder you can write to")
        assert a_file.read_text() == "not a folder", line


# -- failures once the run folder exists -------------------------------------------------------------------------


def test_a_full_disk_while_writing_results_fails_the_run_with_one_line(tmp_path):
    metrics = assert_failed_run(command_line(*TINY, results_dir=tmp_path, replace="write_samples"), tmp_path,
                                "OSError: [Errno 28] No space left on device", "samples.npz")
    assert metrics["steps_done"] == 10 and metrics["n_samples"] == 40  # the sampling had ended


def test_a_data_file_found_bad_mid_run_fails_the_run_with_one_line(tmp_path):
    error = 'DataError("mnist/train-images-idx3-ubyte is truncated; download it again")'
    metrics = assert_failed_run(command_line(*TINY, results_dir=tmp_path, replace="run_chains", error=error), tmp_path,
                                "DataError: mnist/train-images-idx3-ubyte is truncated; download it again")
    assert metrics["steps_done"] is None and metrics["final"] == {}


def test_an_unexpected_exception_mid_run_is_one_line_naming_run_log(tmp_path):
    error = 'RuntimeError("injected bug\\nsecond line")'
    assert_failed_run(command_line(*TINY, results_dir=tmp_path, replace="run_chains", error=error), tmp_path,
                      "RuntimeError: injected bug")


def test_an_unexpected_exception_before_the_run_folder_is_one_line(tmp_path):
    result = command_line(*TINY, results_dir=tmp_path / "runs", replace="_build", error='RuntimeError("injected bug")')
    one_line(result, 1, "RuntimeError: injected bug", "before the run folder was created")
    assert not (tmp_path / "runs").exists()


def test_a_failed_run_keeps_the_metrics_schema(tmp_path, monkeypatch):
    from sgmcmc.experiment import RunFailed

    config = compose([*TINY, f"run.results_dir={tmp_path}"])
    folder, status = run_experiment(config)
    completed = json.loads((folder / "metrics.json").read_text())

    def write_rows(path, rows):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(experiment, "write_rows", write_rows)
    with pytest.raises(RunFailed) as raised:
        run_experiment(config)
    failed = json.loads((raised.value.folder / "metrics.json").read_text())
    assert status == "completed" and list(failed) == list(completed)
    assert failed["status"] == "failed" and failed["error"] == raised.value.error
    assert raised.value.error.startswith("PermissionError: [Errno 13] Permission denied") and "trace.csv" in failed["error"]
    assert raised.value.log == raised.value.folder / "run.log"
    assert isinstance(raised.value.__cause__, PermissionError)
    assert "\n" not in str(raised.value)
