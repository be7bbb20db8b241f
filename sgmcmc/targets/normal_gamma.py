"""T7, the Normal-Gamma posterior of Shang et al. (2015) §4.1 (= Ding et al.'s setup; SPEC §2 T7, §4.8).

Data x_i ~ N(0, 1) iid, i = 1..N (N = 100), drawn once as ``numpy.random.default_rng(data_seed).standard_normal(N)``.
θ = (µ, γ); likelihood N(x | µ, γ⁻¹); prior N(µ | 0, γ⁻¹)·Gamma(γ | 1, 1) (shape, rate). Up to a constant

    U(θ) = −((N + 1)/2) log γ + γ + (γ/2)(µ² + Σ_i (x_i − µ)²),                 γ > 0 (+∞ for γ ≤ 0),

per datum g(θ; x) = ∇_θ log p(x | θ) = (γ(x − µ), 1/(2γ) − (x − µ)²/2), and [mine]

    log p(θ) = ½ log γ − γµ²/2 − γ + const  ⇒  ∇log p(θ) = (−γµ, 1/(2γ) − 1 − µ²/2),

so ∇U = ((N + 1)γµ − γΣx_i, 1 − (N + 1)/(2γ) + (µ² + Σ(x_i − µ)²)/2) and the minibatch ∇Ũ is SPEC T7's
(with n = 10 drawn without replacement, SPEC §4.8; see :mod:`sgmcmc.targets.data`).

Exact posterior (conjugacy): Normal-Gamma with κ_N = N + 1, µ_N = Nx̄/(N + 1), α_N = 1 + N/2,
β_N = 1 + ½Σ(x_i − x̄)² + Nx̄²/(2(N + 1)), i.e. γ ~ Gamma(α_N, rate β_N), µ | γ ~ N(µ_N, 1/(κ_Nγ)); marginally
µ ~ Student-t(2α_N, loc µ_N, scale √(β_N/(α_Nκ_N))).

The engine's compiled blocks run it as a data model on rows (:meth:`NormalGamma.engine_functions`): the per-datum
g and ∇log p of one chain (:func:`row_gradients`, :func:`prior_gradient`) and the reflection of SPEC §4.8
(:func:`reflect_precision`), plain numpy functions that the engine compiles; and U's terms for a Metropolis–Hastings
test, log p(x_i | θ) = ½ log γ − γ(x_i − µ)²/2 and log p(θ) above (:func:`row_log_likelihoods`,
:func:`prior_log_density`; −∞ where γ ≤ 0), each less its −½ log 2π, as U drops them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from scipy import special, stats

from sgmcmc.targets.data import DataTarget


def row_gradients(theta, rows):
    """g(θ; x_i) = (γ(x_i − µ), 1/(2γ) − (x_i − µ)²/2) of one chain's θ = (µ, γ) (2,) on the rows x_i (m, 1):
    (m, 2)."""
    out = np.empty((rows.shape[0], 2))
    for i in range(rows.shape[0]):
        residual = rows[i, 0] - theta[0]
        out[i, 0] = theta[1] * residual
        out[i, 1] = 0.5 / theta[1] - 0.5 * residual**2
    return out


def prior_gradient(theta):
    """∇log[N(µ | 0, γ⁻¹) Gamma(γ | 1, 1)] = (−γµ, 1/(2γ) − 1 − µ²/2) of one chain's θ = (µ, γ): (2,)."""
    out = np.empty(2)
    out[0] = -theta[1] * theta[0]
    out[1] = 0.5 / theta[1] - 1.0 - 0.5 * theta[0] ** 2
    return out


def row_log_likelihoods(theta, rows):
    """log N(x_i | µ, γ⁻¹) + ½ log 2π = ½ log γ − γ(x_i − µ)²/2 (m,) of one chain's θ = (µ, γ) (2,) on the rows x_i
    (m, 1) (the constant −½ log 2π of each row dropped, as :meth:`NormalGamma.potential` drops it); −∞ where γ ≤ 0,
    outside the support."""
    out = np.empty(rows.shape[0])
    if not theta[1] > 0.0:
        out[:] = -np.inf
        return out
    half_log = 0.5 * np.log(theta[1])
    for i in range(rows.shape[0]):
        residual = rows[i, 0] - theta[0]
        out[i] = half_log - 0.5 * theta[1] * residual * residual
    return out


