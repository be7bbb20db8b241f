"""The command line as a user runs it: result folder, config errors, determinism, divergence."""

import functools
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from sgmcmc.experiment import run_experiment
from sgmcmc.samplers import SAMPLERS
from tests.helpers import composed

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["run.n_steps=120", "run.n_chains=40", "run.burn_in=60", "run.eval_every=30", "run.progress=false"]


def run_cli(*args, results_dir, env=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT), **(env or {}))
    command = [sys.executable, str(ROOT / "run.py"), *args, f"run.results_dir={results_dir}"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def folders(results_dir):
    return sorted(p for p in Path(results_dir).glob("*") if p.is_dir()) if Path(results_dir).exists() else []


def test_default_experiment_writes_a_complete_result_folder(tmp_path):
    result = run_cli(*SMALL, results_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])
    assert folder.parent == tmp_path and folder.is_dir()
    for name in ("config.yaml", "metrics.json", "samples.npz", "trace.csv", "provenance.json", "run.log"):
        assert (folder / name).is_file(), name
    theta = np.load(folder / "samples.npz")["theta"]
    assert theta.shape == (40, 60, 1)
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["status"] == "completed" and metrics["steps_done"] == 120
    assert {"kl_pq", "kl_qp", "w1", "mean_error", "second_moment_error", "autocorrelation_time", "ess_bulk_min"} <= set(metrics["final"])
    assert metrics["wall_time_s"] > 0 and metrics["steps_per_second"] > 0
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["sampler"]["name"] == "sgrhmc" and config["target"]["name"] == "double_well" and config["run"]["n_steps"] == 120
    provenance = json.loads((folder / "provenance.json").read_text())
    assert {"git_commit", "git_dirty", "packages", "command_line", "seed", "results_schema_version"} <= set(provenance)
    trace = pd.read_csv(folder / "trace.csv")
    assert list(trace["step"]) == [30, 60, 90, 120] and trace["kl_pq"].notna().sum() == 2
    for figure in metrics["figures"]:
        assert (folder / figure).stat().st_size > 1000
    assert "figures/histogram.png" in metrics["figures"]


@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
def test_every_sampler_runs_on_double_well(sampler, tmp_path):
    """``run.py``'s config of every sampler, run in this process (the command line's own start and exit are the
    other tests': a start of ``python run.py`` is about 2 s, most of it imports)."""
    # CCAdL's default running estimate needs per-example gradients; the synthetic target knows its V
    extra = ["sampler.noise_estimate=known"] if sampler == "ccadl" else []
    folder, status = run_experiment(composed(f"sampler={sampler}", "target=double_well", *SMALL, *extra,
                                             f"run.results_dir={tmp_path}"))
    assert status == "completed"
    kept = 0 if SAMPLERS[sampler].kind == "optimiser" else 60  # an optimiser keeps no samples
    assert np.load(folder / "samples.npz")["theta"].shape == (40, kept, 1)
    assert json.loads((folder / "metrics.json").read_text())["status"] == "completed"


def test_two_dimensional_target_draws_the_contour(tmp_path):
    result = run_cli("sampler=sghmc", "target=correlated_2d", *SMALL, results_dir=tmp_path)
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])
    assert (folder / "figures" / "contour.png").is_file()
    assert np.load(folder / "samples.npz")["theta"].shape == (40, 60, 2)


