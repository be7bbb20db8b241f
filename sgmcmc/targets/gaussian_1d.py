"""T1, one peak (Ma et al. 2015 Fig. 2 left; SPEC §2): U(θ) = (θ − µ)²/(2σ²), default N(0, 1)."""

from __future__ import annotations

import numpy as np


from sgmcmc.targets.base import quadratic_gradient_into, quadratic_hessian_diagonal_into, quadratic_potential
from sgmcmc.targets.one_dimensional import OneDimensionalTarget


class Gaussian1D(OneDimensionalTarget):
    """N(mean, std²) with ∇Ũ = ∇U + N(0, V)."""

    name = "gaussian_1d"

    def __init__(self, mean: float = 0.0, std: float = 1.0, **kwargs):
        if std <= 0:
            raise ValueError("std must be > 0")
        self.mean, self.std = float(mean), float(std)
        super().__init__(**kwargs)

    def potential_1d(self, x):
        return 0.5 * ((x - self.mean) / self.std) ** 2

    def gradient_1d(self, x):
        return (x - self.mean) / self.std**2

    def hessian_diagonal(self, theta):
        return np.full(np.shape(theta), 1.0 / self.std**2)

    def engine_functions(self):
        return self.density_functions(quadratic_gradient_into, quadratic_potential, [self.mean, 1.0 / self.std**2],
                                      quadratic_hessian_diagonal_into)

    def exact_moments(self):
        return np.array([self.mean]), np.array([self.std**2 + self.mean**2])
