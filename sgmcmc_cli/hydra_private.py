"""Hydra's private API, where Hydra 1.3 has no public one: the only module of the project that imports
``hydra._internal`` (or reads a private attribute of Hydra's).

Written for hydra-core ``SUPPORTED`` (1.3.2 up to 1.4). ``tests/test_hydra_private.py`` fails on any other
installed version and checks every name used here against the call signature it was written for: a Hydra upgrade
is then a failing test naming the name, not a command line that breaks at run time.

What needs it:

* :func:`args_parser`: ``hydra.main``'s own argument parser (``run.py`` checks the command line with it before
  Hydra runs anything, and turns its errors into one line);
* :func:`create_hydra`, :func:`report`, :func:`hand_over`: ``run.py``'s single run (and sweep) on a config it
  composed once, as ``hydra.main`` runs it (``_run_hydra``: the search path, the task name, the Hydra instance,
  errors reported as ``hydra.main`` reports them);
* :func:`basic_sweeper_jobs`: the jobs of a sweep as Hydra's basic sweeper numbers them (the sweep's manifest
  lists them before they run);
* :func:`job_error`: a failed job's exception without ``JobReturn.return_value``, which prints a line on stderr
  before it raises the exception.
"""

from __future__ import annotations

from typing import Any, Callable

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from hydra._internal.hydra import Hydra
from hydra._internal.utils import (create_automatic_config_search_path,
                                   detect_calling_file_or_module_from_task_function, detect_task_name, get_args_parser,
                                   run_and_report)

SUPPORTED = ((1, 3, 2), (1, 4))  # hydra-core >= 1.3.2, < 1.4 (pyproject.toml's pin)

__all__ = ["SUPPORTED", "Hydra", "args_parser", "create_hydra", "report", "hand_over", "basic_sweeper_jobs",
           "job_error"]


def args_parser():
    """``hydra.main``'s argparse parser (overrides, ``-m``, ``--cfg``, ...)."""
    return get_args_parser()


def create_hydra(task_function: Callable, config_dir: str) -> Hydra:
    """The Hydra instance ``hydra.main(config_path=config_dir)(task_function)`` would create: the same search path
    and task name (``hydra._internal.utils._run_hydra``); it is also the global one (``GlobalHydra``)."""
    calling_file, calling_module = detect_calling_file_or_module_from_task_function(task_function)
    search_path = create_automatic_config_search_path(calling_file, calling_module, config_dir)
    return report(lambda: Hydra.create_main_hydra2(task_name=detect_task_name(calling_file, calling_module),
                                                   config_search_path=search_path))


def report(function: Callable[[], Any]) -> Any:
    """``function()``, its exceptions reported as ``hydra.main`` reports them (short, unless HYDRA_FULL_ERROR=1)."""
    return run_and_report(function)


def hand_over(hydra: Hydra, config) -> None:
    """Make ``hydra``'s next composition return ``config`` (composed and checked already): ``Hydra.run`` and
    ``Hydra.multirun`` compose the primary config once, first thing; any later composition (a sweep's jobs) is
    Hydra's own."""
    loader = hydra.config_loader

    def load_configuration(**kwargs):
        del loader.load_configuration
        return config

    loader.load_configuration = load_configuration


def basic_sweeper_jobs(parsed_overrides: list) -> list[list[str]]:
    """The jobs of Hydra's basic sweeper for parsed overrides, in its order (job ``i`` gets list ``i``)."""
    return [job for batch in BasicSweeper.split_arguments(parsed_overrides, None) for job in batch]


def job_error(job_return) -> Any:
    """What a failed job raised (``JobReturn._return_value``), without raising or printing it."""
    return job_return._return_value
