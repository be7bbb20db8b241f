"""Target registry: ``make_target(name, **params)`` builds a target by its config name.

The registry holds names and where each target lives (``"module:attribute"``): a target's module, with what it
imports (scipy.stats, the data layer, scikit-learn, the LDA machinery and numba), is imported when the target is
first built or looked up, not with this package.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from importlib import import_module

from sgmcmc import lazy_exports
from sgmcmc.targets.base import SyntheticTarget, Target
from sgmcmc.targets.data import DataTarget


def lda(**params):
    """Online LDA (SPEC T10), imported on use: its Gibbs kernels load numba."""
    from sgmcmc.targets.lda import lda as make_lda

    return make_lda(**params)


CORRELATION_MATRIX = [[1.0, 0.9], [0.9, 1.0]]


def _gaussian_2d(name: str, **form):
    def make(**kw):
        from sgmcmc.targets.gaussian_2d import Gaussian2D

        return Gaussian2D(**form, name=name, **kw)

    return make


class _Registry(MutableMapping):
    """Name -> the target's class or factory (a dict to its users); an entry given as ``"module:attribute"`` is
    imported when it is looked up."""

    def __init__(self, entries: dict):
        self._entries = dict(entries)

    def __getitem__(self, name):
        entry = self._entries[name]
        if isinstance(entry, str):
            module, _, attribute = entry.partition(":")
            entry = self._entries[name] = getattr(import_module(module), attribute)
        return entry

    def __setitem__(self, name, entry):
        self._entries[name] = entry

    def __delitem__(self, name):
        del self._entries[name]

    def __iter__(self):
        return iter(self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._entries

    def __repr__(self):
        return f"TARGETS({', '.join(self._entries)})"


TARGETS = _Registry({
    "gaussian_1d": "sgmcmc.targets.gaussian_1d:Gaussian1D",
    "double_well": "sgmcmc.targets.double_well:DoubleWell",
    "lecture_quartic": "sgmcmc.targets.lecture_quartic:LectureQuartic",
    "correlated_2d": "sgmcmc.targets.correlated_2d:Correlated2D",
    "gaussian_2d_cov": _gaussian_2d("gaussian_2d_cov", covariance=CORRELATION_MATRIX),
    "gaussian_2d_prec": _gaussian_2d("gaussian_2d_prec", precision=CORRELATION_MATRIX),
    "welling_teh_mixture": "sgmcmc.targets.welling_teh_mixture:WellingTehMixture",
    "normal_gamma": "sgmcmc.targets.normal_gamma:NormalGamma",
    "logistic_mnist79": "sgmcmc.targets.logistic_regression:logistic_mnist79",
    "drbm": "sgmcmc.targets.drbm:drbm",
    "lda": lda,
})

# the classes this package exported, imported on first use (``from sgmcmc.targets import Correlated2D``)
_LAZY = {
    "Correlated2D": "sgmcmc.targets.correlated_2d",
    "DoubleWell": "sgmcmc.targets.double_well",
    "Gaussian1D": "sgmcmc.targets.gaussian_1d",
    "Gaussian2D": "sgmcmc.targets.gaussian_2d",
    "LectureQuartic": "sgmcmc.targets.lecture_quartic",
    "DiscriminativeRBM": "sgmcmc.targets.drbm",
    "drbm": "sgmcmc.targets.drbm",
    "LogisticRegression": "sgmcmc.targets.logistic_regression",
    "logistic_mnist79": "sgmcmc.targets.logistic_regression",
    "NormalGamma": "sgmcmc.targets.normal_gamma",
    "WellingTehMixture": "sgmcmc.targets.welling_teh_mixture",
}


__getattr__ = lazy_exports(globals(), _LAZY)


def make_target(name: str, **params) -> Target:
    """Build the target registered under ``name`` with its config parameters."""
    if name not in TARGETS:
        raise KeyError(f"unknown target {name!r}; allowed: {', '.join(sorted(TARGETS))}")
    return TARGETS[name](**params)


__all__ = ["Target", "SyntheticTarget", "DataTarget", "LogisticRegression", "DiscriminativeRBM", "TARGETS", "make_target"]
