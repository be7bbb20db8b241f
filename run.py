#!/usr/bin/env python
"""Command line: ``python run.py sampler=<name> target=<name> schedule=<name> [key=value ...]``.

Hydra composes ``configs/``; the experiment itself is plain Python (:mod:`sgmcmc.experiment`).
A bad config value gives one line on stderr naming the key and the allowed values, exit code 2,
and no result folder. The last line printed is the result folder.
"""

from __future__ import annotations

import gc
import os
import sys
import warnings
from pathlib import Path

if __name__ == "__main__":  # the command line's start-up (imports, composition) runs without collections: see main
    gc.disable()

from sgmcmc.signals import workers_ignore_stop_signals  # noqa: E402

with workers_ignore_stop_signals():  # the OpenBLAS libraries start their threads here: they leave SIGINT/SIGTERM to the main thread
    import numpy  # noqa: F401
    import scipy.linalg  # noqa: F401  (scipy has an OpenBLAS of its own)

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
VERSION_BASE = "1.3"
GROUPS = ("sampler", "target", "schedule")
LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# configs/hydra/launcher/ray.yaml replaces the Ray plugin's config of the same name on purpose (loopback only)
warnings.filterwarnings("ignore", message=r"\s*'hydra/launcher/ray' is validated against ConfigStore schema")


def one_line(message: str) -> str:
    """``error: <message>``, line breaks inside the message escaped."""
    message = "".join(char.encode("unicode_escape").decode() if char in LINE_BREAKS else char for char in message)
    return f"error: {message}"


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, exit code ``code`` (2: a bad command line or config), no traceback."""
    print(one_line(message), file=sys.stderr)
    sys.exit(code)


def check(parsed, group_options=None) -> None:
    """The overrides' group choices and keys checked before Hydra composes them (:mod:`sgmcmc_cli.overrides`;
    Hydra's groups with ``group_options``, a config loader's): a bad one is one line, exit 2."""
    from sgmcmc.config import ConfigError
    from sgmcmc_cli.overrides import check_overrides

    try:
        check_overrides(parsed, CONFIG_DIR, group_options)
    except ConfigError as error:
        fail(str(error))


def parse_command_line(argv: list[str]):
    """The command line's flags and overrides (:mod:`sgmcmc_cli.arguments`), a bad one as one line."""
    from sgmcmc_cli.arguments import CommandLineError, command_line_parser

    try:
        return command_line_parser().parse_args(argv)
    except CommandLineError as error:
        message = str(error)
        if message.startswith("unrecognized arguments") and "=" in message:
            message += " (options such as -m go before the overrides)"
        fail(message)


def preflight(argv: list[str]) -> bool | OneRun:
    """Check the command line before Hydra runs anything: its syntax and group choices, then the composed
    config of every job. A single run's config is also validated (by the job itself when it is a :class:`OneRun`);
    a sweep's jobs validate their own and report failure without stopping the sweep (see the sweep's
    manifest.json). Returns the :class:`OneRun` of a plain single run, or for what ``hydra.main`` runs whether it is
    a sweep."""
    from sgmcmc_cli.overrides import compose_error_line, declared_keys_added
    from sgmcmc_cli.sweep import expand, overrides_parser

    args = parse_command_line(argv)
    if sum(map(bool, (args.run, args.multirun, args.cfg, args.info, args.shell_completion))) > 1:
        fail("only one of --run, --multirun, --cfg, --info and --shell-completion can be given")
    if args.help or args.hydra_help or args.version or args.cfg or args.info or args.shell_completion:
        return False  # Hydra prints something and runs nothing
    if args.config_path or args.config_name or args.config_dir or args.experimental_rerun:
        return args.multirun  # another primary config: Hydra checks it
    overrides = args.overrides
    try:
        parsed = overrides_parser().parse_overrides(overrides)
    except Exception as error:  # Hydra's grammar errors: keep the first line only
        fail(f"cannot parse the command line: {str(error).strip().splitlines()[0]}")
    check(parsed)
    added = declared_keys_added(parsed, overrides, CONFIG_DIR)
    if added != overrides:  # hydra.main (a sweep, --resolve) reads the command line from sys.argv
        renamed = dict(zip(overrides, added))
        sys.argv[1:] = [renamed.get(item, item) for item in sys.argv[1:]]
        overrides = added
    if not args.multirun and not args.resolve and not any(
            override.key_or_group in ("hydra/sweeper", "hydra.mode") for override in parsed):
        one_run = OneRun.compose(overrides)
        if one_run is not None:
            return one_run
    from hydra import compose, initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    from sgmcmc.config import ConfigError
    from sgmcmc.experiment import build

    composed = set()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=VERSION_BASE):
        loader = GlobalHydra.instance().config_loader()  # glob(...) over a config group needs it
        jobs = [overrides]
        if any(override.key_or_group == "hydra/sweeper" for override in parsed):
            # another sweeper decides the jobs as it goes: check what all of them share
            jobs = [[text for text, override in zip(overrides, parsed) if not override.is_sweep_override()]]
        elif args.multirun:
            check(overrides_parser(loader).parse_overrides(overrides), loader.get_group_options)  # glob(...) too
            try:
                jobs = expand(overrides, config_loader=loader)
            except Exception as error:  # e.g. interval(...), which only other sweepers sample
                fail(f"cannot make the sweep's jobs: {str(error).strip().splitlines()[0]}")
            if not jobs:
                fail("the sweep has no jobs (a sweep over an empty list or glob)")
        for job in jobs:
            # which keys exist depends on the group choices only (every job sets the same keys): check and compose
            # one job of each combination
            groups = tuple(item for item in job if item.split("=")[0].lstrip("+~") in GROUPS + ("experiment",)
                           or "/" in item.split("=")[0])
            if groups in composed:
                continue
            composed.add(groups)
            check(overrides_parser(loader).parse_overrides(job), loader.get_group_options)
            try:
                config = compose(config_name="config", overrides=job, return_hydra_config=args.multirun)
                if not args.multirun:
                    container = OmegaConf.to_container(config, resolve=True)
                elif len(composed) == 1:
                    check_launcher(config.hydra)
            except Exception as error:
                fail(compose_error_line(error))
    if args.multirun:
        return True
    try:
        build(container)
    except ConfigError as error:
        fail(str(error))
    return False


