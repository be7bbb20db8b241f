"""Three models with exact posterior moments, to check a sampler at its defaults on a model it has not seen
(issue 34): each has ``exact_moments()``, so metrics.json scores the run against the truth.

- :class:`SmallScaleGaussian`: a correlated 3-D Gaussian whose standard deviations are 0.002 to 0.05 and whose mean is
  far from 0 (a posterior scale far from 1; a density model).
- :class:`Banana`: the 2-D banana x ~ N(0, 1), y | x ~ N(b x², 1) (non-Gaussian; a density model). E x = 0, E x² = 1,
  E y = b, E y² = 1 + 3b².
- :class:`ConjugateRegression`: Bayesian linear regression with a known noise variance and a Gaussian prior, its
  posterior Gaussian in closed form; N = 300 rows and a minibatch of 32 (a data model on rows whose minibatch noise
  swamps its posterior at step sizes that look small: V/N² ≈ 1/n per example against a posterior variance ≈ 1/N).

    python run.py target=custom target.model=examples/exact_models.py:Banana sampler=sgld
"""

import numpy as np

BANANA_B = 1.0
REGRESSION_NOISE_SD, REGRESSION_PRIOR_VARIANCE = 1.0, 100.0
# the small-scale Gaussian's mean, standard deviations and correlations: module constants, which the compiled blocks
# take into its staticmethods (a class attribute read through the class would not compile)
GAUSSIAN_MEAN = np.array([3.0, -2.0, 0.5])
GAUSSIAN_SDS = np.array([0.002, 0.01, 0.05])
GAUSSIAN_CORRELATION = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]])
GAUSSIAN_PRECISION = np.linalg.inv(np.outer(GAUSSIAN_SDS, GAUSSIAN_SDS) * GAUSSIAN_CORRELATION)


class SmallScaleGaussian:
    """N(μ, Σ) with μ = (3, −2, 0.5) and Σ = diag(s) R diag(s), s = (0.002, 0.01, 0.05), correlations 0.6, −0.3, 0.2."""

    dim = 3
    parameter_names = ["a", "b", "c"]

    @staticmethod
    def grad_log_density(theta):
        return -(theta - GAUSSIAN_MEAN) @ GAUSSIAN_PRECISION

    @staticmethod
    def log_density(theta):
        centred = theta - GAUSSIAN_MEAN
        return -0.5 * np.sum((centred @ GAUSSIAN_PRECISION) * centred, axis=1)

    def exact_moments(self):
        return GAUSSIAN_MEAN.copy(), GAUSSIAN_MEAN**2 + GAUSSIAN_SDS**2


class Banana:
    """log π(x, y) = −x²/2 − (y − b x²)²/2 + const, b = 1."""

    dim = 2
    parameter_names = ["x", "y"]

    @staticmethod
    def grad_log_density(theta):
        x, y = theta[:, 0], theta[:, 1]
        residual = y - BANANA_B * x * x
        out = np.empty_like(theta)
        out[:, 0] = -x + 2.0 * BANANA_B * x * residual
        out[:, 1] = -residual
        return out

    @staticmethod
    def log_density(theta):
        x, y = theta[:, 0], theta[:, 1]
        return -0.5 * x * x - 0.5 * (y - BANANA_B * x * x) ** 2

    def exact_moments(self):
        return np.array([0.0, BANANA_B]), np.array([1.0, 1.0 + 3.0 * BANANA_B**2])


class ConjugateRegression:
    """y_i = x_iᵀθ + N(0, σ²), x_i ~ N(0, I₃), θ* = (1, −0.5, 2), θ ~ N(0, s² I): posterior N(m, S) with
    S = (XᵀX/σ² + I/s²)⁻¹, m = S Xᵀy/σ². Rows are (x_i, y_i)."""

    def __init__(self, n_data: int = 300, seed: int = 0):
        rng = np.random.default_rng(seed)
        inputs = rng.standard_normal((n_data, 3))
        responses = inputs @ np.array([1.0, -0.5, 2.0]) + REGRESSION_NOISE_SD * rng.standard_normal(n_data)
        self.data = np.column_stack([inputs, responses])
        self.n_data, self.dim = n_data, 3
        precision = inputs.T @ inputs / REGRESSION_NOISE_SD**2 + np.eye(3) / REGRESSION_PRIOR_VARIANCE
        self.covariance = np.linalg.inv(precision)
        self.mean = self.covariance @ inputs.T @ responses / REGRESSION_NOISE_SD**2

    @staticmethod
    def row_gradients(theta, rows):
        inputs = np.ascontiguousarray(rows[:, :-1])
        residuals = rows[:, -1] - inputs @ theta
        return (residuals / REGRESSION_NOISE_SD**2).reshape(-1, 1) * inputs

    @staticmethod
    def row_log_likelihoods(theta, rows):
        residuals = rows[:, -1] - np.ascontiguousarray(rows[:, :-1]) @ theta
        return -0.5 * residuals * residuals / REGRESSION_NOISE_SD**2

    @staticmethod
    def prior_gradient(theta):
        return -theta / REGRESSION_PRIOR_VARIANCE

    @staticmethod
    def prior_log_density(theta):
        return -0.5 * np.sum(theta * theta) / REGRESSION_PRIOR_VARIANCE

    def exact_moments(self):
        return self.mean.copy(), self.mean**2 + np.diag(self.covariance)
