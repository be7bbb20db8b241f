"""Start-up of ``python run.py``: what it imports before the run needs it, what a whole run imports (no ArviZ, no
pandas; matplotlib only for the figures), how often it composes and builds the config (once each), and the garbage
collector (off during the command line's start-up, then on with the start-up's objects frozen). No timings: the
modules and the counts only."""

import gc
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
# what composing, checking and building a toy run's config does not need: figures, ArviZ (the final ESS), data
# tables, data files and their libraries, the distributed launchers, the targets that use them
HEAVY = ("matplotlib", "arviz", "xarray", "pandas", "sklearn", "ray", "submitit", "scipy.stats", "sgmcmc.plotting",
         "sgmcmc.data.files", "sgmcmc.data.mnist", "sgmcmc.lda", "sgmcmc.targets.lda",
         "sgmcmc.targets.logistic_regression", "sgmcmc.targets.drbm", "sgmcmc.targets.correlated_2d",
         "sgmcmc.targets.normal_gamma", "sgmcmc.targets.welling_teh_mixture")


def imported_after(code: str) -> list[str]:
    """The HEAVY modules in sys.modules after ``code`` runs in a fresh interpreter."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_the_experiment_module_imports_no_heavy_library():
    assert imported_after("import sgmcmc.experiment, sgmcmc.config, sgmcmc.targets, sgmcmc.data") == []


def test_composing_checking_and_building_a_toy_run_imports_no_heavy_library():
    code = f"""
import importlib.util
spec = importlib.util.spec_from_file_location("run", {str(ROOT / "run.py")!r})
run = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run)
one = run.preflight(["sampler=sghmc", "target=double_well", "run.n_steps=10", "run.burn_in=0", "run.n_chains=2"])
assert isinstance(one, run.OneRun), one
from sgmcmc.experiment import build
from sgmcmc_cli.single_run import job_config
built = build(run.resolved(job_config(one.config)))
assert built.target.name == "double_well" and built.sampler.name == "sghmc"
"""
    assert imported_after(code) == []


def test_the_data_and_target_registries_import_on_use():
    code = """
import sgmcmc.data, sgmcmc.targets
from sgmcmc.data import DataError
assert "fetch" in dir(sgmcmc.data)
target = sgmcmc.targets.make_target("gaussian_2d_cov")
assert target.name == "gaussian_2d_cov"
"""
    assert imported_after(code) == []
    loaded = imported_after("from sgmcmc.data import fetch, load_mnist\nfrom sgmcmc.targets import Correlated2D")
    assert {"sgmcmc.data.files", "sgmcmc.data.mnist", "sgmcmc.targets.correlated_2d"} <= set(loaded)


def run_command_line(results, *overrides: str) -> list[str]:
    """The HEAVY modules after ``python run.py`` (as __main__) runs a short double-well run with ``overrides``; the
    collector is on at its end, with the start-up's objects frozen."""
    argv = [str(ROOT / "run.py"), "run.n_steps=20", "run.burn_in=0", "run.n_chains=2", "run.eval_every=10",
            "run.progress=false", f"run.results_dir={results}", *overrides]
    code = f"""
import gc, json, runpy, sys
sys.argv = {argv!r}
runpy.run_path(sys.argv[0], run_name="__main__")
assert gc.isenabled() and gc.get_freeze_count() > 0, (gc.isenabled(), gc.get_freeze_count())
"""
    return imported_after(code)


def test_a_run_imports_neither_arviz_nor_pandas_and_matplotlib_only_for_its_figures(tmp_path):
    """The final bulk ESS is numpy's (no ArviZ, xarray), trace.csv and the metric figure need no pandas, and
    matplotlib is imported by the runs that draw figures only."""
    assert run_command_line(tmp_path, "run.figures=false") == []
    assert run_command_line(tmp_path) == ["matplotlib", "sgmcmc.plotting"]
    metrics = [json.loads((folder / "metrics.json").read_text()) for folder in tmp_path.iterdir()]
    assert [m["status"] for m in metrics] == ["completed"] * 2 and all(m["final"]["ess_bulk_min"] > 0 for m in metrics)
    assert sorted(sorted(m["figures"]) for m in metrics) == [[], ["figures/histogram.png", "figures/metrics.png",
                                                                  "figures/trace.png"]]


