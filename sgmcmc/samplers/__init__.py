"""Sampler registry: ``make_sampler(name, target, **params)`` builds a sampler by its config name.

Adding a sampler is one module (a :class:`~sgmcmc.samplers.base.Sampler` subclass declaring its H, D, Q, its
``name``, ``integrators`` and config keys ``parameters``), one :func:`register_sampler` call (for the samplers of
this package: one line below) and one ``configs/sampler/<name>.yaml``. The registry is the only list of samplers:
config validation (:mod:`sgmcmc.config`), ``run.py``, ``check.py`` and the tests read it.
"""

from __future__ import annotations

from sgmcmc.samplers.baoab import BADODAB, BAOAB
from sgmcmc.samplers.base import Sampler
from sgmcmc.samplers.ccadl import CCAdL
from sgmcmc.samplers.hmc import HMC, NaiveSGHMC
from sgmcmc.samplers.naive_sgrhmc import NaiveSGRHMC
from sgmcmc.samplers.optimisers import SGD, SGDMomentum
from sgmcmc.samplers.psgld import PSGLD, PSGLDNoGamma
from sgmcmc.samplers.sghmc import SGHMC
from sgmcmc.samplers.sghmc_mh import SGHMCMetropolis
from sgmcmc.samplers.sgld import SGLD
from sgmcmc.samplers.sgnht import SGNHT
from sgmcmc.samplers.sgrhmc import SGRHMC
from sgmcmc.samplers.sgrld import SGRLD
from sgmcmc.schema import Key

SAMPLERS: dict[str, type[Sampler]] = {}


def register_sampler(cls: type[Sampler]) -> type[Sampler]:
    """Register the sampler class ``cls`` under its ``name``: :func:`make_sampler` builds it, a config with
    ``sampler.name: <name>`` validates against its :meth:`~sgmcmc.samplers.base.Sampler.config_keys`, and the tests
    over :data:`SAMPLERS` cover it. Returns ``cls`` (so it also works as a class decorator). Unregister with
    ``del SAMPLERS[name]``."""
    if not (isinstance(cls, type) and issubclass(cls, Sampler)):
        raise TypeError(f"register_sampler: {cls!r} is not a Sampler subclass")
    name = cls.name
    if not isinstance(name, str) or not name.isidentifier() or name == Sampler.name:
        raise ValueError(f"register_sampler: {cls.__name__} needs a name of its own (a Python identifier), not {name!r}")
    if SAMPLERS.get(name, cls) is not cls:
        raise ValueError(f"register_sampler: {name!r} is already {SAMPLERS[name].__module__}.{SAMPLERS[name].__qualname__}")
    undeclared = [key for key, declared in cls.config_keys().items() if not isinstance(declared, Key)]
    if undeclared:  # a malformed declaration fails here, not in the first run
        raise TypeError(f"register_sampler: {cls.__name__}.parameters must map names to sgmcmc.schema.Key: {undeclared}")
    SAMPLERS[name] = cls
    return cls


for _sampler in (SGLD, SGRLD, HMC, NaiveSGHMC, SGHMC, SGNHT, NaiveSGRHMC, SGRHMC, SGHMCMetropolis, CCAdL, SGD,
                 SGDMomentum, BAOAB, BADODAB):
    register_sampler(_sampler)
register_sampler(PSGLD)
register_sampler(PSGLDNoGamma)


def make_sampler(name: str, target, **params) -> Sampler:
    """Build the sampler registered under ``name`` for ``target``."""
    if name not in SAMPLERS:
        raise KeyError(f"unknown sampler {name!r}; allowed: {', '.join(sorted(SAMPLERS))}")
    return SAMPLERS[name](target, **params)


__all__ = ["Sampler", "SAMPLERS", "make_sampler", "register_sampler"]
