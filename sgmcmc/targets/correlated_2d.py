"""T4, the correlated 2D target of Ma et al. (2015) Fig. 2 right (SPEC §2):

U(θ) = θ₁⁴/10 + (4(θ₂ + 1.2) − θ₁²)²/2, so θ₂ | θ₁ ~ N(θ₁²/4 − 1.2, 1/16) and
p(θ₁) ∝ exp(−θ₁⁴/10): the normaliser and moments follow from 1D quadrature in θ₁.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, stats

from sgmcmc.geometry import RationalMetric
from sgmcmc.targets.base import SyntheticTarget


class Correlated2D(SyntheticTarget):
    name = "correlated_2d"
    dim = 2

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        marginal_mass, _ = integrate.quad(lambda x: np.exp(-(x**4) / 10.0), -np.inf, np.inf)
        self.log_normaliser = float(np.log(marginal_mass) + 0.5 * np.log(2.0 * np.pi) - np.log(4.0))
        self._marginal_mass = marginal_mass

    def potential(self, theta):
        x, y = theta[:, 0], theta[:, 1]
        return x**4 / 10.0 + 0.5 * (4.0 * (y + 1.2) - x**2) ** 2

    def gradient(self, theta):
        x, y = theta[:, 0], theta[:, 1]
        residual = 4.0 * (y + 1.2) - x**2
        return np.stack([0.4 * x**3 - 2.0 * x * residual, 4.0 * residual], axis=1)

    def hessian_diagonal(self, theta):
        """(∂²U/∂θ₁², ∂²U/∂θ₂²) = (1.2θ₁² − 2(4(θ₂ + 1.2) − θ₁²) + 4θ₁², 16)."""
        x, y = theta[:, 0], theta[:, 1]
        return np.stack([5.2 * x**2 - 2.0 * (4.0 * (y + 1.2) - x**2), np.full_like(y, 16.0)], axis=1)

    def engine_functions(self):
        return self.density_functions(gradient_into, potential, hessian_diagonal_into=hessian_diagonal_into)

    def log_density(self, theta):
        return -self.potential(np.asarray(theta)) - self.log_normaliser

    def _marginal_moment(self, power: int) -> float:
        value, _ = integrate.quad(lambda x: x**power * np.exp(-(x**4) / 10.0), -np.inf, np.inf)
        return value / self._marginal_mass

    def exact_moments(self):
        m2, m4 = self._marginal_moment(2), self._marginal_moment(4)
        mean = np.array([0.0, m2 / 4.0 - 1.2])
        second = np.array([m2, 1.0 / 16.0 + m4 / 16.0 - 0.6 * m2 + 1.44])
        return mean, second

    def exact_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n independent draws from exp(−U): θ₁ from the generalised normal exp(−|θ₁|⁴/10)
        (scipy ``gennorm``, β = 4, scale 10^{1/4}), then θ₂ | θ₁ ~ N(θ₁²/4 − 1.2, 1/16)."""
        first = stats.gennorm(beta=4.0, scale=10.0**0.25).rvs(size=n, random_state=rng)
        second = first**2 / 4.0 - 1.2 + 0.25 * rng.standard_normal(n)
        return np.column_stack([first, second])

    def histogram_edges(self):
        """SPEC §3: bins 0.1 × 0.05 on [−3, 3] × [−2, 2]."""
        return np.linspace(-3.0, 3.0, 61), np.linspace(-2.0, 2.0, 81)

    def default_metric(self):
        """SPEC §4.2: G(θ)^{-1/2} = diag((1 + θ₁²)^{-1/2}, 0.25) (our choice)."""
        return RationalMetric(scale=[1.0, 0.25], softening=[1.0, 0.0])


def gradient_into(theta, parameters, out):
    """∇U = (0.4θ₁³ − 2θ₁ρ, 4ρ) with ρ = 4(θ₂ + 1.2) − θ₁², of one chain into ``out`` (powers as products: see the
    double well's)."""
    x, y = theta[0], theta[1]
    residual = 4.0 * (y + 1.2) - x * x
    out[0] = 0.4 * (x * x * x) - 2.0 * x * residual
    out[1] = 4.0 * residual


def potential(theta, parameters):
    """U = x⁴/10 + ½(4(y + 1.2) − x²)² of one chain (x, y)."""
    x, y = theta[0], theta[1]
    residual = 4.0 * (y + 1.2) - x * x
    return (x * x) * (x * x) / 10.0 + 0.5 * (residual * residual)


def hessian_diagonal_into(theta, parameters, out):
    """(∂²U/∂θ₁², ∂²U/∂θ₂²) = (5.2θ₁² − 2ρ, 16), ρ = 4(θ₂ + 1.2) − θ₁², of one chain into ``out``
    (:meth:`Correlated2D.hessian_diagonal`'s)."""
    x, y = theta[0], theta[1]
    out[0] = 5.2 * (x * x) - 2.0 * (4.0 * (y + 1.2) - x * x)
    out[1] = 16.0
