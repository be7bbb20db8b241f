"""One run of ``python run.py [overrides]`` on Hydra's public API, its config composed once.

``hydra.main`` composes a run's config twice (to read ``hydra.mode``, then to run it), and ``run.py`` would compose it
once more to check it first. Here the compose API (:func:`hydra.initialize_config_dir`, :func:`hydra.compose`) composes
it once, ``run.py`` checks that config, and :func:`hydra.core.utils.run_job` runs the job on it as ``hydra.main`` does
(the run folder and working directory of ``hydra.run.dir`` and ``hydra.job.chdir``, ``hydra.output_subdir``, logging,
``hydra.job.env_set``, the callbacks of ``hydra.callbacks``). What ``hydra.main`` adds to a run's config is added here
too (``hydra.mode=RUN``, the job name ``run``): the job sees the config it would see under ``hydra.main``
(``tests/test_startup.py``).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Callable

import hydra
from hydra.core.global_hydra import GlobalHydra
from hydra.core.utils import JobReturn, configure_log, run_job
from hydra.types import HydraContext, RunMode
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

JOB_NAME = "run"  # hydra.main's job name for run.py (the script's name)


class Callbacks:
    """The callbacks of ``hydra.callbacks``, called as Hydra calls them: in order at a start, in reverse order at an
    end, a callback's exception a warning."""

    def __init__(self, nodes: DictConfig | None):
        """``nodes``: the config's ``hydra.callbacks``."""
        self.callbacks = [instantiate(node) for node in (nodes or {}).values()]

    def _notify(self, name: str, reverse: bool = False, **kwargs: Any) -> None:
        for callback in reversed(self.callbacks) if reverse else self.callbacks:
            try:
                getattr(callback, name)(**kwargs)
            except Exception as error:
                warnings.warn(f"Callback {type(callback).__name__}.{name} raised {type(error).__name__}: {error}",
                              stacklevel=2)

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._notify("on_run_start", config=config, **kwargs)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._notify("on_run_end", reverse=True, config=config, **kwargs)

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        self._notify("on_job_start", config=config, **kwargs)

    def on_job_end(self, config: DictConfig, **kwargs: Any) -> None:
        self._notify("on_job_end", reverse=True, config=config, **kwargs)


def start(config_dir: str, version_base: str) -> None:
    """Hydra initialised on ``config_dir`` (the global instance, until :func:`stop`)."""
    hydra.initialize_config_dir(config_dir=config_dir, version_base=version_base, job_name=JOB_NAME)


def stop() -> None:
    GlobalHydra.instance().clear()


def group_options(group: str) -> list[str]:
    """A config group's choices as Hydra's config loader lists them (plugins' configs included)."""
    return GlobalHydra.instance().config_loader().get_group_options(group)


def compose(overrides: list[str]) -> DictConfig:
    """The run's config with its hydra node, as ``hydra.main`` composes it (but ``hydra.mode``: :func:`with_mode`)."""
    return hydra.compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def with_mode(config: DictConfig, overrides: list[str], run_mode: RunMode) -> list[str]:
    """``overrides`` plus ``hydra.mode=<mode>``, and ``config`` as Hydra composes it with that override (what
    ``hydra.main`` adds to a command line whose config sets no mode)."""
    with read_write(config.hydra), open_dict(config.hydra):
        config.hydra.mode = run_mode
        config.hydra.overrides.hydra.append(f"hydra.mode={run_mode.name}")
    return [*overrides, f"hydra.mode={run_mode.name}"]


def job_config(config: DictConfig) -> DictConfig:
    """A run's config as Hydra gives it to the job: a copy without the hydra node."""
    job = copy.deepcopy(config)
    with read_write(job), open_dict(job):
        del job["hydra"]
    return job


def run(config: DictConfig, task: Callable[[DictConfig], Any]) -> JobReturn:
    """``task`` run on ``config`` as ``hydra.main`` runs a single job (Hydra must be started: :func:`start`); an
    exception of the task is raised here."""
    configure_log(config.hydra.hydra_logging, config.hydra.verbose)
    callbacks = Callbacks(OmegaConf.select(config, "hydra.callbacks"))
    callbacks.on_run_start(config=config, config_name="config")
    context = HydraContext(config_loader=GlobalHydra.instance().config_loader(), callbacks=callbacks)
    job = run_job(task_function=task, config=config, job_dir_key="hydra.run.dir", job_subdir_key=None,
                  hydra_context=context)
    callbacks.on_run_end(config=config, config_name="config", job_return=job)
    job.return_value  # noqa: B018  (a failed job's exception, raised)
    return job