class OneRun:
    """``python run.py [overrides]``, one run, its config composed once (:mod:`sgmcmc_cli.single_run`: Hydra's
    compose API, and Hydra's ``run_job`` as ``hydra.main`` runs a job: its logging, callbacks and job set-up as ever).
    The command line's check resolves that config, and the job validates and builds it once
    (:func:`sgmcmc.experiment.run_experiment`); a bad value is one line and exit code 2, before any result folder."""

    def __init__(self, config, overrides: list[str]):
        self.config, self.overrides = config, overrides

    @classmethod
    def compose(cls, overrides: list[str]) -> OneRun | None:
        """The run's config composed and resolved (a compose error: one line, exit 2); None when the config makes
        it a sweep (``hydra.mode: MULTIRUN``), which hydra.main then runs."""
        from hydra.types import RunMode
        from omegaconf import OmegaConf

        from sgmcmc_cli import single_run
        from sgmcmc_cli.overrides import compose_error_line
        from sgmcmc_cli.sweep import overrides_parser

        single_run.start(str(CONFIG_DIR), VERSION_BASE)
        try:
            check(overrides_parser().parse_overrides(overrides), single_run.group_options)
            try:
                config = single_run.compose(overrides)
                OmegaConf.to_container(single_run.job_config(config), resolve=True)
            except Exception as error:
                fail(compose_error_line(error))
            if config.hydra.mode == RunMode.MULTIRUN:
                single_run.stop()
                return None
            if config.hydra.mode is None:  # hydra.main adds this override to a run's command line
                return cls(config, single_run.with_mode(config, overrides, RunMode.RUN))
            return cls(config, list(overrides))
        except BaseException:
            single_run.stop()
            raise

    def run(self) -> None:
        """The run of :func:`task` on the composed config, as hydra.main runs it."""
        from sgmcmc_cli import single_run

        try:
            single_run.run(self.config, task)
        finally:
            single_run.stop()


def check_launcher(hydra) -> None:
    """The launcher's plugin is installed (ray.yaml composes without it), and SLURM's sbatch is there."""
    import importlib.util
    import shutil

    from sgmcmc_cli.overrides import DISTRIBUTED

    target = str(hydra.launcher.get("_target_", ""))
    module = target.rpartition(".")[0]
    choice = f"hydra/launcher={hydra.runtime.choices.get('hydra/launcher')}"
    try:
        found = bool(module) and importlib.util.find_spec(module) is not None
    except ImportError:
        found = False
    if module and not found:
        fail(f"{choice}: {module} is not installed; {DISTRIBUTED}")
    if target.endswith(".SlurmLauncher") and shutil.which("sbatch") is None:
        fail(f"{choice}: sbatch is not on PATH: run the sweep on a SLURM login node")


