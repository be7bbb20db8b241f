"""Sampler registry: ``make_sampler(name, target, **params)`` builds a sampler by its config name.

Adding a sampler is one module (a :class:`~sgmcmc.samplers.base.Sampler` subclass declaring its
H, D, Q) and one line here.
"""

from __future__ import annotations

from sgmcmc.samplers.base import Sampler
from sgmcmc.samplers.ccadl import CCAdL
from sgmcmc.samplers.hmc import HMC, NaiveSGHMC
from sgmcmc.samplers.naive_sgrhmc import NaiveSGRHMC
from sgmcmc.samplers.sghmc import SGHMC
from sgmcmc.samplers.sghmc_mh import SGHMCMetropolis
from sgmcmc.samplers.sgld import SGLD
from sgmcmc.samplers.sgnht import SGNHT
from sgmcmc.samplers.sgrhmc import SGRHMC
from sgmcmc.samplers.sgrld import SGRLD

SAMPLERS = {
    cls.name: cls
    for cls in (SGLD, SGRLD, HMC, NaiveSGHMC, SGHMC, SGNHT, NaiveSGRHMC, SGRHMC, SGHMCMetropolis, CCAdL)
}


def make_sampler(name: str, target, **params) -> Sampler:
    """Build the sampler registered under ``name`` for ``target``."""
    if name not in SAMPLERS:
        raise KeyError(f"unknown sampler {name!r}; allowed: {', '.join(sorted(SAMPLERS))}")
    return SAMPLERS[name](target, **params)


__all__ = ["Sampler", "SAMPLERS", "make_sampler"]
