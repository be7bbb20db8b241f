#!/usr/bin/env python
"""Command line: ``python run.py sampler=<name> target=<name> schedule=<name> [key=value ...]``.

Hydra composes ``configs/``; the experiment itself is plain Python (:mod:`sgmcmc.experiment`).
A bad config value gives one line on stderr naming the key and the allowed values, exit code 2,
and no result folder. The last line printed is the result folder.
"""

from __future__ import annotations

import sys
from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parent / "configs"
GROUPS = ("sampler", "target", "schedule")
FLAGS_WITHOUT_RUN = ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "--version", "--shell-completion", "-sc")


def fail(message: str) -> None:
    """One line, exit code 2, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


def group_choices(group: str) -> list[str]:
    return sorted(path.stem for path in (CONFIG_DIR / group).glob("*.yaml"))


def preflight(argv: list[str]) -> None:
    """Check the command line before Hydra runs anything: group choices, then (single runs) the
    composed and validated config."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    if any(arg in FLAGS_WITHOUT_RUN or arg.startswith("--cfg") for arg in argv):
        return
    multirun = any(arg in ("-m", "--multirun") for arg in argv)
    overrides = [arg for arg in argv if not arg.startswith("-")]
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as error:  # Hydra's grammar errors: keep the first line only
        fail(f"cannot parse the command line: {str(error).strip().splitlines()[0]}")
    for override in parsed:
        key = override.key_or_group
        if key in GROUPS and not override.is_delete():
            values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [override.value()]
            for value in values:
                if value not in group_choices(key):
                    fail(f"{key}={value!r} is invalid: allowed values are {', '.join(group_choices(key))}")
    if multirun:
        return  # each job validates its own config and reports failure without stopping the sweep
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from sgmcmc.config import ConfigError
    from sgmcmc.experiment import build

    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            config = compose(config_name="config", overrides=overrides)
            container = OmegaConf.to_container(config, resolve=True)
    except Exception as error:
        fail(describe_compose_error(str(error), parsed))
    try:
        build(container)
    except ConfigError as error:
        fail(str(error))


def describe_compose_error(message: str, parsed) -> str:
    """Turn Hydra's "Could not override 'k'" into a line naming the allowed keys."""
    import re

    from sgmcmc.config import RUN_FIELDS, SAMPLER_FIELDS, SCHEDULE_FIELDS, TARGET_FIELDS

    match = re.search(r"Could not override '([^']+)'", message)
    if not match:
        return message.strip().splitlines()[0]
    key = match.group(1)
    section = key.split(".")[0]
    tables = {"sampler": SAMPLER_FIELDS, "target": TARGET_FIELDS, "schedule": SCHEDULE_FIELDS}
    if section in tables and "." in key:
        import yaml

        entries = yaml.safe_load((CONFIG_DIR / "config.yaml").read_text())["defaults"]
        defaults = {k: v for entry in entries if isinstance(entry, dict) for k, v in entry.items()}
        chosen = {o.key_or_group: o.value() for o in parsed if o.key_or_group in tables and not o.is_sweep_override()}
        name = chosen.get(section, defaults[section])
        allowed = sorted(set(tables[section].get(name, {})) | {"name"})
        return f"{key} is not a known key of {section} '{name}'; allowed keys are {', '.join(allowed)}"
    if section == "run" and "." in key:
        return f"{key} is not a known key; allowed keys are {', '.join('run.' + k for k in RUN_FIELDS)}"
    return f"{key} is not a known key; allowed keys are run, sampler, schedule, seed, target"


def main() -> None:
    preflight(sys.argv[1:])

    import hydra
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode
    from omegaconf import DictConfig, OmegaConf

    @hydra.main(config_path=str(CONFIG_DIR), config_name="config", version_base="1.3")
    def task(config: DictConfig) -> str | None:
        from sgmcmc.config import ConfigError
        from sgmcmc.experiment import EXIT_CODES, run_experiment

        container = OmegaConf.to_container(config, resolve=True)
        container.pop("hydra", None)
        multirun = HydraConfig.get().mode == RunMode.MULTIRUN
        try:
            folder, status = run_experiment(container)
        except ConfigError as error:
            if multirun:
                print(f"error: {error}", file=sys.stderr)
                return "failed"
            fail(str(error))
        print(folder)
        if not multirun and EXIT_CODES[status]:
            sys.exit(EXIT_CODES[status])
        return status

    task()


if __name__ == "__main__":
    main()
