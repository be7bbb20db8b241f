"""The run's own config keys (``run.*`` and the top level) and the validation of an experiment config (a plain dict,
as Hydra resolves it) against every declared key, before anything runs.

Every error is a :class:`ConfigError` whose message is one line naming the key, the bad value and the allowed values;
the command line turns it into exit code 2 (see ``run.py``).

Each key is declared once (:class:`sgmcmc.schema.Key`: its check, meaning and flags) where it belongs: a sampler's in
its class, a target's in its registry line, a schedule's in its class, a gradient estimator's in its module, the
run's and the top level's here. This module sits below all of them: it is given the groups' keys (``groups``: group
→ name → keys), which :mod:`sgmcmc.keys` reads from the registries; :func:`sgmcmc.keys.validate_config` is the
validation against them all, and ``python -m sgmcmc.keys`` prints the README's key list.

A config is validated once, into a :class:`RunDescription` (:func:`describe_config`; :func:`sgmcmc.keys.describe_config`
with every group's keys): frozen dataclasses, typed (:class:`RunOptions`, one :class:`Choice` per group), which is
what the library takes (:func:`sgmcmc.experiment.run_experiment`, :func:`sgmcmc.experiment.build`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import MISSING, dataclass, field, fields
from types import MappingProxyType
from typing import Any, Optional

from sgmcmc.schema import Check, ConfigError, Key, boolean, check_fields, choice, describe, integer, optional, real, string

__all__ = ["ConfigError", "Check", "Key", "GroupKeys", "RunOptions", "Choice", "RunDescription", "RUN_FIELDS",
           "CONFIG_FIELDS", "OPTIONAL_GROUPS", "check_config", "describe_config", "resume_free_keys", "key_list"]

# group -> name (a sampler's, a target's, ...) -> that name's keys
GroupKeys = Mapping[str, Mapping[str, Mapping[str, Key]]]
# groups a config may leave out, and the section they then get (configs written before the group existed)
OPTIONAL_GROUPS = {"gradient": {"name": "minibatch"}}

def _declared(check, meaning: str, default=MISSING, resume_free: bool = False):
    """A field of :class:`RunOptions` that declares its config key: the :class:`Key` (required when the field has no
    default) in its metadata, and the default the code uses when a config leaves the key out."""
    key = Key(check, meaning, required=default is MISSING, resume_free=resume_free)
    return field(default=default, metadata={"key": key})


@dataclass(frozen=True, kw_only=True)
class RunOptions:
    """The checked ``run.*`` keys, each declared here once: its check, meaning and flags (:data:`RUN_FIELDS`, the
    view the validation and the README's key list read) and its default in the code, configs/config.yaml's. What
    :func:`sgmcmc.runner.run_chains` takes as its settings: the first seven (how long to run, which steps sample and
    what to keep) are what it reads, and Python callers name only those they change."""

    n_steps: int = _declared(integer(1), "steps per chain", 2000)
    n_chains: int = _declared(integer(1), "chains run in parallel (vectorised)", 1000)
    burn_in: int = _declared(integer(0), "steps discarded at the start of every chain (< n_steps)", 1000)
    noise_free_steps: int = _declared(integer(0), "the first steps take the sampler's step without its injected noise "
                                                  "(SGD, or SGD with momentum, as the SGHMC authors' first epoch or "
                                                  "rounds), their states not kept as samples (0 = none)", 0)
    thin: int = _declared(integer(1), "keep every thin-th step after burn-in", 1)
    eval_every: int = _declared(integer(1), "steps between rows of trace.csv", 100)
    progress: bool = _declared(boolean, "progress bar (shown after 2 s)", True, resume_free=True)
    backend: str = _declared(choice("compiled", "python"), "the engine's blocks compiled (numba), or their same source "
                             "run as plain Python (the readable reference: slow, but nothing to compile)", "compiled")
    figures: bool = _declared(boolean, "write figures/*.png", True)
    results_dir: str = _declared(string, "the folder of the run folders", "results/runs", resume_free=True)
    block_seconds: float = _declared(real(0.0), "wall time of a block of steps at most, after the first (a stop "
                                                "request waits for the block in progress; 0 = one step a block)", 0.5,
                                     resume_free=True)
    # checkpoint and resume (sgmcmc.checkpoint)
    checkpoint_every_s: float = _declared(real(0.0), "seconds of wall time between checkpoints (0 = never)", 300.0,
                                          resume_free=True)
    checkpoint_every_steps: int = _declared(integer(0), "steps between checkpoints (0 = never)", 0, resume_free=True)
    resume: Optional[str] = _declared(optional(string), "a run folder: continue that killed or interrupted run in it",
                                      None, resume_free=True)
    # per-step files of the run's own chains (sgmcmc.observers)
    path_statistics: bool = _declared(boolean, "path_statistics.npz: per step, the mean over chains of ξ, ξ² and r·r/d",
                                      False)
    snapshot_every: int = _declared(integer(0), "snapshots.npz: θ of every chain at step 0 and every n-th step "
                                                "(0 = none)", 0)
    snapshot_until: Optional[int] = _declared(optional(integer(0)), "the snapshots' last step (null = the run's last)",
                                              None)
    # the kernel Stein discrepancy (sgmcmc.diagnostics.stein)
    ksd_points: int = _declared(integer(0), "at most this many pooled kept samples for the IMQ kernel Stein "
                                            "discrepancy, evenly spaced (0 = off): trace.csv's ksd column and final.ksd "
                                            "on a target without data, final.ksd on at most 100 of them on a data "
                                            "target (a full-data gradient each)", 1000)

    @property
    def n_kept(self) -> int:
        """The draws each chain keeps: every ``thin``-th step after ``burn_in``."""
        return max(0, (self.n_steps - self.burn_in) // self.thin)


RUN_FIELDS: dict[str, Key] = {option.name: option.metadata["key"] for option in fields(RunOptions)}


def _mapping(key, value):
    if not isinstance(value, dict):
        raise ConfigError(f"{key} is invalid: expected a mapping of values that other keys interpolate (${{vars.NAME}})")
    return dict(value)


_mapping.allowed = "a mapping"

# the top level besides the groups and run (all of which are required)
CONFIG_FIELDS: dict[str, Key] = {
    "seed": Key(integer(0), "the run's random seed (initial positions, minibatches, noise)", required=True),
    "data_dir": Key(optional(string), "the data sets folder, which the data targets' configs interpolate; null: "
                                      "$SGMCMC_DATA or the project's data_cache/"),
    "cache_dir": Key(optional(string), "the derived caches' folder, never data_dir; null: $SGMCMC_CACHE or the "
                                       "project's .cache/", resume_free=True),
    "tune": Key(optional(choice("auto", "off")), "auto: choose sampler.step_size (and friction / diffusion) by a short "
                                                 "pilot before the run, and start the chains near the mode "
                                                 "(sgmcmc.tuning); off: the config's values; null: auto on "
                                                 "target=custom, off on the built-in targets"),
    "vars": Key(_mapping, "shared values of an experiment that other keys interpolate (${vars.NAME})"),
}


def _check_group(group: str, section: Any, registry: Mapping[str, Mapping[str, Key]]) -> dict:
    if not isinstance(section, dict) or "name" not in section:
        raise ConfigError(f"{group} is invalid: expected a mapping with a name in {', '.join(sorted(registry))}")
    name = section["name"]
    if not isinstance(name, str) or name not in registry:
        raise ConfigError(f"{group}={describe(name)} is invalid: allowed values are {', '.join(sorted(registry))}")
    keys = registry[name]
    return check_fields(group, section, keys, required=tuple(key for key, declared in keys.items() if declared.required))


def check_config(config: dict, groups: GroupKeys) -> dict:
    """Check a resolved experiment config against the run's keys and the groups' (``groups``); return it with numbers
    normalised, or raise ConfigError."""
    if not isinstance(config, dict):
        raise ConfigError("the config must be a mapping")
    known = {*groups, "run", *CONFIG_FIELDS}
    for key in config:
        if key not in known:
            raise ConfigError(f"{key} is not a known key; allowed keys are {', '.join(sorted(known))}")
    config = {**{group: dict(section) for group, section in OPTIONAL_GROUPS.items() if group not in config}, **config}
    for key in (*groups, "run", *(key for key, declared in CONFIG_FIELDS.items() if declared.required)):
        if key not in config:
            raise ConfigError(f"{key} is missing")
    if "vars" in config:  # shared values of an experiment (e.g. Shang et al.'s A), already interpolated
        vars_ = CONFIG_FIELDS["vars"].check("vars", config["vars"])
    checked = {group: _check_group(group, config[group], registry) for group, registry in groups.items()}
    checked["run"] = check_fields("run", config["run"], RUN_FIELDS,
                                  required=tuple(key for key, declared in RUN_FIELDS.items() if declared.required))
    for key, declared in CONFIG_FIELDS.items():
        if key in config and key != "vars":
            checked[key] = declared.check(key, config[key])
    if "vars" in config:
        checked["vars"] = vars_
    run = checked["run"]
    if run["burn_in"] >= run["n_steps"]:
        raise ConfigError(f"run.burn_in={run['burn_in']} is invalid: allowed values are integers < run.n_steps={run['n_steps']}")
    return checked


def _frozen(value):
    """A checked value read-only: mappings as read-only mappings, lists as tuples, all the way down."""
    if isinstance(value, Mapping):
        return MappingProxyType({key: _frozen(item) for key, item in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(item) for item in value)
    return value


def _thawed(value):
    """:func:`_frozen` undone: plain dicts and lists (what YAML writes)."""
    if isinstance(value, Mapping):
        return {key: _thawed(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [_thawed(item) for item in value]
    return value


@dataclass(frozen=True)
class Choice:
    """A group's choice: the registry ``name`` of a sampler, target, schedule or gradient estimator and its checked
    keys (``values``, read-only, ``name`` not among them)."""

    name: str
    values: Mapping[str, Any]

    def arguments(self) -> dict:
        """``values`` as plain keyword arguments (dicts and lists: what the constructors take)."""
        return _thawed(self.values)


@dataclass(frozen=True)
class RunDescription:
    """An experiment config validated once (:func:`describe_config`), typed and read-only: what the library takes
    (:func:`sgmcmc.experiment.run_experiment`, :func:`sgmcmc.experiment.build`). ``config`` is the checked config as
    given (what the run folder's config.yaml holds and the checkpoints' hash reads: :meth:`as_dict`)."""

    config: Mapping[str, Any]
    seed: int
    sampler: Choice
    target: Choice
    schedule: Choice
    gradient: Choice
    run: RunOptions
    data_dir: Optional[str] = None
    cache_dir: Optional[str] = None
    vars: Optional[Mapping[str, Any]] = None
    tune: Optional[str] = None  # auto, off, or None: auto on target=custom (sgmcmc.experiment._build reads it)

    @property
    def step_size(self) -> float:
        """The sampler's step size (``sampler.step_size``, the schedule's base)."""
        return self.sampler.values["step_size"]

    def as_dict(self) -> dict:
        """The checked config as a plain dict (a new one each call)."""
        return _thawed(self.config)


def describe_config(config: dict, groups: GroupKeys) -> RunDescription:
    """:func:`check_config`, then its result as a :class:`RunDescription`; raises ConfigError."""
    checked = _frozen(check_config(config, groups))

    def choice(group: str) -> Choice:
        section = checked[group]
        return Choice(section["name"], MappingProxyType({key: value for key, value in section.items() if key != "name"}))

    return RunDescription(config=checked, seed=checked["seed"], sampler=choice("sampler"), target=choice("target"),
                          schedule=choice("schedule"), gradient=choice("gradient"), run=RunOptions(**checked["run"]),
                          data_dir=checked.get("data_dir"), cache_dir=checked.get("cache_dir"),
                          vars=checked.get("vars"), tune=checked.get("tune"))


def resume_free_keys(groups: GroupKeys) -> frozenset[str]:
    """The dotted keys that may differ between a run and its resume (those declared ``resume_free``), the groups'
    keys ``groups``: :func:`sgmcmc.checkpoint.config_hash` leaves them out."""
    free = {key for key, declared in CONFIG_FIELDS.items() if declared.resume_free}
    free |= {f"run.{key}" for key, declared in RUN_FIELDS.items() if declared.resume_free}
    for group, registry in groups.items():
        free |= {f"{group}.{key}" for keys in registry.values() for key, declared in keys.items() if declared.resume_free}
    return frozenset(free)


# ------------------------------------------------------------------------------------------ the README's key list


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _group_rows(registry: Mapping[str, Mapping[str, Key]]) -> list[str]:
    """One row per key, allowed values and meaning: the names that declare it so, the allowed values, the meaning."""
    rows: dict[tuple[str, str, str], list] = {}
    for name in registry:
        for key, declared in registry[name].items():
            rows.setdefault((key, declared.allowed, declared.meaning), [declared, []])[1].append(name)
    every = set(registry)
    lines = []
    for (key, allowed, _), (declared, names) in sorted(rows.items(), key=lambda item: item[0][0]):
        which = "all" if set(names) == every else ", ".join(f"`{name}`" for name in names)
        required = " (required)" if declared.required else ""
        lines.append(f"| `{key}`{required} | {which} | {_cell(allowed)} | {_cell(declared.meaning)} |")
    return lines


def key_list(groups: GroupKeys) -> str:
    """Every config key as markdown tables, from the declarations and the groups' keys ``groups`` (the README's
    "Config keys" section)."""
    out = []
    for group, registry in groups.items():
        plural = {"sampler": "samplers", "target": "targets", "schedule": "schedules", "gradient": "estimators"}[group]
        out += [f"`{group}.<key>` (besides `{group}.name`, one of {', '.join(f'`{n}`' for n in registry)}):", "",
                f"| key | {plural} | allowed values | meaning |", "|---|---|---|---|", *_group_rows(registry), ""]
    for title, declared_keys, prefix in (("`run.<key>`:", RUN_FIELDS, "run."), ("Top level:", CONFIG_FIELDS, "")):
        out += [title, "", "| key | allowed values | meaning |", "|---|---|---|"]
        for key, declared in declared_keys.items():
            flags = [flag for flag, on in (("required", declared.required), ("may differ on a resume", declared.resume_free)) if on]
            suffix = f" ({', '.join(flags)})" if flags else ""
            out.append(f"| `{prefix}{key}`{suffix} | {_cell(declared.allowed)} | {_cell(declared.meaning)} |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"
