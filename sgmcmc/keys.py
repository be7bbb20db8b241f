"""Every config key of a run, and a config checked against them all.

The groups' keys are read from their registries when looked up: a sampler's from its class
(``Sampler.config_keys`` over :data:`sgmcmc.samplers.SAMPLERS`), a target's from its registry line
(:data:`sgmcmc.targets.TARGETS`), a schedule's from its class (:data:`sgmcmc.schedules.SCHEDULES`), a gradient
estimator's from :data:`sgmcmc.gradient_estimators.ESTIMATOR_KEYS`; the run's and the top level's are
:mod:`sgmcmc.config`'s. A sampler added with :func:`sgmcmc.samplers.register_sampler` is validated like the others.
``python -m sgmcmc.keys`` prints the key list of the README from the same declarations.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path
from typing import Callable

from sgmcmc import config as run_config
from sgmcmc.config import CONFIG_FIELDS, RUN_FIELDS, Key, RunDescription
from sgmcmc.gradient_estimators import ESTIMATOR_KEYS
from sgmcmc.samplers import SAMPLERS
from sgmcmc.schedules import SCHEDULES
from sgmcmc.targets import TARGETS

__all__ = ["SAMPLER_FIELDS", "TARGET_FIELDS", "SCHEDULE_FIELDS", "GRADIENT_FIELDS", "GROUPS", "RUN_FIELDS",
           "CONFIG_FIELDS", "validate_config", "describe_config", "resume_free_keys", "key_list"]


class _ByName(Mapping):
    """name → that sampler's / target's / schedule's keys, read from its registry when looked up (so a sampler
    registered later is in it, and one removed is not)."""

    def __init__(self, registry: Mapping, keys_of: Callable[[str], dict[str, Key]]):
        self._registry, self._keys_of = registry, keys_of

    def __getitem__(self, name: str) -> dict[str, Key]:
        if name not in self._registry:
            raise KeyError(name)
        return self._keys_of(name)

    def __iter__(self):
        return iter(self._registry)

    def __len__(self):
        return len(self._registry)


SAMPLER_FIELDS: Mapping[str, dict[str, Key]] = _ByName(SAMPLERS, lambda name: SAMPLERS[name].config_keys())
TARGET_FIELDS: Mapping[str, dict[str, Key]] = _ByName(TARGETS, TARGETS.config_keys)
SCHEDULE_FIELDS: Mapping[str, dict[str, Key]] = _ByName(SCHEDULES, lambda name: SCHEDULES[name].keys)
GRADIENT_FIELDS: Mapping[str, dict[str, Key]] = ESTIMATOR_KEYS
GROUPS = {"sampler": SAMPLER_FIELDS, "target": TARGET_FIELDS, "schedule": SCHEDULE_FIELDS, "gradient": GRADIENT_FIELDS}


def validate_config(config: dict) -> dict:
    """Check a resolved experiment config against every declared key; return it with numbers normalised, or raise
    :class:`~sgmcmc.config.ConfigError` (one line naming the key)."""
    return run_config.check_config(config, GROUPS)


def describe_config(config: dict) -> RunDescription:
    """A resolved experiment config validated once into its typed, read-only :class:`~sgmcmc.config.RunDescription`
    (what :func:`sgmcmc.experiment.run_experiment` takes); a :class:`~sgmcmc.config.ConfigError` otherwise."""
    return run_config.describe_config(config, GROUPS)


def resume_free_keys() -> frozenset[str]:
    """The dotted keys that may differ between a run and its resume (:func:`sgmcmc.config.resume_free_keys`)."""
    return run_config.resume_free_keys(GROUPS)


def key_list() -> str:
    """Every config key as markdown tables (the README's "Config keys" section)."""
    return run_config.key_list(GROUPS)


BEGIN, END = "<!-- key list: python -m sgmcmc.keys --readme README.md -->", "<!-- end of the key list -->"


def write_key_list(readme: str) -> None:
    """Replace the text between :data:`BEGIN` and :data:`END` in the file ``readme`` with :func:`key_list`."""
    path = Path(readme)
    text = path.read_text()
    start, stop = text.index(BEGIN) + len(BEGIN), text.index(END)
    path.write_text(f"{text[:start]}\n{key_list()}{text[stop:]}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(prog="python -m sgmcmc.keys",
                                     description="Print every config key (markdown), from the keys' declarations.")
    parser.add_argument("--readme", metavar="FILE", help=f"write the list into FILE between the lines {BEGIN} and {END}")
    arguments = parser.parse_args()
    if arguments.readme:
        write_key_list(arguments.readme)
    else:
        print(key_list(), end="")
