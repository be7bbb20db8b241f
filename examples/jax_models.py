"""Two of examples/exact_models.py's models written in JAX, in blackjax's form (sgmcmc/targets/jax_model.py): the
log density, or the log-likelihood of one example and the log prior, and nothing else; every gradient is JAX's.

- :class:`Banana`: a density model, ``logdensity_fn(params)``.
- :class:`ConjugateRegression`: a data model, ``loglikelihood_fn(params, x)`` of one example x = (inputs, response),
  ``logprior_fn(params)`` and ``data = (inputs, responses)``; the same rows as exact_models.ConjugateRegression.
- :class:`RobustRegression`: robust_regression.py's Student-t regression, its data one array of rows (``make
  bench-peers``'s JAX-model row).

    python run.py target=custom target.model=examples/jax_models.py:Banana sampler=sgld
"""

import jax.numpy as jnp
import numpy as np

from exact_models import BANANA_B, REGRESSION_NOISE_SD, REGRESSION_PRIOR_VARIANCE
from exact_models import ConjugateRegression as ByHand
from robust_regression import NU, PRIOR_VARIANCE, SIGMA
from robust_regression import RobustRegression as Rows


class Banana:
    """log π(x, y) = −x²/2 − (y − b x²)²/2 + const, b = 1."""

    initial_position = np.zeros(2)
    parameter_names = ["x", "y"]

    @staticmethod
    def logdensity_fn(params):
        x, y = params
        return -0.5 * x**2 - 0.5 * (y - BANANA_B * x**2) ** 2

    def exact_moments(self):
        return np.array([0.0, BANANA_B]), np.array([1.0, 1.0 + 3.0 * BANANA_B**2])


class ConjugateRegression:
    """y_i = x_iᵀθ + N(0, σ²), θ ~ N(0, s² I), on exact_models.ConjugateRegression's rows."""

    initial_position = np.zeros(3)

    def __init__(self, n_data: int = 300, seed: int = 0):
        self.by_hand = ByHand(n_data, seed)
        self.data = (self.by_hand.data[:, :-1], self.by_hand.data[:, -1])

    @staticmethod
    def loglikelihood_fn(params, example):
        inputs, response = example
        return -0.5 * (response - inputs @ params) ** 2 / REGRESSION_NOISE_SD**2

    @staticmethod
    def logprior_fn(params):
        return -0.5 * jnp.sum(params**2) / REGRESSION_PRIOR_VARIANCE

    def exact_moments(self):
        return self.by_hand.exact_moments()


class RobustRegression:
    """examples/robust_regression.py's Student-t regression (N = 20,000, d = 20) in blackjax's form: the model that
    ``make bench-peers`` runs through blackjax (benchmarks/user_model.py), here through the engine."""

    def __init__(self, n_data: int = 20_000, dim: int = 20, seed: int = 0):
        self.data = Rows(n_data, dim, seed).data  # each row (x_i, y_i)
        self.initial_position = np.zeros(dim)

    @staticmethod
    def loglikelihood_fn(params, row):
        residual = row[-1] - row[:-1] @ params
        return -0.5 * (NU + 1.0) * jnp.log1p(residual * residual / (NU * SIGMA**2))

    @staticmethod
    def logprior_fn(params):
        return -0.5 * jnp.sum(params * params) / PRIOR_VARIANCE
