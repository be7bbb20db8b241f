"""sgmcmc_cli.overrides: the command line's group choices and keys checked before Hydra composes them."""

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hydra.core.override_parser.overrides_parser import OverridesParser

from sgmcmc.config import ConfigError
from sgmcmc.keys import RUN_FIELDS, SAMPLER_FIELDS
from sgmcmc_cli.overrides import DISTRIBUTED, check_overrides, declared_keys_added

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "configs"
LAUNCHERS = ["basic", "joblib", "ray", "ray_cluster", "ray_local", "slurm", "submitit_local", "submitit_slurm"]


def check(*overrides, launchers=None):
    parsed = OverridesParser.create().parse_overrides(list(overrides))
    check_overrides(parsed, CONFIG_DIR, None if launchers is None else (lambda group: launchers))


def error_of(*overrides, launchers=None) -> str:
    with pytest.raises(ConfigError) as raised:
        check(*overrides, launchers=launchers)
    return str(raised.value)


@pytest.mark.parametrize("overrides", [
    ["sampler=sgld", "sampler.step_size=0.1", "run.n_steps=10", "seed=3", "data_dir=/tmp", "cache_dir=null"],
    ["+experiment=ccadl_table1", "vars.h=0.01", "vars.A=10", "sampler.diffusion=1"],
    ["sampler=sgld,sghmc", "sampler.friction=1"],          # each job's sampler is checked with that job
    ["+sampler.bogus=1", "~run.figures", "++target.bogus=2"],  # adding and deleting: the validation's job
    ["hydra.verbose=true", "hydra/launcher=joblib"],
    ["hydra/launcher=slurm"],
])
def test_what_hydra_would_compose_passes(overrides):
    check(*overrides, launchers=LAUNCHERS)


def test_an_unknown_key_names_the_allowed_ones():
    assert error_of("bogus=1") == ("bogus is not a known key; allowed keys are cache_dir, data_dir, gradient, run, sampler, "
                                   "schedule, seed, target, tune, vars")
    assert error_of("run.n_stepz=1") == ("run.n_stepz is not a known key; allowed keys are "
                                         + ", ".join("run." + key for key in RUN_FIELDS))
    assert error_of("seed.x=1").startswith("seed.x is not a known key; allowed keys are")


def test_a_sampler_key_is_checked_against_the_sampler_the_overrides_choose():
    allowed = ", ".join(sorted({"name", *SAMPLER_FIELDS["sgld"]}))
    expected = f"sampler.friction is not a known key of sampler 'sgld'; allowed keys are {allowed}"
    assert error_of("sampler=sgld", "sampler.friction=1") == expected
    assert error_of("+experiment=lecture_gaussian_sgld", "sampler.friction=1") == expected  # the experiment's choice
    assert error_of("sampler.frictio=1").startswith("sampler.frictio is not a known key of sampler 'sgrhmc'")
    ccadl = ", ".join(sorted({"name", *SAMPLER_FIELDS["ccadl"]}))
    assert error_of("sampler=ccadl_shang2015", "sampler.bogus=1") == (
        f"sampler.bogus is not a known key of sampler 'ccadl_shang2015'; allowed keys are {ccadl}")


def test_vars_are_the_experiment_s():
    assert "+experiment=" in error_of("vars.h=1")
    assert error_of("+experiment=ccadl_table1", "vars.bogus=1") == (
        "vars.bogus is not a known key; the experiment's vars are vars.A, vars.finite_population, vars.h")


def test_group_choices_ours_and_hydra_s():
    assert error_of("schedule=nope") == "schedule='nope' is invalid: allowed values are constant, cyclical, polynomial"
    assert error_of("+experiment=nope").startswith("experiment='nope' is invalid: allowed values are ccadl_fig2, ")
    assert error_of("hydra/launcher=nope", launchers=LAUNCHERS) == (
        f"hydra/launcher='nope' is invalid: allowed values are {', '.join(LAUNCHERS)}; {DISTRIBUTED}")
    check("hydra/launcher=nope")  # without a config loader Hydra's groups are not checked here


def test_a_launcher_file_of_ours_needs_the_plugin_it_builds_on():
    without_submitit = [name for name in LAUNCHERS if not name.startswith("submitit")]
    assert error_of("hydra/launcher=slurm", launchers=without_submitit) == (
        f"hydra/launcher=slurm: it builds on hydra/launcher/submitit_slurm, which is not installed; {DISTRIBUTED}")


def test_no_hydra_error_text_is_read():
    """Hydra's "Could not override" / "Could not find" messages are never parsed: the overrides are checked first."""
    for path in [ROOT / "run.py", ROOT / "check.py", *sorted((ROOT / "sgmcmc_cli").glob("*.py"))]:
        text = path.read_text()
        assert "Could not override" not in text and "Could not find" not in text, path
        assert "import re\n" not in text, path


def test_a_declared_key_that_the_samplers_file_leaves_out_is_set_with_plus_plus():
    """``sampler.noise_clip=true`` on SGLD, whose file does not list noise_clip: ``++`` is put before it (Hydra overrides
    only the keys a file lists); the keys the file lists, run's and explicit ``+``/``++``/``~`` stay."""
    overrides = ["sampler=sgld", "sampler.noise_clip=true", "sampler.step_size=0.1", "run.n_steps=10",
                 "+sampler.finite_population=false", "~run.figures", "++sampler.running_form=full"]
    parsed = OverridesParser.create().parse_overrides(overrides)
    assert "noise_clip" not in (CONFIG_DIR / "sampler" / "sgld.yaml").read_text()
    added = declared_keys_added(parsed, overrides, CONFIG_DIR)
    assert added == ["sampler=sgld", "++sampler.noise_clip=true", *overrides[2:]]


def test_a_declared_key_left_out_of_the_samplers_file_runs(tmp_path):
    """The command the issue's user typed: one run with ``sampler.noise_clip=true`` (no ``+``), whose config says
    so; a mistyped key is still one line naming the allowed ones."""
    command = [sys.executable, str(ROOT / "run.py"), "sampler=sgld", "target=gaussian_1d", "sampler.noise_clip=true",
               "run.n_steps=20", "run.burn_in=10", "run.n_chains=2", "run.figures=false", f"run.results_dir={tmp_path}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    (config,) = tmp_path.glob("*/config.yaml")
    assert yaml.safe_load(config.read_text())["sampler"]["noise_clip"] is True
    wrong = subprocess.run(command[:4] + ["sampler.noise_clp=true"], capture_output=True, text=True, cwd=ROOT,
                           timeout=300)
    assert wrong.returncode == 2 and wrong.stderr.strip().splitlines()[-1].startswith(
        "error: sampler.noise_clp is not a known key of sampler 'sgld'; allowed keys are"), wrong.stderr
