"""The command line's overrides checked before Hydra composes them, so that Hydra never reports an unknown key or an
unknown group choice of ours, and no error text of Hydra's needs reading (no regular expression over it):

* a group's choice is one of its files (``configs/<group>/*.yaml``; Hydra's groups, ``hydra/<group>``, as Hydra's
  config loader lists them, plugins' configs included), and what a launcher file of ours builds on is installed;
* a key is declared (:mod:`sgmcmc.keys`: the top level, ``run.*``, and the keys of the sampler, target and schedule
  the overrides choose; ``vars.*`` are the chosen experiment's).

What the declarations cannot tell is left to Hydra, whose error then shows as its first line: a key below a declared
key (``sampler.metric.scale``: the declaration checks the value, it does not list its keys), and ``hydra.*``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from sgmcmc.schema import ConfigError

DISTRIBUTED = 'the ray and submitit launchers need the distributed extra: pip install -e ".[distributed]"'


def group_choices(config_dir: Path, group: str) -> list[str]:
    """A group's choices: its files, by their path below the group's folder (``by_target``'s ``lda/sgld``)."""
    folder = config_dir / group
    return sorted(path.relative_to(folder).with_suffix("").as_posix() for path in folder.rglob("*.yaml"))


def _yaml(path: Path) -> dict:
    import yaml

    try:
        node = yaml.safe_load(path.read_text()) if path.is_file() else None
    except (OSError, yaml.YAMLError):
        return {}
    return node if isinstance(node, dict) else {}


def _defaults(node: dict) -> dict[str, str]:
    """A config file's defaults list as group → choice (``override /sampler: sgld`` counts as ``sampler``)."""
    entries = node.get("defaults") or []
    pairs = [item for entry in entries if isinstance(entry, dict) for item in entry.items()]
    return {key.removeprefix("override ").strip().lstrip("/"): str(value) for key, value in pairs}


def _is_group(key: str, config_dir: Path) -> bool:
    return "/" in key or (key != "hydra" and (config_dir / key).is_dir())


def check_group_choices(parsed, config_dir: Path, group_options: Callable[[str], list[str]] | None = None) -> None:
    """Every choice of a config group exists: ours by their files; Hydra's (``hydra/...``) through
    ``group_options`` (a config loader's ``get_group_options``), skipped without one. A sweep's choices too (a
    ``glob(...)`` only where the overrides were parsed with a config loader)."""
    from hydra.core.override_parser.types import Glob

    for override in parsed:
        group = override.key_or_group
        if override.is_delete() or not _is_group(group, config_dir):
            continue
        if isinstance(override.value(), Glob) and override.config_loader is None:
            continue  # matches existing choices only: checked when the sweep's jobs are made
        ours = not group.startswith("hydra/")
        if not ours and group_options is None:
            continue
        allowed = group_choices(config_dir, group) if ours else sorted(group_options(group))
        values = list(override.sweep_string_iterator()) if override.is_sweep_override() else [override.value()]
        hint = f"; {DISTRIBUTED}" if group == "hydra/launcher" else ""
        for value in values:
            if value not in allowed:
                raise ConfigError(f"{group}={value!r} is invalid: allowed values are "
                                  f"{', '.join(allowed) or 'none found'}{hint}")
            if not ours:  # a file of ours in a group of Hydra's builds on others (slurm.yaml: the plugin's config)
                entries = _yaml(config_dir / group / f"{value}.yaml").get("defaults") or []
                for needed in entries:  # "- submitit_slurm": a config of the same group
                    if isinstance(needed, str) and needed != "_self_" and needed not in allowed:
                        raise ConfigError(f"{group}={value}: it builds on {group}/{needed}, which is not installed"
                                          f"{hint}")


SWEPT = object()  # a group whose choice a sweep varies: each job's own choice is checked with that job


def _choice(group: str, parsed):
    """The command line's choice for a group: a file name, :data:`SWEPT`, or None (no choice)."""
    for override in reversed(parsed):
        if override.key_or_group == group and not override.is_delete():
            return SWEPT if override.is_sweep_override() else str(override.value())
    return None


def experiment_config(parsed, config_dir: Path):
    """The chosen experiment's file (``+experiment=<name>``), an empty mapping without one, :data:`SWEPT`."""
    name = _choice("experiment", parsed)
    if name is None or name is SWEPT:
        return {} if name is None else SWEPT
    return _yaml(config_dir / "experiment" / f"{name}.yaml")


def chosen(group: str, parsed, config_dir: Path):
    """The file a group's choice names: the command line's, else the experiment's (``override /group``), else
    ``config.yaml``'s default; :data:`SWEPT` where a sweep varies it."""
    name = _choice(group, parsed)
    if name is not None:
        return name
    experiment = experiment_config(parsed, config_dir)
    if experiment is SWEPT:
        return SWEPT
    return _defaults(experiment).get(group) or _defaults(_yaml(config_dir / "config.yaml"))[group]


def _group_node(section: str, name: str, config_dir: Path) -> dict:
    """The keys a group's chosen file sets (``sampler/ccadl_shang2015.yaml`` configures ``ccadl`` under ``sampler``)."""
    node = _yaml(config_dir / section / f"{name}.yaml")
    return node.get(section, node) or {}


def declared_keys_added(parsed, overrides: list[str], config_dir: Path) -> list[str]:
    """``overrides`` (checked: :func:`check_keys`) with ``++`` before each ``group.key=value`` whose key the chosen
    sampler's, target's or schedule's file leaves out (its value is then the declaration's default): Hydra overrides
    only the keys a file lists, and which those are is no business of the command line's (``sampler.noise_clip=true``
    on a sampler whose file does not list it)."""
    from sgmcmc.keys import GROUPS

    out = list(overrides)
    for index, override in enumerate(parsed):
        key = override.key_or_group
        section, _, rest = key.partition(".")
        if (override.is_add() or override.is_force_add() or override.is_delete() or section not in GROUPS
                or not rest or _is_group(key, config_dir)):
            continue
        name = chosen(section, parsed, config_dir)
        if name is not SWEPT and rest.split(".")[0] not in _group_node(section, name, config_dir):
            out[index] = f"++{overrides[index]}"
    return out


def check_keys(parsed, config_dir: Path) -> None:
    """Every key an override sets (``key=value``, not ``+key``/``++key``/``~key``) is declared: see the module's
    docstring for what is left to Hydra."""
    from sgmcmc.keys import CONFIG_FIELDS, GROUPS, RUN_FIELDS

    top = sorted({*GROUPS, "run", *CONFIG_FIELDS})
    for override in parsed:
        key = override.key_or_group
        if override.is_add() or override.is_force_add() or override.is_delete() or _is_group(key, config_dir):
            continue
        section, _, rest = key.partition(".")
        field = rest.split(".")[0]
        if section == "hydra":
            continue  # Hydra's own config: Hydra checks it
        if section not in top or (rest and section in CONFIG_FIELDS and section != "vars"):
            raise ConfigError(f"{key} is not a known key; allowed keys are {', '.join(top)}")
        if section == "run" and rest and field not in RUN_FIELDS:
            raise ConfigError(f"{key} is not a known key; allowed keys are {', '.join('run.' + k for k in RUN_FIELDS)}")
        if section in GROUPS and rest:
            name = chosen(section, parsed, config_dir)
            if name is SWEPT:
                continue
            node = _group_node(section, name, config_dir)
            registered = str(node.get("name", name))
            allowed = sorted(set(GROUPS[section].get(registered, {})) | {"name"})
            if field not in allowed:
                raise ConfigError(f"{key} is not a known key of {section} '{name}'; allowed keys are "
                                  f"{', '.join(allowed)}")
        if section == "vars":
            experiment = experiment_config(parsed, config_dir)
            if experiment is SWEPT:
                continue
            names = sorted(experiment.get("vars") or {})
            if not names:
                raise ConfigError(f"{key} is not a known key: vars are an experiment's (+experiment=<name>), and the "
                                  f"command line chooses none that has vars")
            if rest and field not in names:
                raise ConfigError(f"{key} is not a known key; the experiment's vars are "
                                  f"{', '.join('vars.' + k for k in names)}")


def check_overrides(parsed, config_dir: Path, group_options: Callable[[str], list[str]] | None = None) -> None:
    """The group choices, then the keys (:func:`check_group_choices`, :func:`check_keys`); raises ConfigError."""
    check_group_choices(parsed, config_dir, group_options)
    check_keys(parsed, config_dir)


def compose_error_line(error: BaseException) -> str:
    """What is left of a compose error once the overrides are checked: the first line of Hydra's message."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__
