"""The vocabulary in which every config key is declared, once, where it belongs: a :class:`Key` is a key's check
(type, range or choices), what it means, and its flags.

The declarations: a sampler's keys in its class (:meth:`sgmcmc.samplers.base.Sampler.config_keys`), a schedule's in
its class (:data:`sgmcmc.schedules.SCHEDULES`), a target's in its registry line (:data:`sgmcmc.targets.TARGETS`),
the run's and the top level's in :mod:`sgmcmc.config`, which validates a config with them (given the groups' keys:
:mod:`sgmcmc.keys` reads them from the registries); the one-line errors, the keys that may differ on a resume and the
README's key list (``python -m sgmcmc.keys``) all come from them.

A check is ``check(key, value) -> value`` (normalised: integers to int, numbers to float) raising
:class:`ConfigError` with one line naming the key, the bad value and the allowed values; its ``allowed`` attribute
is the text after "allowed values are". Defaults are not declared here: they are the YAML files' values
(``configs/``) and, from Python, the constructors' keyword defaults.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Callable, Mapping

Check = Callable[[str, Any], Any]


class ConfigError(ValueError):
    """A config value is missing, of the wrong type, or out of range."""


@dataclass(frozen=True)
class Key:
    """One config key: its ``check``, one line saying what it is (the README's key list), whether a config must set
    it (``required``; the others have a default in the code), and whether a resumed run may give it another value
    (``resume_free``: it changes neither the samples nor the result files, :func:`sgmcmc.keys.resume_free_keys`)."""

    check: Check
    meaning: str = ""
    required: bool = False
    resume_free: bool = False

    @property
    def allowed(self) -> str:
        return self.check.allowed


def _allowing(text: str, **attributes) -> Callable[[Check], Check]:
    def mark(check: Check) -> Check:
        check.allowed = text
        for name, value in attributes.items():
            setattr(check, name, value)
        return check

    return mark


def describe(value) -> str:
    return repr(value) if not isinstance(value, str) else f"'{value}'"


def integer(minimum: int | None = None) -> Check:
    @_allowing("integers" if minimum is None else f"integers >= {minimum}")
    def check(key, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Integral):
            raise ConfigError(f"{key}={describe(value)} is invalid: expected an integer")
        if minimum is not None and value < minimum:
            raise ConfigError(f"{key}={value} is invalid: allowed values are integers >= {minimum}")
        return int(value)

    return check


def real(minimum: float | None = None, strict: bool = False, maximum: float | None = None) -> Check:
    bounds = [] if minimum is None else [f"{'>' if strict else '>='} {float(minimum)}"]
    bounds += [] if maximum is None else [f"<= {float(maximum)}"]

    @_allowing(" ".join(["numbers", " and ".join(bounds)]).strip())
    def check(key, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise ConfigError(f"{key}={describe(value)} is invalid: expected a number")
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(f"{key}={value} is invalid: expected a finite number")
        if minimum is not None and (value <= minimum if strict else value < minimum):
            raise ConfigError(f"{key}={value} is invalid: allowed values are numbers {'>' if strict else '>='} {minimum}")
        if maximum is not None and value > maximum:
            raise ConfigError(f"{key}={value} is invalid: allowed values are numbers <= {maximum}")
        return value

    return check


@_allowing("true, false")
def boolean(key, value):
    if not isinstance(value, bool):
        raise ConfigError(f"{key}={describe(value)} is invalid: allowed values are true, false")
    return value


def choice(*allowed: str) -> Check:
    """One of ``allowed`` (its ``choices`` attribute), in the order given."""

    @_allowing(", ".join(allowed), choices=tuple(allowed))
    def check(key, value):
        if value not in allowed:
            raise ConfigError(f"{key}={describe(value)} is invalid: allowed values are {', '.join(allowed)}")
        return value

    return check


def optional(inner: Check) -> Check:
    """``inner``, or null."""

    @_allowing(f"{inner.allowed}, or null", **({"choices": inner.choices} if hasattr(inner, "choices") else {}))
    def check(key, value):
        return None if value is None else inner(key, value)

    return check


def number_list(minimum: float | None = None, strict: bool = False) -> Check:
    """A number or a list of numbers (each checked by :func:`real`), as a list."""
    each = real(minimum, strict)

    @_allowing(f"a list of {each.allowed} (or one)")
    def check(key, value):
        values = value if isinstance(value, (list, tuple)) else [value]
        return [each(f"{key}[{i}]", item) for i, item in enumerate(values)]

    return check


@_allowing("a non-empty string")
def string(key, value):
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{key}={describe(value)} is invalid: expected a non-empty string")
    return value


@_allowing("a mapping (key: value, ...)")
def mapping(key, value):
    """A mapping with string keys (e.g. a user model's keyword arguments), as a dict."""
    if not isinstance(value, dict) or not all(isinstance(name, str) for name in value):
        raise ConfigError(f"{key}={describe(value)} is invalid: expected a mapping with string keys")
    return dict(value)


@_allowing("a number >= 0.0, or a square matrix as a list of lists of numbers")
def noise_variance(key, value):
    """A scalar ≥ 0 or a square matrix given as a list of lists."""
    if isinstance(value, (list, tuple)):
        return [number_list()(f"{key}[{i}]", row) for i, row in enumerate(value)]
    return real(0.0)(key, value)


def check_fields(prefix: str, section: Any, keys: Mapping[str, Key], required: tuple = ()) -> dict:
    """A mapping ``section`` whose keys (besides ``name``) are among ``keys``, each checked, ``required`` present."""
    if not isinstance(section, dict):
        raise ConfigError(f"{prefix} is invalid: expected a mapping")
    for key in section:
        if key not in keys and key != "name":
            raise ConfigError(f"{prefix}.{key} is not a known key; allowed keys are {', '.join(sorted(keys))}")
    for key in required:
        if key not in section:
            raise ConfigError(f"{prefix}.{key} is missing")
    return {key: value if key == "name" else keys[key].check(f"{prefix}.{key}", value) for key, value in section.items()}


METRICS = ("identity", "rational", "expanded_mean")
METRIC_KEYS = {"name": Key(choice(*METRICS), "identity: G = I; rational: G(θ)^{-1/2} = scale·(softening + θ²)^{-1/2}; "
                                             "expanded_mean: G(θ)⁻¹ = scale·diag(θ) (LDA's, one scale)"),
               "scale": Key(number_list(0.0, strict=True), "per coordinate, or one for all"),
               "softening": Key(number_list(0.0), "per coordinate, or one for all")}


@_allowing(f"null, or a mapping with name ({', '.join(METRICS)}) and scale, softening")
def metric(key, value):
    """A Riemannian metric G(θ) (:mod:`sgmcmc.geometry`): null (the target's) or ``{name, scale, softening}``."""
    if value is None:
        return None
    if not isinstance(value, dict) or "name" not in value:
        raise ConfigError(f"{key} is invalid: expected null or a mapping with name in {', '.join(METRICS)}")
    METRIC_KEYS["name"].check(f"{key}.name", value["name"])  # check_fields passes a name through
    return check_fields(key, value, METRIC_KEYS)