def prior_log_density(theta):
    """log[N(µ | 0, γ⁻¹) Gamma(γ | 1, 1)] + ½ log 2π = ½ log γ − γµ²/2 − γ of one chain's θ = (µ, γ), a float (the
    constant −½ log 2π dropped, as :meth:`NormalGamma.potential` drops it); −∞ where γ ≤ 0, outside the support."""
    if not theta[1] > 0.0:
        return -np.inf
    return 0.5 * np.log(theta[1]) - 0.5 * theta[1] * theta[0] ** 2 - theta[1]


def reflect_precision(theta, momentum):
    """SPEC §4.8 on one chain: where γ ≤ 0 set γ ← −γ and, where the sampler has a momentum (r not empty), r_γ ← −r_γ;
    returns the number of coordinates reflected (0 or 1). θ (2,) and r are changed in place."""
    if not theta[1] <= 0.0:
        return 0
    theta[1] = -theta[1]
    if momentum.shape[0] > 0:
        momentum[1] = -momentum[1]
    return 1


class NormalGamma(DataTarget):
    """The Normal-Gamma posterior in θ = (µ, γ) with minibatch gradients (SPEC T7).

    Parameters
    ----------
    n_data : int
        N (default 100, SPEC T7), >= 2.
    batch_size : int
        n (default 10), 1 <= n <= N.
    data_seed : int
        Seed of the data draw (default 0).
    initial_position : sequence of two floats
        θ₀ = (µ₀, γ₀) of every chain (default (0, 1), SPEC §4.8); γ₀ > 0.
    """

    name = "normal_gamma"
    dim = 2
    has_exact_density = True

    def __init__(self, n_data: int = 100, batch_size: int = 10, data_seed: int = 0,
                 initial_position: Sequence[float] = (0.0, 1.0)):
        super().__init__(n_data, batch_size)
        centre = np.asarray(initial_position, dtype=float)
        if centre.shape != (2,) or not np.all(np.isfinite(centre)) or centre[1] <= 0:
            raise ValueError(f"initial_position must be two finite numbers (µ₀, γ₀) with γ₀ > 0; "
                             f"got {initial_position!r}")
        self.data_seed = int(data_seed)
        self.initial_centre = centre
        self.data = np.random.default_rng(self.data_seed).standard_normal(self.n_data)
        self._sum = float(self.data.sum())
        mean = self._sum / self.n_data
        self._scatter = float(np.sum((self.data - mean) ** 2))  # Σ(x_i − x̄)²
        n = self.n_data
        self._kappa = n + 1.0
        self._mu = n * mean / (n + 1.0)
        self._alpha = 1.0 + n / 2.0
        self._beta = 1.0 + 0.5 * self._scatter + n * mean**2 / (2.0 * (n + 1.0))

    # -- potential and gradients ---------------------------------------------------------------------
    def _squares(self, mu: np.ndarray) -> np.ndarray:
        """Σ_i (x_i − µ)² = Σ(x_i − x̄)² + N(x̄ − µ)²."""
        return self._scatter + self.n_data * (self._sum / self.n_data - mu) ** 2

    def potential(self, theta):
        """U(θ) = −((N+1)/2) log γ + γ + (γ/2)(µ² + Σ(x_i − µ)²), shape (c,); +∞ where γ ≤ 0 (no warnings)."""
        theta = np.asarray(theta, dtype=float)
        mu, gamma = theta[:, 0], theta[:, 1]
        positive = gamma > 0
        safe = np.where(positive, gamma, 1.0)
        value = -0.5 * (self.n_data + 1) * np.log(safe) + safe + 0.5 * safe * (mu**2 + self._squares(mu))
        return np.where(positive, value, np.inf)

    def gradient(self, theta):
        """Exact ∇U(θ) in closed form (module docstring), shape (c, 2); defined for γ > 0."""
        theta = np.asarray(theta, dtype=float)
        mu, gamma = theta[:, 0], theta[:, 1]
        n = self.n_data
        return np.stack([(n + 1) * gamma * mu - gamma * self._sum,
                         1.0 - (n + 1) / (2.0 * gamma) + 0.5 * (mu**2 + self._squares(mu))], axis=1)

    def log_likelihood_gradients(self, theta, index):
        """g(θ; x_i) = (γ(x_i − µ), 1/(2γ) − (x_i − µ)²/2) for θ (c, 2), index (c, b); shape (c, b, 2)."""
        theta = np.asarray(theta, dtype=float)
        mu, gamma = theta[:, :1], theta[:, 1:2]
        residual = self.data[index] - mu
        return np.stack([gamma * residual, 0.5 / gamma - 0.5 * residual**2], axis=2)

    def log_prior_gradient(self, theta):
        """∇log[N(µ | 0, γ⁻¹) Gamma(γ | 1, 1)] = (−γµ, 1/(2γ) − 1 − µ²/2), shape (c, 2)."""
        theta = np.asarray(theta, dtype=float)
        mu, gamma = theta[:, 0], theta[:, 1]
        return np.stack([-gamma * mu, 0.5 / gamma - 1.0 - 0.5 * mu**2], axis=1)

    def reflect(self, theta):
        """SPEC §4.8: where γ ≤ 0 set γ ← −γ. Returns (new θ, boolean mask (c, 2) of the reflected coordinates)
        as ``Target.reflect``; the reflections per chain are ``mask.sum(axis=1)``. The input is not modified."""
        theta = np.array(theta, dtype=float)
        mask = np.zeros(theta.shape, dtype=bool)
        mask[:, 1] = theta[:, 1] <= 0
        theta[mask] = -theta[mask]
        return theta, mask

    def engine_functions(self) -> dict:
        """The data model on rows the engine runs (:meth:`~sgmcmc.targets.base.Target.engine_functions`): the x_i as
        rows (N, 1), :func:`row_gradients`, :func:`prior_gradient`, the reflection :func:`reflect_precision`, and U's
        terms :func:`row_log_likelihoods` and :func:`prior_log_density` (−∞ where γ ≤ 0: U = +∞ there)."""
        return {"row_gradients": row_gradients, "prior_gradient": prior_gradient,
                "row_log_likelihoods": row_log_likelihoods, "prior_log_density": prior_log_density,
                "data": np.ascontiguousarray(self.data.reshape(self.n_data, 1)), "n_data": self.n_data,
                "reflect": reflect_precision}

    def initial_position(self, n_chains, rng):
        """The configured θ₀ (default (0, 1), SPEC §4.8) for every chain; draws nothing from ``rng``."""
        return np.tile(self.initial_centre, (int(n_chains), 1))

    # -- exact posterior -------------------------------------------------------------------------------
    def posterior_parameters(self) -> dict:
        """{"kappa_N", "mu_N", "alpha_N", "beta_N"} of the Normal-Gamma posterior (SPEC T7)."""
        return {"kappa_N": self._kappa, "mu_N": self._mu, "alpha_N": self._alpha, "beta_N": self._beta}

    def log_density(self, theta):
        """Normalised log NG(µ, γ | µ_N, κ_N, α_N, β_N), shape (c,); −∞ where γ ≤ 0 (no warnings):

        α log β − log Γ(α) + (α − ½) log γ − βγ + ½ log(κ/(2π)) − κγ(µ − µ_N)²/2.
        """
        theta = np.asarray(theta, dtype=float)
        mu, gamma = theta[:, 0], theta[:, 1]
        positive = gamma > 0
        safe = np.where(positive, gamma, 1.0)
        kappa, mu_n, alpha, beta = self._kappa, self._mu, self._alpha, self._beta
        value = (alpha * np.log(beta) - special.gammaln(alpha) + (alpha - 0.5) * np.log(safe) - beta * safe
                 + 0.5 * np.log(kappa / (2.0 * np.pi)) - 0.5 * kappa * safe * (mu - mu_n) ** 2)
        return np.where(positive, value, -np.inf)

    def marginals(self):
        """(p(µ | x), p(γ | x)) as scipy frozen distributions: Student-t(2α_N, µ_N, √(β_N/(α_Nκ_N))) and
        Gamma(α_N, scale 1/β_N)."""
        return (stats.t(df=2.0 * self._alpha, loc=self._mu, scale=np.sqrt(self._beta / (self._alpha * self._kappa))),
                stats.gamma(a=self._alpha, scale=1.0 / self._beta))

    def exact_moments(self):
        """(E θ, E θ²) per coordinate, from :meth:`marginals`."""
        mean = np.array([marginal.mean() for marginal in self.marginals()])
        variance = np.array([marginal.var() for marginal in self.marginals()])
        return mean, variance + mean**2

    def exact_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n independent posterior draws, shape (n, 2): first ``rng.gamma(α_N, 1/β_N, n)`` for γ, then
        µ = µ_N + ``rng.standard_normal(n)``/√(κ_Nγ)."""
        gamma = rng.gamma(self._alpha, 1.0 / self._beta, size=int(n))
        mu = self._mu + rng.standard_normal(int(n)) / np.sqrt(self._kappa * gamma)
        return np.column_stack([mu, gamma])

    def histogram_edges(self):
        """SPEC §3 (E4): 100 bins for µ on [−0.5, 0.5] and for γ on [0.5, 1.5]."""
        return np.linspace(-0.5, 0.5, 101), np.linspace(0.5, 1.5, 101)
