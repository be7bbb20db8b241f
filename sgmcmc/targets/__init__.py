"""Target registry: ``make_target(name, **params)`` builds a target by its config name."""

from __future__ import annotations

from sgmcmc.targets.base import SyntheticTarget, Target
from sgmcmc.targets.correlated_2d import Correlated2D
from sgmcmc.targets.double_well import DoubleWell
from sgmcmc.targets.gaussian_1d import Gaussian1D
from sgmcmc.targets.gaussian_2d import Gaussian2D
from sgmcmc.targets.data import DataTarget
from sgmcmc.targets.lecture_quartic import LectureQuartic
from sgmcmc.targets.drbm import DiscriminativeRBM, drbm
from sgmcmc.targets.logistic_regression import LogisticRegression, logistic_mnist79
from sgmcmc.targets.normal_gamma import NormalGamma
from sgmcmc.targets.welling_teh_mixture import WellingTehMixture



def lda(**params):
    """Online LDA (SPEC T10), imported on use: its Gibbs kernels load numba."""
    from sgmcmc.targets.lda import lda as make_lda

    return make_lda(**params)


CORRELATION_MATRIX = [[1.0, 0.9], [0.9, 1.0]]

TARGETS = {
    "gaussian_1d": Gaussian1D,
    "double_well": DoubleWell,
    "lecture_quartic": LectureQuartic,
    "correlated_2d": Correlated2D,
    "gaussian_2d_cov": lambda **kw: Gaussian2D(covariance=CORRELATION_MATRIX, name="gaussian_2d_cov", **kw),
    "gaussian_2d_prec": lambda **kw: Gaussian2D(precision=CORRELATION_MATRIX, name="gaussian_2d_prec", **kw),
    "welling_teh_mixture": WellingTehMixture,
    "normal_gamma": NormalGamma,
    "logistic_mnist79": logistic_mnist79,
    "drbm": drbm,
    "lda": lda,
}


def make_target(name: str, **params) -> Target:
    """Build the target registered under ``name`` with its config parameters."""
    if name not in TARGETS:
        raise KeyError(f"unknown target {name!r}; allowed: {', '.join(sorted(TARGETS))}")
    return TARGETS[name](**params)


__all__ = ["Target", "SyntheticTarget", "DataTarget", "LogisticRegression", "DiscriminativeRBM", "TARGETS", "make_target"]
