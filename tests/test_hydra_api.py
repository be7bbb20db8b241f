"""The command line uses Hydra's public API only: no module imports ``hydra._internal``, and what run.py does where
Hydra keeps a part private (its flags, the basic sweeper's order of jobs, a failed job's exception) agrees with what
Hydra itself does."""

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import hydra
import pytest
from hydra.core.hydra_config import HydraConfig
from hydra.core.utils import JobReturn, JobStatus

from sgmcmc_cli.arguments import CommandLineError, command_line_parser
from sgmcmc_cli.hydra_callbacks import job_error
from sgmcmc_cli.sweep import expand

ROOT = Path(__file__).resolve().parents[1]


def private_uses(source: str) -> list[str]:
    """The imports of hydra._internal and the reads of a private field of Hydra's (``._return_value``)."""
    uses = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hydra._internal"):
            uses.append(node.module)
        elif isinstance(node, ast.Import):
            uses += [alias.name for alias in node.names if alias.name.startswith("hydra._internal")]
        elif isinstance(node, ast.Attribute) and node.attr == "_return_value":
            uses.append(node.attr)
    return uses


def test_the_check_finds_each_kind_of_private_use():
    source = "from hydra._internal.utils import get_args_parser\nimport hydra._internal.hydra\njob._return_value\n"
    assert private_uses(source) == ["hydra._internal.utils", "hydra._internal.hydra", "_return_value"]


def test_no_module_uses_hydra_s_private_api():
    folders = ("sgmcmc", "sgmcmc_cli", "experiments", "scripts", "benchmarks", "tests", "examples")
    sources = [*ROOT.glob("*.py"), *(path for folder in folders for path in (ROOT / folder).rglob("*.py"))]
    assert len(sources) > 100
    users = {str(path.relative_to(ROOT)): private_uses(path.read_text()) for path in sources}
    assert {path: uses for path, uses in users.items() if uses} == {}


def test_run_py_knows_every_flag_hydra_main_reads_and_no_other():
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), "--hydra-help"], capture_output=True, text=True,
                            cwd=ROOT, env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=120)
    assert result.returncode == 0, result.stderr
    flags = result.stdout.split("== Flags ==")[1].split("== Configuration groups ==")[0]
    hydra_s = {flag for line in flags.splitlines() if (match := re.match(r"(-[-\w,]+) : ", line))
               for flag in match.group(1).split(",")}
    assert {"--multirun", "-m", "--cfg", "-c", "--info", "--experimental-rerun"} <= hydra_s
    ours = {flag for action in command_line_parser()._actions for flag in action.option_strings}
    assert ours == hydra_s


@pytest.mark.parametrize("argv, message", [
    (["--cfg", "nope"], "argument --cfg/-c: invalid choice: 'nope'"),
    (["--info", "nope"], "argument --info/-i: invalid choice: 'nope'"),
    (["--zz"], "unrecognized arguments: --zz"),
])
def test_a_bad_flag_is_an_error_not_an_exit(argv, message):
    with pytest.raises(CommandLineError, match=re.escape(message)):
        command_line_parser().parse_args(argv)


def test_the_jobs_of_a_sweep_are_numbered_as_hydra_s_basic_sweeper_numbers_them(tmp_path, monkeypatch):
    (tmp_path / "config.yaml").write_text("a: 0\nb: x\nc: 1\nd: 0\n")
    overrides = ["b=x,y,z", "a=1,2", "c=3", "b=u,v,w", "d=range(2)"]
    launched = {}

    def task(config):
        launched[HydraConfig.get().job.num] = list(HydraConfig.get().overrides.task)

    monkeypatch.setattr(sys, "argv", ["sweep.py", "-m", *overrides, f"hydra.sweep.dir={tmp_path / 'sweep'}",
                                      "hydra/job_logging=none", "hydra/hydra_logging=none"])
    hydra.main(config_path=str(tmp_path), config_name="config", version_base="1.3")(task)()
    assert len(launched) == 12
    assert expand(overrides) == [launched[num] for num in range(12)]


def test_expand_refuses_what_the_basic_sweeper_cannot_sweep():
    with pytest.raises(ValueError, match=re.escape("the basic sweeper cannot sweep a=interval(0,1): it sweeps lists")):
        expand(["a=interval(0,1)"])


def test_a_failed_job_s_exception_is_read_without_a_line_on_stderr(capfd):
    error = ValueError("bad")
    assert job_error(JobReturn(status=JobStatus.FAILED, _return_value=error)) is error
    assert job_error(JobReturn(status=JobStatus.COMPLETED, _return_value={"status": "completed"})) is None
    assert capfd.readouterr().err == ""