@pytest.mark.parametrize(
    "override, needle",
    [
        ("sampler=nope", "sampler='nope' is invalid: allowed values are badodab, baoab, ccadl, ccadl_shang2015, hmc, naive_sghmc"),
        ("target=nope", "target='nope' is invalid: allowed values are"),
        ("schedule=nope", "schedule='nope' is invalid: allowed values are constant, cyclical, polynomial"),
        ("sampler.step_size=-1", "sampler.step_size=-1.0 is invalid: allowed values are numbers > 0.0"),
        ("sampler.step_size=0", "sampler.step_size=0.0 is invalid"),
        ("run.n_steps=0", "run.n_steps=0 is invalid: allowed values are integers >= 1"),
        ("run.n_steps=abc", "run.n_steps='abc' is invalid: expected an integer"),
        ("run.n_chains=2.5", "run.n_chains=2.5 is invalid: expected an integer"),
        ("seed=-3", "seed=-3 is invalid"),
        ("run.progress=maybe", "run.progress='maybe' is invalid: allowed values are true, false"),
        ("sampler.noise_estimate=exact", "sampler.noise_estimate='exact' is invalid: allowed values are known, zero"),
        ("sampler.integrator=rk4", "sampler.integrator='rk4' is invalid: allowed values are splitting, euler, theta_first, aboba, generic"),
        ("sampler.frictio=1", "sampler.frictio is not a known key of sampler 'sgrhmc'"),
        ("bogus=1", "bogus is not a known key"),
        ("run.burn_in=500", "run.burn_in=500 is invalid: allowed values are integers < run.n_steps=120"),
        ("target.noise_variance=-1", "target.noise_variance=-1.0 is invalid"),
    ],
)
def test_bad_config_exits_2_with_one_line_and_no_folder(override, needle, tmp_path):
    result = run_cli(*SMALL, override, results_dir=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and needle in lines[0], lines[0]
    assert "Traceback" not in result.stderr + result.stdout
    assert folders(tmp_path) == []


def test_noise_too_large_for_friction_is_a_config_error(tmp_path):
    result = run_cli("sampler=sghmc", "sampler.friction=0.1", *SMALL, results_dir=tmp_path)
    assert result.returncode == 2 and "injected noise covariance" in result.stderr
    assert folders(tmp_path) == []


@pytest.mark.parametrize("sampler, bound", [(["sampler=sgld"], "0.005"),  # 2/V
                                            (["sampler=sghmc", "sampler.friction=0.5"], "0.0025")])  # 2C/V
def test_the_refusal_names_the_largest_step_size(sampler, bound, tmp_path):
    """On N(0, 1) with gradient noise V = 400 the injected covariance ε(2D − εV) is PSD up to ε = 2D/V: the refusal
    of ε = 0.01 gives that bound (written out here), not only "lower sampler.step_size"."""
    result = run_cli("target=gaussian_1d", "target.noise_variance=400", *sampler, "sampler.step_size=0.01",
                     results_dir=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"lower sampler.step_size below {bound} (the largest for which it is PSD at the run's start)" in result.stderr


def test_same_seed_gives_identical_samples_and_another_seed_does_not(tmp_path):
    runs = [run_cli(*SMALL, f"seed={seed}", results_dir=tmp_path) for seed in (5, 5, 6)]
    thetas = [np.load(Path(r.stdout.strip().splitlines()[-1]) / "samples.npz")["theta"] for r in runs]
    assert np.array_equal(thetas[0], thetas[1])
    assert not np.array_equal(thetas[0], thetas[2])
    assert len(folders(tmp_path)) == 3


def test_diverging_chain_stops_with_status_diverged_and_keeps_samples(tmp_path):
    result = run_cli("sampler=sgld", "sampler.step_size=0.1", "run.n_steps=400", "run.n_chains=200", "run.burn_in=5",
                     "run.progress=false", results_dir=tmp_path)
    assert result.returncode == 3, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["status"] == "diverged" and "non-finite" in metrics["error"]
    theta = np.load(folder / "samples.npz")["theta"]
    assert metrics["steps_done"] < 400
    assert theta.shape == (200, metrics["steps_done"] - 5, 1) and theta.shape[1] > 0 and np.isfinite(theta).all()


def test_running_noise_estimate_on_a_synthetic_target_is_one_clear_error(tmp_path):
    result = run_cli("sampler=ccadl", "target=double_well", "sampler.noise_estimate=running", *SMALL, results_dir=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "noise_estimate=running" in lines[0] and "known or zero" in lines[0], lines
    assert not any(tmp_path.iterdir())


def test_missing_data_offline_is_one_line_naming_the_files_and_folder(tmp_path):
    """No MNIST in the data folder and no network (downloads point at a closed local port): one line, exit 2."""
    data = tmp_path / "data"
    data.mkdir()
    result = run_cli("target=logistic_mnist79", "sampler=sgld", f"data_dir={data}", *SMALL, results_dir=tmp_path / "runs",
                     env={"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9"})
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "train-images-idx3-ubyte.gz" in lines[0] and str(data) in lines[0], lines[0]
    assert folders(tmp_path / "runs") == []


def _commands() -> list[list[str]]:
    """Every command line of the repository: a top-level script by its path, a module with a ``__main__`` block
    (sgmcmc, experiments, benchmarks, scripts) by ``-m``."""
    commands = []
    for path in sorted(ROOT.glob("*.py")):
        if '__name__ == "__main__"' in path.read_text():
            commands.append([path.name])
    for package in ("sgmcmc", "experiments", "benchmarks", "scripts"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if '__name__ == "__main__"' in path.read_text():
                commands.append(["-m", ".".join(path.relative_to(ROOT).with_suffix("").parts)])
    return commands


@functools.cache
def _help_of_every_command() -> dict:
    """Every command's ``--help`` (:func:`_commands`), each in a process forked from one that imported their shared
    libraries once (tests/command_help.py): a process started for each took 41 s of the suite, this 9 s. Kept whatever
    it gives, a failure too, so that one failure is not paid again by each command's test."""
    commands = [" ".join(command) for command in _commands()]
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "help.json"
        result = subprocess.run([sys.executable, str(ROOT / "tests" / "command_help.py"), str(output), *commands],
                                capture_output=True, text=True, cwd=ROOT, timeout=900)
        if result.returncode != 0 or not output.exists():
            return {"error": f"tests/command_help.py exited {result.returncode}: {result.stderr}"}
        return json.loads(output.read_text())


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
@pytest.mark.xdist_group("command_help")  # one worker runs every command's --help, once
@pytest.mark.parametrize("command", _commands(), ids=lambda command: command[-1])
def test_every_command_s_help_exits_0_with_its_usage(command):
    results = _help_of_every_command()
    assert "error" not in results, results.get("error")
    result = results[" ".join(command)]
    assert result["returncode"] == 0, result["stderr"]
    assert result["stdout"].strip() and "Traceback" not in result["stderr"], (result["stdout"], result["stderr"])

