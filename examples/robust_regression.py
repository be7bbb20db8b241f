"""Robust (Student-t) linear regression: an example of a data model on rows, which the compiled blocks run with no
formula to name (the contract: ``sgmcmc/targets/user.py``, "A data model on rows").

N examples (x_i, y_i) with x_i ~ N(0, I_d) and y_i = x_iᵀθ* + σ t_ν, drawn from ``seed``:

    p(y_i | x_i, θ) ∝ (1 + (y_i − x_iᵀθ)²/(νσ²))^(−(ν+1)/2),   θ ~ N(0, s² I),   ν = 4, σ = 1, s = 10.

Each row of ``data`` is (x_i, y_i). The functions take one chain's θ (dim,) and the rows of a minibatch, in plain
numpy that numba compiles. Run it with

    python run.py target=custom target.model=examples/robust_regression.py:RobustRegression \\
        target.batch_size=100 sampler=sgld sampler.step_size=1e-5 sampler.noise_estimate=zero run.n_steps=20000
"""

import numpy as np

NU, SIGMA, PRIOR_VARIANCE = 4.0, 1.0, 100.0


class RobustRegression:
    def __init__(self, n_data: int = 20_000, dim: int = 20, seed: int = 0):
        rng = np.random.default_rng(seed)
        inputs = rng.standard_normal((n_data, dim))
        self.truth = rng.standard_normal(dim)
        responses = inputs @ self.truth + SIGMA * rng.standard_t(NU, n_data)
        self.data = np.column_stack([inputs, responses])
        self.n_data, self.dim = n_data, dim

    @staticmethod
    def row_gradients(theta, rows):
        """∇θ log p(y_i | x_i, θ) = (ν + 1) r_i x_i / (νσ² + r_i²), r_i = y_i − x_iᵀθ, for each row: (m, dim)."""
        inputs = np.ascontiguousarray(rows[:, :-1])
        residuals = rows[:, -1] - inputs @ theta
        weights = (NU + 1.0) * residuals / (NU * SIGMA**2 + residuals * residuals)
        return weights.reshape(-1, 1) * inputs

    @staticmethod
    def row_log_likelihoods(theta, rows):
        """log p(y_i | x_i, θ) up to a constant, for each row: (m,)."""
        residuals = rows[:, -1] - np.ascontiguousarray(rows[:, :-1]) @ theta
        return -0.5 * (NU + 1.0) * np.log1p(residuals * residuals / (NU * SIGMA**2))

    @staticmethod
    def prior_gradient(theta):
        return -theta / PRIOR_VARIANCE

    @staticmethod
    def prior_log_density(theta):
        return -0.5 * np.sum(theta * theta) / PRIOR_VARIANCE
