"""T3, the lecture's asymmetric well (Zhang, "Scalable MCMC"; SPEC §2):
U(θ) = (θ + 4)(θ + 1)(θ − 1)(θ − 3)/14 + 0.5 = (θ⁴ + θ³ − 13θ² − θ + 12)/14 + 0.5.

Minima θ ≈ −2.935 and 2.224; E θ ≈ −2.148, E θ² ≈ 7.475. The lecture's noise is N(0, 2B/ε) on ∇U
(variance 200 at ε = 0.01, B = 1), set through ``noise_variance``.
"""

from __future__ import annotations

from sgmcmc.targets.one_dimensional import OneDimensionalTarget


class LectureQuartic(OneDimensionalTarget):
    name = "lecture_quartic"
    grid_lower, grid_upper, grid_width = -6.0, 5.0, 0.1

    def potential_1d(self, x):
        return (x**4 + x**3 - 13.0 * x**2 - x + 12.0) / 14.0 + 0.5

    def gradient_1d(self, x):
        return (4.0 * x**3 + 3.0 * x**2 - 26.0 * x - 1.0) / 14.0

    def hessian_diagonal(self, theta):
        """U″(θ) = (12θ² + 6θ − 26)/14 (exact; pSGLD's stationary preconditioner; the engine's is
        :func:`hessian_diagonal_into`)."""
        return (12.0 * theta**2 + 6.0 * theta - 26.0) / 14.0

    def engine_functions(self):
        return self.density_functions(gradient_into, potential, hessian_diagonal_into=hessian_diagonal_into)


def gradient_into(theta, parameters, out):
    """∇U = (4θ³ + 3θ² − 26θ − 1)/14 of one chain into ``out`` (powers as products: see the double well's)."""
    for j in range(theta.shape[0]):
        x = theta[j]
        out[j] = (4.0 * (x * x * x) + 3.0 * (x * x) - 26.0 * x - 1.0) / 14.0


def potential(theta, parameters):
    """U = Σ (θ⁴ + θ³ − 13θ² − θ + 12)/14 + 1/2 of one chain."""
    total = 0.0
    for j in range(theta.shape[0]):
        x = theta[j]
        total += (x * x * x * x + x * x * x - 13.0 * (x * x) - x + 12.0) / 14.0 + 0.5
    return total


def hessian_diagonal_into(theta, parameters, out):
    """U″ = (12θ² + 6θ − 26)/14 of one chain into ``out`` (:meth:`LectureQuartic.hessian_diagonal`'s)."""
    for j in range(theta.shape[0]):
        x = theta[j]
        out[j] = (12.0 * (x * x) + 6.0 * x - 26.0) / 14.0
