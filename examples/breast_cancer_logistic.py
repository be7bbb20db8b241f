"""Bayesian logistic regression on scikit-learn's breast-cancer data: an example of your own model for sgmcmc.

569 tumours with 30 features (scikit-learn's ``load_breast_cancer``, shipped with it: no download). The features are
standardised, a column of ones gives the intercept, and the label y is +1 for benign, −1 for malignant:

    p(y_i | x_i, θ) = σ(y_i θᵀx_i),   θ ~ N(0, s² I),   s² = ``prior_variance``.

It is a *data model* (it has ``n_data``): it gives per-example log-likelihoods and their gradients, and sgmcmc draws
the minibatches. The contract is in ``sgmcmc/targets/user.py``; run it with

    python run.py target=custom target.model=examples/breast_cancer_logistic.py:BreastCancerLogistic \
        sampler=sghmc sampler.step_size=0.002 sampler.noise_estimate=zero run.n_chains=8 run.n_steps=20000

It runs on the engine's blocks, its methods (which take every chain at once) answering through the replay table
(sgmcmc/engine/replay.py); a model written on rows, as ``examples/robust_regression.py``, is compiled into them.
"""

import numpy as np
from scipy.special import expit, log_expit
from sklearn.datasets import load_breast_cancer
from sklearn.preprocessing import StandardScaler


class BreastCancerLogistic:
    def __init__(self, prior_variance: float = 1.0):
        data = load_breast_cancer()
        features = StandardScaler().fit_transform(data.data)
        self.features = np.hstack([np.ones((features.shape[0], 1)), features])  # (N, 31): intercept first
        self.labels = np.where(data.target == 1, 1.0, -1.0)  # benign +1, malignant −1
        self.signed = self.labels[:, None] * self.features  # the rows y_i x_i
        self.prior_variance = float(prior_variance)
        self.n_data, self.dim = self.features.shape
        self.parameter_names = ["intercept", *data.feature_names]

    # θ: (chains, dim); index: (chains, examples) integers
    def log_likelihood(self, theta, index):
        """log σ(y_i θᵀx_i) of the examples ``index``, shape (chains, examples)."""
        return log_expit(np.einsum("cbd,cd->cb", self.signed[index], theta))

    def grad_log_likelihood(self, theta, index):
        """σ(−y_i θᵀx_i) y_i x_i, shape (chains, examples, dim)."""
        signed = self.signed[index]
        return expit(-np.einsum("cbd,cd->cb", signed, theta))[:, :, None] * signed

    def log_prior(self, theta):
        return -0.5 * np.sum(theta**2, axis=1) / self.prior_variance - 0.5 * self.dim * np.log(2 * np.pi * self.prior_variance)

    def grad_log_prior(self, theta):
        return -theta / self.prior_variance

    def initial_position(self, n_chains, rng):
        return 0.1 * rng.standard_normal((n_chains, self.dim))
