"""The formula targets' potential gradients ∇U(θ) (SPEC §2) as the compiled kernels know them
(:func:`sgmcmc.engine.kernels.gradient_into`, one chain at a time; this module does not import numba).

A target declares its compiled gradient through :meth:`sgmcmc.targets.base.Target.compiled_gradient`:
a :class:`CompiledGradient` naming one of the formulas below and its parameters. The formulas are the
same as the targets' numpy ``gradient`` methods (the tests pin the two together):

- ``QUADRATIC``: U = ½(θ − m)ᵀP(θ − m), ∇U = P(θ − m); parameters (m, P row-major). T1, T5.
- ``DOUBLE_WELL``: U = θ⁴ − 2θ², ∇U = 4θ³ − 4θ (T2).
- ``LECTURE_QUARTIC``: ∇U = (4θ³ + 3θ² − 26θ − 1)/14 (T3).
- ``CORRELATED_2D``: U = θ₁⁴/10 + (4(θ₂ + 1.2) − θ₁²)²/2 (T4).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

QUADRATIC, DOUBLE_WELL, LECTURE_QUARTIC, CORRELATED_2D = 0, 1, 2, 3


class CompiledGradient(NamedTuple):
    """∇Ũ(θ) = ∇U(θ) + L z of a formula target: which compiled formula gives ∇U, its parameters (a flat float64
    array), the gradient-noise covariance V (d, d) and its factor L with V = LLᵀ (``SyntheticTarget``)."""

    kind: int
    parameters: np.ndarray
    noise_factor: np.ndarray
    noise_covariance: np.ndarray


def formula(kind: int, target, parameters=(0.0,)) -> CompiledGradient:
    """The formula ``kind`` with ``parameters`` and the gradient noise of the ``SyntheticTarget`` ``target``."""
    return CompiledGradient(kind, np.ascontiguousarray(parameters, dtype=float),
                            np.ascontiguousarray(target._noise_factor, dtype=float),
                            np.ascontiguousarray(target.variance, dtype=float))


def quadratic(mean, precision, target) -> CompiledGradient:
    """∇U = P(θ − m) for the mean m (d,) and precision P (d, d)."""
    mean = np.atleast_1d(np.asarray(mean, dtype=float))
    precision = np.atleast_2d(np.asarray(precision, dtype=float))
    return formula(QUADRATIC, target, np.concatenate([mean, precision.ravel()]))
