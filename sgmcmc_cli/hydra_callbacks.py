"""Hydra callbacks of ``run.py`` (listed under ``hydra.callbacks`` in ``configs/config.yaml``).

* :class:`SweepManifest`: the manifest of a multirun (:mod:`sgmcmc_cli.sweep`). ``on_job_end`` runs in the
  process that ran the job (a joblib worker, a Ray worker, a SLURM task) and records that job;
  ``on_multirun_start`` / ``on_multirun_end`` run in the process of ``python run.py -m``.
* :class:`RayEnvironment`: before a Ray launcher starts Ray, sets the environment that Ray reads when it is
  imported: no usage statistics; with ``ray.init._node_ip_address`` on the loopback
  (``configs/hydra/launcher/ray.yaml``) Ray must also be told not to act as a cluster node
  (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``), or it replaces 127.0.0.1 by the machine's network address and
  listens there; joining a cluster (``ray_cluster.yaml``) needs ``RAY_AUTH_MODE=token`` unless set otherwise.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import warnings
from typing import Any

from hydra.core.global_hydra import GlobalHydra
from hydra.core.utils import JobReturn, JobStatus
from hydra.experimental.callback import Callback
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf

from sgmcmc_cli import sweep

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _multirun(hydra: DictConfig) -> bool:
    return hydra.mode == RunMode.MULTIRUN


def _overrides(hydra: DictConfig) -> list[str]:
    """The task's overrides as typed (not resolved: ``key=${...}`` stays text)."""
    return list(OmegaConf.to_container(hydra.overrides.task, resolve=False))


def job_error(job_return: JobReturn) -> BaseException | None:
    """What a failed job raised, without raising it: ``JobReturn.return_value`` raises it, after a line on stderr
    (which Hydra writes again when its sweeper reads the value)."""
    try:
        with contextlib.redirect_stderr(io.StringIO()):
            job_return.return_value  # noqa: B018
    except Exception as error:
        return error
    return None


class SweepManifest(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        hydra = config.hydra
        jobs = None
        if hydra.sweeper.get("_target_", "").endswith(".BasicSweeper"):
            params = hydra.sweeper.get("params")
            params = OmegaConf.to_container(params, resolve=True) if params else {}
            loader = GlobalHydra.instance().config_loader() if GlobalHydra.instance().is_initialized() else None
            jobs = sweep.expand(_overrides(hydra), params, loader)
        sweep.plan(hydra.sweep.dir, jobs, hydra.launcher.get("_target_", "basic"))

    def on_job_end(self, config: DictConfig, job_return: JobReturn, **kwargs: Any) -> None:
        if not _multirun(config.hydra):
            return
        if job_return.status == JobStatus.COMPLETED and isinstance(job_return.return_value, dict):
            outcome = job_return.return_value  # run.py's task: status, run_folder, error
        else:  # the task raised (a bug, or a failure outside the experiment's own error handling)
            outcome = {"status": sweep.FAILED, "run_folder": None, "error": job_error(job_return)}
        try:
            sweep.record(config.hydra.sweep.dir, config.hydra.job.num, _overrides(config.hydra),
                         outcome["status"], outcome.get("run_folder"), outcome.get("error"))
        except OSError as error:  # the job's own results are written; a manifest problem must not fail it
            warnings.warn(f"sweep manifest not updated for job {config.hydra.job.num}: {error}", stacklevel=1)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        sweep.finish(config.hydra.sweep.dir)


class RayEnvironment(Callback):
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        launcher = config.hydra.launcher
        if "hydra_ray_launcher" not in str(launcher.get("_target_", "")):
            return
        os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
        init = launcher.ray.get("init") or {}
        if init.get("address") not in (None, "local"):
            # joining a cluster: `ray start` (Ray 2.60) turns token authentication on, the driver must too
            os.environ.setdefault("RAY_AUTH_MODE", "token")
        elif str(init.get("_node_ip_address")) in LOOPBACK:
            os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
            constants = sys.modules.get("ray._private.ray_constants")
            if constants is not None:  # Ray already imported in this process: it read the variable then
                constants.ENABLE_RAY_CLUSTER = False
