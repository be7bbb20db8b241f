"""Diagonal Riemannian metrics G(θ) for SGRLD and SGRHMC (Ma et al. 2015 §3.2; SPEC §4.2).

A metric gives the diagonal of G(θ)^{-1/2} and its divergence; the samplers need
G^{-1/2}, G^{-1} and the corrections γ_i = ∂_{θ_i}(G^{-1/2})_ii and ∂_{θ_i}(G^{-1})_ii.
All methods take θ of shape (n_chains, dim) and return (n_chains, dim).
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class DiagonalMetric(ABC):
    """Base class: subclasses define ``inverse_sqrt`` and its derivative ``inverse_sqrt_derivative``."""

    name = "diagonal"

    @abstractmethod
    def inverse_sqrt(self, theta: np.ndarray) -> np.ndarray:
        """Diagonal of G(θ)^{-1/2}."""

    @abstractmethod
    def inverse_sqrt_derivative(self, theta: np.ndarray) -> np.ndarray:
        """∂_{θ_i}(G^{-1/2})_ii: the gSGRHMC correction γ (Ma et al. 2015, Algorithm 1)."""

    def inverse(self, theta: np.ndarray) -> np.ndarray:
        """Diagonal of G(θ)^{-1}."""
        return self.inverse_sqrt(theta) ** 2

    def inverse_derivative(self, theta: np.ndarray) -> np.ndarray:
        """∂_{θ_i}(G^{-1})_ii = 2 s_i ∂_i s_i with s = diag(G^{-1/2}): the SGRLD correction Γ (Eq. 14 + K1)."""
        return 2.0 * self.inverse_sqrt(theta) * self.inverse_sqrt_derivative(theta)


class IdentityMetric(DiagonalMetric):
    """G = I: SGRHMC reduces to SGHMC with unit friction, SGRLD to SGLD."""

    name = "identity"

    def inverse_sqrt(self, theta):
        return np.ones_like(theta)

    def inverse_sqrt_derivative(self, theta):
        return np.zeros_like(theta)


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


class ExpandedMeanMetric(DiagonalMetric):
    """G(θ) = diag(θ)^{-1} on the positive orthant (Patterson & Teh 2013; SPEC T10): G^{-1/2} = diag(√θ)."""

    name = "expanded_mean"

    def inverse_sqrt(self, theta):
        return np.sqrt(theta)

    def inverse_sqrt_derivative(self, theta):
        return 0.5 / np.sqrt(theta)

    def inverse(self, theta):
        return np.array(theta, dtype=float, copy=True)

    def inverse_derivative(self, theta):
        return np.ones_like(theta)
