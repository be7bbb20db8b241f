"""Diagonal Riemannian metrics G(θ) for SGRLD and SGRHMC (Ma et al. 2015 §3.2; SPEC §4.2).

A metric gives the diagonal of G(θ)^{-1/2} and its divergence; the samplers need
G^{-1/2}, G^{-1} and the corrections γ_i = ∂_{θ_i}(G^{-1/2})_ii and ∂_{θ_i}(G^{-1})_ii, and the ``aboba``
integrator needs the position flow θ̇ = G(θ)^{-1/2} r at fixed r. All methods take θ of shape (n_chains, dim) and
return (n_chains, dim).

A metric the engine's compiled blocks can take hands them functions of one chain (:meth:`DiagonalMetric.
engine_function`), like a target's gradient: ``metric(θ, parameters, root, derivative)`` writing S = diag G^{-1/2} and
∂_i S_ii, and ``flow(θ, r, t, parameters, out)`` writing Φ_t(θ, r), the flow of θ̇ = S(θ) r at fixed r (exact where
it has a closed form, else one classical Runge–Kutta step; it flips r where the flow crossed the support's boundary
and returns how many did). An explicit Euler step θ + t·s(θ)r is not enough when s depends on θ: in the overdamped
limit it loses the ½·s s′ part of the Langevin drift of D = s², a bias that does not shrink with ε; any second-order
flow keeps it. The built-in metrics' are plain Python the compiler accepts, the same expressions as their methods;
a metric of a user's own gets :meth:`DiagonalMetric.engine_function`'s default: its methods called in Python.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Optional

import numpy as np
from numba import types

from sgmcmc.engine.static import callback


class DiagonalMetric(ABC):
    """Base class: subclasses define ``inverse_sqrt`` and its derivative ``inverse_sqrt_derivative``."""

    name = "diagonal"

    @abstractmethod
    def inverse_sqrt(self, theta: np.ndarray) -> np.ndarray:
        """Diagonal of G(θ)^{-1/2}."""

    @abstractmethod
    def inverse_sqrt_derivative(self, theta: np.ndarray) -> np.ndarray:
        """∂_{θ_i}(G^{-1/2})_ii: the gSGRHMC correction γ (Ma et al. 2015, Algorithm 1)."""

    def engine_function(self, dim: int) -> Optional[tuple]:
        """(``metric(θ, parameters, root, derivative)``, ``flow(θ, r, t, parameters, out) -> crossed``, their parameters) for the
        engine's blocks in ``dim`` coordinates, or None where the engine cannot run this metric (only the ``generic``
        integrator can). By default this metric's own methods, called in Python from the compiled blocks one chain at
        a time (numba's object mode, :func:`sgmcmc.engine.static.callback`): :meth:`metric_of_one_chain` and
        :meth:`runge_kutta_flow`. A metric with functions the compiler takes returns those (as the built-in ones do),
        and so does one on a bounded support: the default flow knows no boundary, and a stage that leaves the support
        evaluates the metric outside it (a NaN stops the run as diverged; a finite value is silently wrong), where
        :func:`expanded_mean_flow` reflects at θ = 0."""
        return (callback(self.metric_of_one_chain, types.float64, "metric"),
                callback(self.runge_kutta_flow, types.int64, "flow"), np.zeros(0))

    def metric_of_one_chain(self, theta: np.ndarray, parameters, root: np.ndarray, derivative: np.ndarray) -> float:
        """The engine's ``metric`` door from :meth:`inverse_sqrt` and :meth:`inverse_sqrt_derivative` for one chain θ
        (d,): S = diag G(θ)^{-1/2} into ``root``, ∂_i S_ii into ``derivative``; returns 0.0."""
        root[:] = self.inverse_sqrt(theta[None, :])[0]
        derivative[:] = self.inverse_sqrt_derivative(theta[None, :])[0]
        return 0.0

    def runge_kutta_flow(self, theta: np.ndarray, momentum: np.ndarray, time: float, parameters,
                         out: np.ndarray) -> int:
        """The engine's ``flow`` door for one chain: Φ_t of θ̇ = S(θ) r at fixed r by one classical Runge–Kutta step
        (local error O(t⁵); module docstring) into ``out``. The metric names no boundary, so no coordinate is
        counted as crossing one (0)."""
        def velocity(point):
            return self.inverse_sqrt(point[None, :])[0] * momentum

        k1 = velocity(theta)
        k2 = velocity(theta + 0.5 * time * k1)
        k3 = velocity(theta + 0.5 * time * k2)
        k4 = velocity(theta + time * k3)
        out[:] = theta + (time / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
        return 0

    def inverse(self, theta: np.ndarray) -> np.ndarray:
        """Diagonal of G(θ)^{-1}."""
        return self.inverse_sqrt(theta) ** 2


class IdentityMetric(DiagonalMetric):
    """G = I: SGRHMC reduces to SGHMC with unit friction, SGRLD to SGLD."""

    name = "identity"

    def inverse_sqrt(self, theta):
        return np.ones_like(theta)

    def inverse_sqrt_derivative(self, theta):
        return np.zeros_like(theta)

    def engine_function(self, dim):
        return identity_metric, identity_flow, np.zeros(0)


class RationalMetric(DiagonalMetric):
    """(G^{-1/2})_ii = scale_i / sqrt(1 + softening_i θ_i²) (SPEC §4.2: 1D scale 1, softening 1;
    correlated 2D scale (1, 0.25), softening (1, 0))."""

    name = "rational"

    def __init__(self, scale, softening):
        self.scale = np.atleast_1d(np.asarray(scale, dtype=float))
        self.softening = np.atleast_1d(np.asarray(softening, dtype=float))
        if self.scale.shape != self.softening.shape:
            raise ValueError("metric.scale and metric.softening must have the same length")
        if np.any(self.scale <= 0) or np.any(self.softening < 0):
            raise ValueError("metric.scale must be > 0 and metric.softening >= 0")

    def inverse_sqrt(self, theta):
        return self.scale / np.sqrt(1.0 + self.softening * theta**2)

    def inverse_sqrt_derivative(self, theta):
        return -self.scale * self.softening * theta * (1.0 + self.softening * theta**2) ** -1.5

    def engine_function(self, dim):
        """:func:`rational_metric` and :func:`rational_flow` with parameters (a, b), each broadcast to ``dim``."""
        return rational_metric, rational_flow, np.concatenate([np.broadcast_to(self.scale, (dim,)),
                                                np.broadcast_to(self.softening, (dim,))]).astype(float)


class ExpandedMeanMetric(DiagonalMetric):
    """G(θ) = diag(c·θ)^{-1} on the positive orthant (Patterson & Teh 2013; SPEC T10, c = 1): G^{-1/2} = diag(√(cθ)).
    ``scale`` c > 0 multiplies the diffusion G⁻¹ (1 in SPEC; other values for tests of θ-dependent friction)."""

    name = "expanded_mean"

    def __init__(self, scale: float = 1.0):
        if not scale > 0:
            raise ValueError("metric scale must be > 0")
        self.scale = float(scale)

    def inverse_sqrt(self, theta):
        return np.sqrt(self.scale * theta)

    def inverse_sqrt_derivative(self, theta):
        return (0.5 * np.sqrt(self.scale)) / np.sqrt(theta)

    def inverse(self, theta):
        return self.scale * np.array(theta, dtype=float, copy=True)

    def engine_function(self, dim):
        """:func:`expanded_mean_metric` and :func:`expanded_mean_flow` with parameters (c,)."""
        return expanded_mean_metric, expanded_mean_flow, np.array([self.scale])


def identity_metric(theta, parameters, root, derivative):
    """G = I for one chain: S = 1, ∂S = 0 (SGLD's and SGHMC's, and the Riemannian samplers' on a flat target)."""
    for j in range(theta.shape[0]):
        root[j] = 1.0
        derivative[j] = 0.0


def identity_flow(theta, momentum, time, parameters, out):
    """Φ_t of G = I for one chain: θ + t r, exact; no coordinate crosses a boundary (0)."""
    for j in range(theta.shape[0]):
        out[j] = theta[j] + time * momentum[j]
    return 0


def rational_metric(theta, parameters, root, derivative):
    """:class:`RationalMetric` for one chain θ (d,), with ``parameters`` = (a, b) (2d,): S_jj = a_j/√(1 + b_j θ_j²)
    and ∂_j S_jj = −a_j b_j θ_j (1 + b_j θ_j²)^{-3/2}."""
    d = theta.shape[0]
    for j in range(d):
        spread = 1.0 + parameters[d + j] * (theta[j] * theta[j])
        root[j] = parameters[j] / math.sqrt(spread)
        derivative[j] = -parameters[j] * parameters[d + j] * theta[j] * spread**-1.5


def rational_flow(theta, momentum, time, parameters, out):
    """Φ_t of :class:`RationalMetric` for one chain, one classical Runge–Kutta step (local error O(t⁵)): S is diagonal and
    S_jj depends on θ_j alone, so each coordinate's flow θ̇_j = S_jj(θ_j) r_j is stepped on its own."""
    d = theta.shape[0]
    for j in range(d):
        scale, softening, x, speed = parameters[j], parameters[d + j], theta[j], momentum[j]
        k1 = scale / math.sqrt(1.0 + softening * (x * x)) * speed
        y = x + 0.5 * time * k1
        k2 = scale / math.sqrt(1.0 + softening * (y * y)) * speed
        y = x + 0.5 * time * k2
        k3 = scale / math.sqrt(1.0 + softening * (y * y)) * speed
        y = x + time * k3
        k4 = scale / math.sqrt(1.0 + softening * (y * y)) * speed
        out[j] = x + (time / 6.0) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)
    return 0


def expanded_mean_metric(theta, parameters, root, derivative):
    """:class:`ExpandedMeanMetric` for one chain θ (d,), ``parameters`` = (c,): S_jj = √(cθ_j) and
    ∂_j S_jj = ½√c/√θ_j."""
    for j in range(theta.shape[0]):
        root[j] = math.sqrt(parameters[0] * theta[j])
        derivative[j] = 0.5 * math.sqrt(parameters[0]) / math.sqrt(theta[j])


def expanded_mean_flow(theta, momentum, time, parameters, out):
    """Φ_t of :class:`ExpandedMeanMetric` for one chain, exact: √θ moves at the constant speed √c·r/2, so
    θ(t) = (√θ + √c·r·t/2)², r flipped in place where
    √θ + √c·r·t/2 < 0 (the flow reached 0 and came back mirrored); returns how many such coordinates."""
    crossed = 0
    for j in range(theta.shape[0]):
        root = math.sqrt(theta[j]) + 0.5 * math.sqrt(parameters[0]) * time * momentum[j]
        out[j] = root * root
        if root < 0.0:
            momentum[j] = -momentum[j]
            crossed += 1
    return crossed
