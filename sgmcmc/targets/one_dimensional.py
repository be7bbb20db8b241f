"""Shared machinery of the 1D formula targets: normalisation and moments by quadrature (scipy)."""

from __future__ import annotations

import numpy as np
from scipy import integrate

from sgmcmc.geometry import DiagonalMetric, RationalMetric
from sgmcmc.targets.base import SyntheticTarget


class OneDimensionalTarget(SyntheticTarget):
    """A 1D target U(θ) normalised numerically: log π = −U − log Z, Z = ∫ exp(−U) dθ (scipy quad).

    Subclasses define ``potential_1d`` and ``gradient_1d`` on flat arrays and may set the KL grid
    (``grid_lower``, ``grid_upper``, ``grid_width``; SPEC §3: width 0.1 on [−3, 3]).
    """

    dim = 1
    grid_lower, grid_upper, grid_width = -3.0, 3.0, 0.1

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        shift = self._minimum_potential()
        mass, _ = integrate.quad(lambda x: np.exp(-(self.potential_1d(np.array([x]))[0] - shift)), -np.inf, np.inf)
        self.log_normaliser = float(np.log(mass) - shift)

    def _minimum_potential(self) -> float:
        grid = np.linspace(-20.0, 20.0, 40001)
        return float(np.min(self.potential_1d(grid)))

    def potential_1d(self, x: np.ndarray) -> np.ndarray:
        raise TypeError("a 1D target defines potential_1d")

    def gradient_1d(self, x: np.ndarray) -> np.ndarray:
        raise TypeError("a 1D target defines gradient_1d")

    def potential(self, theta):
        return self.potential_1d(theta[:, 0])

    def gradient(self, theta):
        return self.gradient_1d(theta)

    def log_density(self, theta):
        return -self.potential_1d(np.asarray(theta)[:, 0]) - self.log_normaliser

    def density_1d(self, x: np.ndarray) -> np.ndarray:
        """Exact density at the points x (flat array)."""
        return np.exp(-self.potential_1d(x) - self.log_normaliser)

    def exact_moments(self):
        first, _ = integrate.quad(lambda x: x * self.density_1d(np.array([x]))[0], -np.inf, np.inf)
        second, _ = integrate.quad(lambda x: x * x * self.density_1d(np.array([x]))[0], -np.inf, np.inf)
        return np.array([first]), np.array([second])

    def histogram_edges(self):
        n_bins = int(round((self.grid_upper - self.grid_lower) / self.grid_width))
        return np.linspace(self.grid_lower, self.grid_upper, n_bins + 1)

    def default_metric(self) -> DiagonalMetric:
        """SPEC §4.2: G(θ)^{-1/2} = (1 + θ²)^{-1/2} (our choice for Fig. 2 left)."""
        return RationalMetric(scale=[1.0], softening=[1.0])
