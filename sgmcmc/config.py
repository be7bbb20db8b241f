"""Validation of an experiment config (a plain dict, as Hydra resolves it) before anything runs.

Every error is a :class:`ConfigError` whose message is one line naming the key, the bad value and
the allowed values; the command line turns it into exit code 2 (see ``run.py``).
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

from sgmcmc.samplers import SAMPLERS
from sgmcmc.schedules import SCHEDULES
from sgmcmc.targets import TARGETS

NOISE_ESTIMATES = ("known", "zero", "running")
RUNNING_FORMS = ("full", "diagonal")
METRICS = ("identity", "rational")


class ConfigError(ValueError):
    """A config value is missing, of the wrong type, or out of range."""


Check = Callable[[str, Any], Any]


def _describe(value) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


def integer(minimum: int | None = None) -> Check:
    def check(key, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{key}={_describe(value)} is invalid: expected an integer")
        if minimum is not None and value < minimum:
            raise ConfigError(f"{key}={value} is invalid: allowed values are integers >= {minimum}")
        return int(value)

    return check


def real(minimum: float | None = None, strict: bool = False, maximum: float | None = None) -> Check:
    def check(key, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{key}={_describe(value)} is invalid: expected a number")
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"{key}={value} is invalid: expected a finite number")
        if minimum is not None and (value <= minimum if strict else value < minimum):
            raise ConfigError(f"{key}={value} is invalid: allowed values are numbers {'>' if strict else '>='} {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{key}={value} is invalid: allowed values are numbers <= {maximum}")
        return value

    return check


def boolean(key, value):
    if not isinstance(value, bool):
        raise ConfigError(f"{key}={_describe(value)} is invalid: allowed values are true, false")
    return value


def choice(*allowed: str) -> Check:
    def check(key, value):
        if value not in allowed:
            raise ConfigError(f"{key}={_describe(value)} is invalid: allowed values are {', '.join(allowed)}")
        return value

    return check


def optional(inner: Check) -> Check:
    def check(key, value):
        return None if value is None else inner(key, value)

    return check


def number_list(minimum: float | None = None, strict: bool = False) -> Check:
    def check(key, value):
        values = value if isinstance(value, (list, tuple)) else [value]
        return [real(minimum, strict)(f"{key}[{i}]", item) for i, item in enumerate(values)]

    return check


def noise_variance(key, value):
    """A scalar ≥ 0 or a square matrix given as a list of lists."""
    if isinstance(value, (list, tuple)):
        return [number_list()(f"{key}[{i}]", row) for i, row in enumerate(value)]
    return real(0.0)(key, value)


def metric(key, value):
    if value is None:
        return None
    if not isinstance(value, dict) or "name" not in value:
        raise ConfigError(f"{key} is invalid: expected null or a mapping with name in {', '.join(METRICS)}")
    fields = {"name": choice(*METRICS), "scale": number_list(0.0, strict=True), "softening": number_list(0.0)}
    return _check_fields(key, value, fields)


STEP = {"step_size": real(0.0, strict=True)}
COMMON = {**STEP, "noise_estimate": choice(*NOISE_ESTIMATES), "running_form": choice(*RUNNING_FORMS),
          "noise_clip": boolean, "finite_population": boolean}


def _integrators(name):
    return {"integrator": optional(choice(*SAMPLERS[name].integrators))}


SAMPLER_FIELDS: dict[str, dict[str, Check]] = {
    "sgld": {**COMMON, **_integrators("sgld")},
    "sgrld": {**COMMON, **_integrators("sgrld"), "metric": metric},
    "hmc": {**STEP, **_integrators("hmc"), "n_leapfrog": integer(1), "metropolis": boolean},
    "naive_sghmc": {**STEP, **_integrators("naive_sghmc"), "n_leapfrog": integer(1), "metropolis": boolean},
    "sghmc": {**COMMON, **_integrators("sghmc"), "friction": real(0.0, strict=True)},
    "sgnht": {**COMMON, **_integrators("sgnht"), "diffusion": real(0.0)},
    "naive_sgrhmc": {**COMMON, **_integrators("naive_sgrhmc"), "metric": metric},
    "sgrhmc": {**COMMON, **_integrators("sgrhmc"), "metric": metric},
    "ccadl": {**COMMON, **_integrators("ccadl"), "diffusion": real(0.0)},
    "sghmc_mh": {**STEP, "noise_estimate": choice("known", "zero"), **_integrators("sghmc_mh"), "friction": real(0.0, strict=True), "n_leapfrog": integer(1),
                 "metropolis": boolean},
}

SYNTHETIC = {
    "noise_variance": noise_variance,
    "initial_position": optional(number_list()),
    "initial_spread": real(0.0),
}
TARGET_FIELDS: dict[str, dict[str, Check]] = {
    "gaussian_1d": {**SYNTHETIC, "mean": real(), "std": real(0.0, strict=True)},
    "double_well": SYNTHETIC,
    "lecture_quartic": SYNTHETIC,
    "correlated_2d": SYNTHETIC,
    "gaussian_2d_cov": SYNTHETIC,
    "gaussian_2d_prec": SYNTHETIC,
    "welling_teh_mixture": {"data_seed": integer(0), "n_data": integer(1), "batch_size": integer(1),
                            "initial_position": optional(number_list()), "initial_spread": real(0.0)},
    # data_seed null: the data are drawn from the run's seed (SPEC §2 T7)
    "normal_gamma": {"data_seed": optional(integer(0)), "n_data": integer(2), "batch_size": integer(1),
                     "initial_position": number_list()},
    # data_dir / cache_dir null: sgmcmc.data.resolve_data_dir's / resolve_cache_dir's default (SPEC §2 T8, §4.9)
    "logistic_mnist79": {"data_dir": optional(lambda key, value: _string(key, value)),
                         "cache_dir": optional(lambda key, value: _string(key, value)), "projection_seed": integer(0),
                         "n_components": integer(1), "batch_size": integer(1),
                         "prior_variance": real(0.0, strict=True), "initial_scale": real(0.0, strict=True)},
    # SPEC §2 T9, §4.10: n_hidden / batch_size null = the paper's per-data-set values
    "drbm": {"dataset": choice("connect4", "letter", "acoustic"), "data_dir": optional(lambda key, value: _string(key, value)),
             "n_hidden": optional(integer(1)), "batch_size": optional(integer(1)), "split_seed": integer(0),
             "prior_variance": real(0.0, strict=True), "initial_scale": real(0.0, strict=True)},
    # SPEC §2 T10, §4.11: source / vocabulary null = the data folder's Wikipedia sample and dictnostops.txt
    "lda": {"data_dir": optional(lambda key, value: _string(key, value)), "source": optional(lambda key, value: _string(key, value)),
            "vocabulary": optional(lambda key, value: _string(key, value)),
            "source_format": choice("auto", "wikiextractor", "xml", "lines"), "n_topics": integer(1),
            "alpha": real(0.0, strict=True), "beta": real(0.0, strict=True), "batch_size": integer(1), "n_sweeps": integer(2),
            "corpus_size": real(0.0, strict=True), "n_held_out": integer(1), "buffer_size": integer(1),
            "stream_seed": integer(0)},
}

SCHEDULE_FIELDS: dict[str, dict[str, Check]] = {
    "constant": {},
    "polynomial": {"b": real(0.0, strict=True), "gamma": real(0.0, strict=True, maximum=1.0)},
    "cyclical": {"n_cycles": integer(1)},
}

RUN_FIELDS: dict[str, Check] = {
    "n_steps": integer(1),
    "n_chains": integer(1),
    "burn_in": integer(0),
    "thin": integer(1),
    "eval_every": integer(1),
    "progress": boolean,
    "figures": boolean,
    "results_dir": lambda key, value: _string(key, value),
    # checkpoint and resume (sgmcmc.checkpoint): seconds / steps between checkpoints (0 = never), a run folder
    "checkpoint_every_s": real(0.0),
    "checkpoint_every_steps": integer(0),
    "resume": optional(lambda key, value: _string(key, value)),
    # per-step files of the run's own chains (sgmcmc.observers): path_statistics.npz, snapshots.npz (0 = none)
    "path_statistics": boolean,
    "snapshot_every": integer(0),
    "snapshot_until": optional(integer(0)),
}
RUN_OPTIONAL = ("results_dir", "figures", "checkpoint_every_s", "checkpoint_every_steps", "resume", "path_statistics",
                "snapshot_every", "snapshot_until")


def _string(key, value):
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key}={_describe(value)} is invalid: expected a non-empty string")
    return value


def _check_fields(prefix: str, section: dict, fields: dict[str, Check], required: tuple = ()) -> dict:
    if not isinstance(section, dict):
        raise ConfigError(f"{prefix} is invalid: expected a mapping")
    for key in section:
        if key not in fields and key != "name":
            raise ConfigError(f"{prefix}.{key} is not a known key; allowed keys are {', '.join(sorted(fields))}")
    for key in required:
        if key not in section:
            raise ConfigError(f"{prefix}.{key} is missing")
    out = {}
    for key, value in section.items():
        out[key] = value if key == "name" else fields[key](f"{prefix}.{key}", value)
    return out


def _check_group(group: str, section: Any, registry: dict[str, dict[str, Check]], required: tuple = ()) -> dict:
    if not isinstance(section, dict) or "name" not in section:
        raise ConfigError(f"{group} is invalid: expected a mapping with a name in {', '.join(sorted(registry))}")
    name = section["name"]
    if name not in registry:
        raise ConfigError(f"{group}={_describe(name)} is invalid: allowed values are {', '.join(sorted(registry))}")
    return _check_fields(group, section, registry[name], required)


def validate_config(config: dict) -> dict:
    """Check a resolved experiment config; return it with numbers normalised, or raise ConfigError."""
    if not isinstance(config, dict):
        raise ConfigError("the config must be a mapping")
    allowed = {"sampler", "target", "schedule", "run", "seed"}
    optional_keys = {"vars", "data_dir", "cache_dir"}
    for key in config:
        if key not in allowed and key not in optional_keys:
            raise ConfigError(f"{key} is not a known key; allowed keys are {', '.join(sorted(allowed | optional_keys))}")
    for key in allowed:
        if key not in config:
            raise ConfigError(f"{key} is missing")
    if not isinstance(config.get("vars", {}), dict):
        raise ConfigError("vars is invalid: expected a mapping of values that other keys interpolate (${vars.NAME})")
    checked = {
        "sampler": _check_group("sampler", config["sampler"], SAMPLER_FIELDS, required=("step_size",)),
        "target": _check_group("target", config["target"], TARGET_FIELDS),
        "schedule": _check_group("schedule", config["schedule"], SCHEDULE_FIELDS),
        "run": _check_fields("run", config["run"], RUN_FIELDS, required=tuple(k for k in RUN_FIELDS if k not in RUN_OPTIONAL)),
        "seed": integer(0)("seed", config["seed"]),
    }
    if "data_dir" in config:  # the data folder of configs/config.yaml, interpolated by the data targets' configs
        checked["data_dir"] = optional(_string)("data_dir", config["data_dir"])
    if "cache_dir" in config:  # the cache folder of configs/config.yaml, interpolated by the targets that cache
        checked["cache_dir"] = optional(_string)("cache_dir", config["cache_dir"])
    if "vars" in config:  # shared values of an experiment (e.g. Shang et al.'s A), already interpolated
        checked["vars"] = dict(config["vars"])
    run = checked["run"]
    if run["burn_in"] >= run["n_steps"]:
        raise ConfigError(f"run.burn_in={run['burn_in']} is invalid: allowed values are integers < run.n_steps={run['n_steps']}")
    assert set(SCHEDULE_FIELDS) == set(SCHEDULES) and set(TARGET_FIELDS) == set(TARGETS)
    return checked
