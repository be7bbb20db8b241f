"""examples/exact_models.py's Banana and ConjugateRegression written by hand in the contract's vectorised form (methods
over all the chains, the form a JAX model takes through sgmcmc.targets.jax_model.JaxModel), so that
tests/targets/test_jax_model.py compares a JAX model's samples with a hand-written model's on the same engine path."""

import numpy as np

from examples.exact_models import BANANA_B, REGRESSION_NOISE_SD, REGRESSION_PRIOR_VARIANCE
from examples.exact_models import ConjugateRegression as Rows


class Banana:
    dim = 2

    def grad_log_density(self, theta):
        x, y = theta[:, 0], theta[:, 1]
        residual = y - BANANA_B * x * x
        return np.column_stack([-x + 2.0 * BANANA_B * x * residual, -residual])

    def log_density(self, theta):
        x, y = theta[:, 0], theta[:, 1]
        return -0.5 * x * x - 0.5 * (y - BANANA_B * x * x) ** 2


class ConjugateRegression:
    dim = 3

    def __init__(self, n_data: int = 300, seed: int = 0):
        rows = Rows(n_data, seed).data
        self.inputs, self.responses, self.n_data = rows[:, :-1], rows[:, -1], n_data

    def _residuals(self, theta, index):
        return self.responses[index] - np.einsum("cbj,cj->cb", self.inputs[index], theta)

    def grad_log_likelihood(self, theta, index):
        return (self._residuals(theta, index) / REGRESSION_NOISE_SD**2)[:, :, None] * self.inputs[index]

    def log_likelihood(self, theta, index):
        return -0.5 * self._residuals(theta, index) ** 2 / REGRESSION_NOISE_SD**2

    def grad_log_prior(self, theta):
        return -theta / REGRESSION_PRIOR_VARIANCE

    def log_prior(self, theta):
        return -0.5 * np.sum(theta * theta, axis=1) / REGRESSION_PRIOR_VARIANCE
