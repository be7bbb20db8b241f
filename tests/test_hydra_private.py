"""Hydra's private API, as sgmcmc_cli.hydra_private uses it: fails loudly on a Hydra version it was not written for,
and names each private name whose call signature or behaviour changed."""

import ast
import dataclasses
import inspect
from importlib import metadata
from pathlib import Path

import pytest

from sgmcmc_cli import hydra_private

ROOT = Path(__file__).resolve().parents[1]

# name -> the parameters (name, default) it was written against (hydra-core 1.3.x)
EMPTY = inspect.Parameter.empty
SIGNATURES = {
    "Hydra.create_main_hydra2": [("task_name", EMPTY), ("config_search_path", EMPTY)],
    "Hydra.compose_config": [("self", EMPTY), ("config_name", EMPTY), ("overrides", EMPTY), ("run_mode", EMPTY),
                             ("with_log_configuration", False), ("from_shell", True),
                             ("validate_sweep_overrides", True)],
    "Hydra.run": [("self", EMPTY), ("config_name", EMPTY), ("task_function", EMPTY), ("overrides", EMPTY),
                  ("with_log_configuration", True)],
    "Hydra.multirun": [("self", EMPTY), ("config_name", EMPTY), ("task_function", EMPTY), ("overrides", EMPTY),
                       ("with_log_configuration", True)],
    "get_args_parser": [],
    "run_and_report": [("func", EMPTY)],
    "detect_calling_file_or_module_from_task_function": [("task_function", EMPTY)],
    "detect_task_name": [("calling_file", EMPTY), ("calling_module", EMPTY)],
    "create_automatic_config_search_path": [("calling_file", EMPTY), ("calling_module", EMPTY), ("config_path", EMPTY)],
    "BasicSweeper.split_arguments": [("overrides", EMPTY), ("max_batch_size", EMPTY)],
}


def resolve(name: str):
    owner, _, attribute = name.rpartition(".")
    return getattr(getattr(hydra_private, owner), attribute) if owner else getattr(hydra_private, name)


def test_the_installed_hydra_is_a_version_the_private_api_was_written_for():
    installed = tuple(int(part) for part in metadata.version("hydra-core").split(".")[:3] if part.isdigit())
    lowest, below = hydra_private.SUPPORTED
    assert lowest <= installed < below, (
        f"hydra-core {metadata.version('hydra-core')} is installed; sgmcmc_cli/hydra_private.py was written for "
        f">= {lowest}, < {below}: check every private name it uses, then widen SUPPORTED (and pyproject.toml's pin)")


@pytest.mark.parametrize("name", sorted(SIGNATURES))
def test_each_private_name_has_the_call_signature_it_was_written_for(name):
    parameters = [(p.name, p.default) for p in inspect.signature(resolve(name)).parameters.values()]
    assert parameters == SIGNATURES[name], f"hydra's {name} changed: sgmcmc_cli/hydra_private.py needs a look"


def test_hydra_s_run_and_multirun_compose_their_config_first_through_the_loader():
    """hand_over relies on it: Hydra.run / Hydra.multirun compose the primary config (compose_config, which asks the
    config loader's load_configuration) before anything else, once."""
    for method in (hydra_private.Hydra.run, hydra_private.Hydra.multirun):
        first = ast.parse(inspect.getsource(method).strip()).body[0].body[0]
        assert "self.compose_config(" in ast.unparse(first), f"{method.__qualname__} no longer composes first"
    assert "self.config_loader.load_configuration(" in inspect.getsource(hydra_private.Hydra.compose_config)


def test_a_job_s_error_is_a_private_field_of_job_return():
    from hydra.core.utils import JobReturn, JobStatus

    assert "_return_value" in {field.name for field in dataclasses.fields(JobReturn)}
    error = ValueError("bad")
    assert hydra_private.job_error(JobReturn(status=JobStatus.FAILED, _return_value=error)) is error


def private_uses(path: Path) -> list[str]:
    """The imports of hydra._internal and the reads of ``._return_value`` in a source file."""
    uses = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hydra._internal"):
            uses.append(node.module)
        elif isinstance(node, ast.Import):
            uses += [alias.name for alias in node.names if alias.name.startswith("hydra._internal")]
        elif isinstance(node, ast.Attribute) and node.attr == "_return_value":
            uses.append(node.attr)
    return uses


def test_only_the_isolating_module_uses_hydra_s_private_api():
    """hydra._internal is imported in sgmcmc_cli/hydra_private.py only (tests aside)."""
    sources = [*ROOT.glob("*.py"), *ROOT.glob("sgmcmc/**/*.py"), *ROOT.glob("sgmcmc_cli/**/*.py"),
               *ROOT.glob("experiments/**/*.py"), *ROOT.glob("scripts/**/*.py"), *ROOT.glob("benchmarks/**/*.py")]
    users = sorted(str(path.relative_to(ROOT)) for path in sources if private_uses(path))
    assert users == ["sgmcmc_cli/hydra_private.py"]