# -- compose once, build once -----------------------------------------------------------------------------------
def load_run_module(name: str = "sgmcmc_run_startup"):
    spec = importlib.util.spec_from_file_location(name, ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_single_run_composes_and_builds_its_config_once(tmp_path, monkeypatch, capsys):
    """Composed once: Hydra reads the primary config file once a composition (hydra.main would read it twice)."""
    import builtins

    import sgmcmc.experiment as experiment

    run = load_run_module()
    counts = {"compose": 0, "build": 0, "validate": 0}
    build, validate, open_file = experiment._build, experiment.describe_config, builtins.open
    primary = ROOT / "configs" / "config.yaml"

    def opening(file, *args, **kwargs):
        if isinstance(file, (str, Path)) and Path(file) == primary:
            counts["compose"] += 1
        return open_file(file, *args, **kwargs)

    def counting(name, function):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return function(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(builtins, "open", opening)
    monkeypatch.setattr(experiment, "_build", counting("build", build))
    monkeypatch.setattr(experiment, "describe_config", counting("validate", validate))
    frozen = gc.get_freeze_count()
    monkeypatch.setattr(sys, "argv", [str(ROOT / "run.py"), "run.n_steps=4", "run.burn_in=0", "run.n_chains=2",
                                      "run.eval_every=2", "run.progress=false", "run.figures=false",
                                      f"run.results_dir={tmp_path}"])
    run.main()
    folder = Path(capsys.readouterr().out.strip().splitlines()[-1])
    assert json.loads((folder / "metrics.json").read_text())["status"] == "completed"
    assert counts == {"compose": 1, "build": 1, "validate": 1}
    assert gc.isenabled() and gc.get_freeze_count() == frozen  # run.py imported, not run: the collector untouched


@pytest.mark.parametrize("overrides", [
    [],
    ["sampler=sgld", "target=correlated_2d", "schedule=polynomial", "seed=3", "run.n_steps=50"],
    ["+experiment=lecture_quartic_thermostat", "hydra.verbose=false", "hydra/job_logging=default"],
])
def test_the_run_config_is_the_one_hydra_main_composes(overrides, monkeypatch, capsys):
    """OneRun composes once what hydra.main composes for a run: the command line plus hydra.mode=RUN (hydra.main's
    config seen through --cfg all, which prints the config it would run)."""
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    from sgmcmc_cli import single_run

    run = load_run_module("run")  # hydra.main names the job after the task's module, as after the script
    one = run.OneRun.compose(overrides)
    single_run.stop()
    assert one.overrides == [*overrides, "hydra.mode=RUN"]
    monkeypatch.setattr(sys, "argv", [str(ROOT / "run.py"), "--cfg", "all", *overrides])
    run.main()
    printed = yaml.safe_load(capsys.readouterr().out)
    mine = OmegaConf.to_container(one.config)
    # what hydra.main adds to a run's command line, not to --cfg's
    printed["hydra"]["overrides"]["hydra"].append("hydra.mode=RUN")
    printed["hydra"]["mode"] = RunMode.RUN
    assert mine == printed



def test_the_job_sees_what_it_saw_under_hydra_main(tmp_path, monkeypatch, capsys):
    """The task's config and Hydra's (HydraConfig) are the same as when hydra.main composes and runs the job."""
    import functools

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import OmegaConf

    run = load_run_module("run")  # hydra.main names the job after the task's module, as after the script
    seen, task = [], run.task

    @functools.wraps(task)
    def recording(config):
        seen.append((OmegaConf.to_container(config), OmegaConf.to_container(HydraConfig.get())))
        return task(config)

    monkeypatch.setattr(run, "task", recording)
    monkeypatch.setattr(sys, "argv", [str(ROOT / "run.py"), "sampler=sgld", "run.n_steps=4", "run.burn_in=0",
                                      "run.n_chains=2", "run.progress=false", "run.figures=false",
                                      f"run.results_dir={tmp_path}"])
    run.main()  # OneRun
    monkeypatch.setattr(run.OneRun, "compose", classmethod(lambda cls, overrides: None))
    run.main()  # preflight's own check, then hydra.main
    capsys.readouterr()
    assert len(seen) == 2 and seen[0] == seen[1]
    assert seen[0][1]["mode"] == RunMode.RUN and seen[0][1]["overrides"]["hydra"] == ["hydra.mode=RUN"]
