"""T5, the bivariate Gaussian of the SGHMC code and of the lecture (SPEC §2, K5):
U(θ) = ½ θᵀPθ with ∇Ũ = Pθ + N(0, V).

``gaussian_2d_cov``: covariance [[1, .9], [.9, 1]] (Chen et al. code, figure3);
``gaussian_2d_prec``: precision [[1, .9], [.9, 1]] (the lecture's reading of the same matrix).
"""

from __future__ import annotations

import numpy as np


from sgmcmc.targets.base import (SyntheticTarget, quadratic_gradient_into, quadratic_hessian_diagonal_into,
                                 quadratic_potential)


class Gaussian2D(SyntheticTarget):
    """A zero-mean bivariate Gaussian given by its covariance or its precision."""

    dim = 2

    def __init__(self, covariance=None, precision=None, name: str = "gaussian_2d", **kwargs):
        if (covariance is None) == (precision is None):
            raise ValueError("give exactly one of covariance and precision")
        if covariance is not None:
            covariance = np.asarray(covariance, dtype=float)
            precision = np.linalg.inv(covariance)
        else:
            precision = np.asarray(precision, dtype=float)
            covariance = np.linalg.inv(precision)
        if covariance.shape != (2, 2) or np.min(np.linalg.eigvalsh(covariance)) <= 0:
            raise ValueError("the covariance must be a positive definite 2x2 matrix")
        self.name = name
        self.covariance, self.precision = covariance, precision
        self._log_normaliser = 0.5 * np.linalg.slogdet(2.0 * np.pi * covariance)[1]
        super().__init__(**kwargs)

    def potential(self, theta):
        return 0.5 * np.einsum("ni,ij,nj->n", theta, self.precision, theta)

    def gradient(self, theta):
        return theta @ self.precision.T

    def hessian_diagonal(self, theta):
        """∂²U/∂θ_i² = P_ii (exact; pSGLD's stationary preconditioner; the engine's is
        quadratic_hessian_diagonal_into)."""
        return np.array(np.broadcast_to(np.diag(self.precision), np.shape(theta)), dtype=float)

    def engine_functions(self):
        return self.density_functions(quadratic_gradient_into, quadratic_potential,
                                      np.concatenate([np.zeros(2), self.precision.ravel()]),
                                      quadratic_hessian_diagonal_into)

    def log_density(self, theta):
        return -self.potential(np.asarray(theta)) - self._log_normaliser

    def exact_moments(self):
        return np.zeros(2), np.diag(self.covariance).copy()

    def histogram_edges(self):
        """80 × 80 bins over ±4 standard deviations of each coordinate."""
        spread = 4.0 * np.sqrt(np.diag(self.covariance))
        return np.linspace(-spread[0], spread[0], 81), np.linspace(-spread[1], spread[1], 81)
