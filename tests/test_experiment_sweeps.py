"""The paper experiments' sweeps (experiments.common.multirun) run through the Python API, as ``python run.py -m``
would run them: the basic sweeper's jobs, one run folder each, a config error before anything runs."""

import yaml
import pytest

from experiments.common import multirun
from sgmcmc.paper import PaperFolder

SMALL = ["run.n_steps=20", "run.n_chains=2", "run.burn_in=0", "run.eval_every=10", "run.ksd_points=0"]


def test_a_sweep_runs_each_job_into_its_own_folder(tmp_path):
    paper = PaperFolder.create("sweep-test", root=tmp_path)
    folders = multirun(paper, "lecture_gaussian_sgld", "small", ["seed=1,2", "sampler.step_size=0.05,0.1"], jobs=1,
                       extra=SMALL)
    configs = [yaml.safe_load((folder / "config.yaml").read_text()) for folder in folders]
    assert sorted((config["seed"], config["sampler"]["step_size"]) for config in configs) == [
        (1, 0.05), (1, 0.1), (2, 0.05), (2, 0.1)]
    assert all(folder.parent == paper.runs_dir / "small" for folder in folders)
    assert all(config["target"]["name"] == "gaussian_2d_prec" and config["run"]["figures"] is False
               for config in configs)


def test_a_config_error_in_one_job_stops_the_sweep_before_anything_runs(tmp_path, capsys):
    paper = PaperFolder.create("sweep-test", root=tmp_path)
    with pytest.raises(SystemExit) as stopped:
        multirun(paper, "lecture_gaussian_sgld", "bad", ["seed=1,-1"], jobs=1, extra=SMALL)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: seed=-1 is invalid: allowed values are integers >= 0"]
    assert not (paper.runs_dir / "bad").exists()
