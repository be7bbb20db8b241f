"""Sweeps (python run.py -m): one failing job does not stop the others, every job has its own run folder,
the sweep's manifest.json lists them, and sgmcmc.collect gathers them into one table."""

import json
import multiprocessing
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from sgmcmc_cli import sweep
from sgmcmc.collect import collect

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["run.n_steps=60", "run.n_chains=8", "run.burn_in=30", "run.eval_every=30", "run.progress=false",
         "run.figures=false"]
THREADS = {key: "1" for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}


def run_sweep(*args, tmp_path):
    """``python run.py -m <args>`` with run folders in tmp_path/runs and the sweep folder tmp_path/sweep."""
    env = dict(os.environ, PYTHONPATH=str(ROOT), **THREADS)
    command = [sys.executable, str(ROOT / "run.py"), "-m", *args, *SMALL, f"run.results_dir={tmp_path / 'runs'}",
               f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)


def overrides_of(job):
    return dict(item.split("=", 1) for item in job["overrides"])


def check_run_folders(manifest, tmp_path):
    """Every job that ran has its own run folder, holding its own config."""
    ran = [job for job in manifest["jobs"] if job["run_folder"] is not None]
    folders = [Path(job["run_folder"]) for job in ran]
    assert len(set(folders)) == len(folders)
    assert sorted(folders) == sorted(p.resolve() for p in (tmp_path / "runs").iterdir())
    for job, folder in zip(ran, folders):
        config = yaml.safe_load((folder / "config.yaml").read_text())
        assert config["seed"] == int(overrides_of(job)["seed"])
        assert json.loads((folder / "metrics.json").read_text())["status"] == job["status"]


def test_joblib_sweep_of_8_jobs_with_one_bad_value_runs_the_other_7(tmp_path):
    # seed=-1 composes (an integer) but sgmcmc.config.validate_config rejects it: that job fails alone
    result = run_sweep("hydra/launcher=joblib", "hydra.launcher.n_jobs=2", "seed=1,2,3,4,5,-1,6,7", tmp_path=tmp_path)
    bad_line = "seed=-1 is invalid: allowed values are integers >= 0"
    # the sweep's exit code is 1 when a job failed, after every job has run
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: 1 of 8 jobs failed (job 5: {bad_line})") and "manifest.json" in last, last

    manifest = sweep.read(tmp_path / "sweep")
    assert [job["job"] for job in manifest["jobs"]] == list(range(8))
    assert manifest["counts"] == {"completed": 7, "failed": 1}
    assert "JoblibLauncher" in manifest["launcher"]
    failed = manifest["jobs"][5]
    assert failed["status"] == "failed" and failed["error"] == bad_line and failed["run_folder"] is None
    assert [overrides_of(job)["seed"] for job in manifest["jobs"]] == ["1", "2", "3", "4", "5", "-1", "6", "7"]
    check_run_folders(manifest, tmp_path)

    table = collect(tmp_path)
    assert len(table) == 8 and sorted(table["status"]) == ["completed"] * 7 + ["failed"]
    row = table[table["status"] == "failed"].iloc[0]
    assert row["error"] == bad_line and row["seed"] == -1 and row["job"] == 5 and pd.isna(row["run_folder"])
    completed = table[table["status"] == "completed"]
    assert sorted(completed["seed"]) == [1, 2, 3, 4, 5, 6, 7] and completed["run_folder"].is_unique
    assert completed["kl_pq"].notna().all() and (completed["sampler"] == "sgrhmc").all()


def test_basic_launcher_goes_on_after_a_failed_job_and_records_a_diverged_one(tmp_path):
    result = run_sweep("sampler=sgld", "sampler.step_size=0.02,0.3", "seed=1,-1", tmp_path=tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    manifest = sweep.read(tmp_path / "sweep")
    assert [job["status"] for job in manifest["jobs"]] == ["completed", "failed", "diverged", "failed"]
    assert "non-finite" in manifest["jobs"][2]["error"]
    check_run_folders(manifest, tmp_path)

    table = collect(tmp_path / "sweep")  # follows the manifest to run folders outside the sweep folder
    assert list(table["status"]) == ["completed", "failed", "diverged", "failed"]
    assert list(table["sampler.step_size"]) == [0.02, 0.02, 0.3, 0.3] and list(table["seed"]) == [1, -1, 1, -1]


def test_collect_command_writes_the_table_in_the_folder(tmp_path):
    result = run_sweep("sampler=sgld,sghmc", "seed=3", tmp_path=tmp_path)
    assert result.returncode == 0, result.stderr
    command = [sys.executable, "-m", "sgmcmc.collect", str(tmp_path)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = done.stdout.strip().splitlines()
    assert printed[0] == str(tmp_path / "collected.csv")
    table = pd.read_csv(tmp_path / "collected.csv")
    assert list(table.columns[:7]) == ["run_folder", "status", "error", "sampler", "target", "schedule", "seed"]
    assert list(table["sampler"]) == ["sgld", "sghmc"] and list(table["job"]) == [0, 1]
    assert table["run_folder"].str.startswith("runs/").all() and (table["status"] == "completed").all()
    # config values that differ between the runs get a column; those shared by all do not
    assert "sampler.friction" in table and "sampler.integrator" in table and "run.n_steps" not in table
    assert {"kl_pq", "w1", "ess_bulk_min", "steps_done", "wall_time_s"} <= set(table.columns)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        assert not (tmp_path / "collected.parquet").exists()
    else:
        assert printed[1] == str(tmp_path / "collected.parquet")
        assert len(pd.read_parquet(tmp_path / "collected.parquet")) == 2

    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([sys.executable, "-m", "sgmcmc.collect", str(empty)], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.startswith("error: no runs below")


def _record(sweep_dir, num):
    sweep.record(sweep_dir, num, [f"seed={num}"], "completed", None)


def test_manifest_keeps_every_record_when_jobs_end_at_once(tmp_path):
    sweep.plan(tmp_path, [[f"seed={num}"] for num in range(12)], "test")
    assert sweep.read(tmp_path)["counts"] == {"pending": 12}
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        pool.starmap(_record, [(str(tmp_path), num) for num in range(12)])
    manifest = sweep.finish(tmp_path)
    assert manifest["counts"] == {"completed": 12} and [job["job"] for job in manifest["jobs"]] == list(range(12))
    assert sweep.exit_code(manifest) == (0, None)
    assert not (tmp_path / sweep.RECORDS).exists()  # the manifest holds the records now
    (tmp_path / sweep.RECORDS).mkdir()
    (tmp_path / sweep.RECORDS / "3.json").write_text("{}")
    assert sweep.plan(tmp_path, None, "test")["jobs"] == []  # a new sweep in the same folder forgets old records


def test_exit_code_of_a_sweep():
    def manifest(*statuses):
        return {"sweep_dir": "/s", "jobs": [{"job": i, "status": s, "error": None} for i, s in enumerate(statuses)]}

    assert sweep.exit_code(manifest("completed", "diverged"))[0] == 0
    assert sweep.exit_code(manifest("completed", "interrupted"))[0] == 130
    code, line = sweep.exit_code(manifest("interrupted", "pending"))
    assert code == 1 and line.startswith("error: 1 of 2 jobs failed (job 1: it never reported")


def test_error_line():
    from sgmcmc.config import ConfigError

    assert sweep.error_line(ConfigError("seed=-1 is invalid")) == "seed=-1 is invalid"
    assert sweep.error_line(ValueError("bad\nsecond line")) == "ValueError: bad"
    assert sweep.error_line(KeyError()) == "KeyError"
    assert sweep.error_line(None) is None