def resolved(config) -> dict:
    """The job's config as a plain dict; an interpolation that does not resolve is a config error (a sweep's
    jobs meet it here: the command line's check composes them without resolving)."""
    from omegaconf import OmegaConf

    from sgmcmc.config import ConfigError

    try:
        container = OmegaConf.to_container(config, resolve=True)
    except Exception as error:
        raise ConfigError(str(error).strip().splitlines()[0]) from None
    container.pop("hydra", None)
    return container


def task(config) -> dict:
    """Hydra's task: one job, a single run or one of a sweep's jobs.

    Every exception of the job ends here as one line on stderr, never as a traceback (Hydra would print one, and
    stop a sweep): a config error (exit 2, no folder); a run that failed after its folder existed (exit 1; its
    metrics.json says failed, its run.log holds the traceback); any other exception before the folder existed
    (exit 1; ``HYDRA_FULL_ERROR=1`` lets a single run's traceback through). In a sweep the job returns the failure
    for its manifest and the sweep goes on. KeyboardInterrupt and SystemExit pass."""
    import os

    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    from sgmcmc.config import ConfigError
    from sgmcmc.experiment import EXIT_CODES, RunFailed, error_line, run_experiment

    multirun = HydraConfig.get().mode == RunMode.MULTIRUN
    try:
        folder, status = run_experiment(resolved(config))
    except ConfigError as error:
        return job_failed(str(error), str(error), None, 2, multirun)
    except RunFailed as error:
        print(error.folder)
        return job_failed(str(error), error.error, error.folder, EXIT_CODES["failed"], multirun)
    except Exception as error:
        if not multirun and os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        line = error_line(error)
        return job_failed(f"{line} (before the run folder was created; HYDRA_FULL_ERROR=1 shows the traceback)", line,
                          None, EXIT_CODES["failed"], multirun)
    print(folder)
    if not multirun and EXIT_CODES[status]:
        sys.exit(EXIT_CODES[status])
    return {"status": status, "run_folder": str(Path(folder).resolve()), "error": None}


def job_failed(line: str, error: str, folder, code: int, multirun: bool) -> dict:
    """A failed job: ``line`` on stderr; a single run exits with ``code``, a sweep's job returns its manifest entry
    (``error``, the run folder if there is one) and the sweep goes on."""
    if not multirun:
        fail(line, code)
    print(one_line(line), file=sys.stderr)
    return {"status": "failed", "run_folder": str(Path(folder).resolve()) if folder is not None else None,
            "error": error}


def checked(function, *args):
    """``function(*args)`` with an unexpected exception as one line and exit code 1 (``HYDRA_FULL_ERROR=1``: the
    traceback), as :func:`task` reports one before the run folder exists."""
    import os

    try:
        return function(*args)
    except Exception as error:
        if os.environ.get("HYDRA_FULL_ERROR") == "1":
            raise
        from sgmcmc.experiment import error_line

        fail(f"{error_line(error)} (HYDRA_FULL_ERROR=1 shows the traceback)", 1)


def main() -> None:
    startup = not gc.isenabled()  # python run.py: no collections since the imports
    try:
        multirun = checked(preflight, sys.argv[1:])
        if isinstance(multirun, OneRun) and startup:
            # what the job imports (numba's kernels among them; matplotlib when it draws figures) and the composed
            # config live to the end of a single run: frozen, later collections skip them (about 0.3 s of collections
            # in a short run otherwise)
            import sgmcmc.experiment  # noqa: F401

            if multirun.config.run.get("figures", True):
                import sgmcmc.plotting  # noqa: F401
            gc.freeze()
    finally:
        gc.enable()
    if isinstance(multirun, OneRun):  # a single run: its config composed once
        checked(multirun.run)
        return

    import hydra

    from sgmcmc_cli import sweep

    hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base=VERSION_BASE)(task)()
    if sweep.FINISHED:  # a sweep ran: its exit code from its manifest
        code, line = sweep.exit_code(sweep.read(sweep.FINISHED[-1]))
        if code:
            print(line, file=sys.stderr)
            sys.exit(code)


if __name__ == "__main__":
    try:
        try:
            main()
        finally:  # also on the SystemExit of Hydra's --help: a closed pipe shows here, not at interpreter exit
            sys.stdout.flush()
    except BrokenPipeError:  # the reader of the output went away (``python run.py --help | head``): no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's documented way (signal module, SIGPIPE)
        sys.exit(1)
