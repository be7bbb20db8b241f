"""The 25-Gaussian mixture of Zhang et al. (2020, Fig. 2), as the authors' ``experiments/mog25.m`` defines it:

π(θ) = Σ_k w N(θ; µ_k, σ²I),  µ_k = (2i, 2j) for i, j ∈ {−2, …, 2},  w = 1/25 (their p = 0.04),  σ² = 0.03,

U = −log π (normalised), ∇U(θ) = Σ_k ρ_k(θ)(θ − µ_k)/σ² with ρ_k the responsibilities, and the authors' gradient
noise ∇Ũ = ∇U + N(0, V I) with V = 1 (their ``gradUNoise``: ``randn(2,1)`` added to the exact gradient).

Starts (``start``): ``uniform``, θ₀ ~ U([−a, a]²) per chain (the authors' ``x0 = -10 + 20 rand(2,1)``, a = 10); or
``modes`` (the default run's), chain i at µ_(i mod 25). Modes 2 apart with σ = 0.17 are separated by a barrier of about
1/(2σ²) ≈ 17 nats, which no run at the default settings crosses; so the default run, whose pooled chains are held to
the KL bound, starts an equal number of chains in each mode (n_chains a multiple of 25) and checks the sampling
within the modes, while the experiment (``experiments/csgmcmc_mixture.py``) starts as the authors did and counts the
modes found. Exact: E θ = 0, E θ_i² = σ² + (4² + 2² + 0 + 2² + 4²)/5 = 8.03. The engine's blocks take
:func:`gradient_into` and :func:`potential` (one chain each, with the centres and σ² as their parameters).
"""

from __future__ import annotations

import numba
import numpy as np

from sgmcmc.targets.base import SyntheticTarget

VARIANCE = 0.03  # σ², the authors' rho
SPACING = 2.0
CENTRES = np.array([[SPACING * i, SPACING * j] for i in range(-2, 3) for j in range(-2, 3)], dtype=float)  # (25, 2)
STARTS = ("modes", "uniform")


class GaussianMixture25(SyntheticTarget):
    name = "gaussian_mixture_25"
    dim = 2
    centres = CENTRES
    variance_per_mode = VARIANCE

    def __init__(self, noise_variance=1.0, start: str = "modes", initial_range: float = 10.0):
        super().__init__(noise_variance=noise_variance, initial_spread=0.0)
        if start not in STARTS:
            raise ValueError(f"start must be one of {', '.join(STARTS)}; got {start!r}")
        self.start, self.initial_range = start, float(initial_range)

    def _log_components(self, theta: np.ndarray) -> np.ndarray:
        """log(w N(θ; µ_k, σ²I)) per chain and mode, (n, 25)."""
        offsets = np.asarray(theta, dtype=float)[:, None, :] - CENTRES[None]
        squared = np.sum(offsets**2, axis=2)
        return -np.log(len(CENTRES)) - np.log(2.0 * np.pi * VARIANCE) - 0.5 * squared / VARIANCE

    def log_density(self, theta):
        """log Σ_k w N(θ; µ_k, σ²I) (log-sum-exp in numpy: scipy's costs 0.5 ms a call, which quadrature feels)."""
        log_components = self._log_components(theta)
        largest = log_components.max(axis=1)
        return largest + np.log(np.exp(log_components - largest[:, None]).sum(axis=1))

    def potential(self, theta):
        return -self.log_density(theta)

    def gradient(self, theta):
        """∇U = Σ_k ρ_k (θ − µ_k)/σ², ρ_k = w N_k / Σ_j w N_j (the authors' ``sum_inv(x) * func_grad(x)``)."""
        theta = np.asarray(theta, dtype=float)
        log_components = self._log_components(theta)
        log_components -= log_components.max(axis=1, keepdims=True)
        responsibilities = np.exp(log_components)
        responsibilities /= responsibilities.sum(axis=1, keepdims=True)
        return (theta - responsibilities @ CENTRES) / VARIANCE

    def hessian_diagonal(self, theta):
        """∂²U/∂θ_i² = (1 − Var_ρ(µ_{·i})/σ²)/σ², the responsibilities' variance of the centres' i-th coordinate (pSGLD's
        stationary preconditioner)."""
        log_components = self._log_components(theta)
        log_components -= log_components.max(axis=1, keepdims=True)
        responsibilities = np.exp(log_components)
        responsibilities /= responsibilities.sum(axis=1, keepdims=True)
        spread = responsibilities @ CENTRES**2 - (responsibilities @ CENTRES) ** 2
        return (1.0 - spread / VARIANCE) / VARIANCE

    def exact_moments(self):
        return np.zeros(2), np.full(2, VARIANCE + np.mean(CENTRES[:, 0] ** 2))

    def exact_sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """n independent draws: a mode uniformly, then N(µ_k, σ²I)."""
        modes = rng.integers(len(CENTRES), size=n)
        return CENTRES[modes] + np.sqrt(VARIANCE) * rng.standard_normal((n, 2))

    def histogram_edges(self):
        """Bins 0.2 × 0.2 on [−6, 6]² (the modes' σ = 0.17; all but 10⁻⁹ of the mass inside): about 25 × 25 bins
        hold the mass, so 10⁶ correlated kept samples resolve it, and twice the temperature is far past the KL bound
        (tests/targets/test_gaussian_mixture_25.py)."""
        edges = np.linspace(-6.0, 6.0, 61)
        return edges, edges

    def engine_functions(self):
        return self.density_functions(gradient_into, potential, np.concatenate([[VARIANCE], CENTRES.ravel()]),
                                      hessian_diagonal_into)

    def initial_position(self, n_chains, rng):
        if self.start == "uniform":
            return rng.uniform(-self.initial_range, self.initial_range, size=(n_chains, 2))
        return CENTRES[np.arange(n_chains) % len(CENTRES)].copy()


@numba.njit(cache=True)  # called from the functions the engine compiles: a compiled function of its own
def _log_components_into(theta, parameters, out):
    """log N(θ; µ_k, σ²I) − log N(µ_k; µ_k, σ²I) = −|θ − µ_k|²/(2σ²) of one chain into ``out`` (25,), returning its
    largest; ``parameters`` = (σ², µ_1, …, µ_25 row-major). The common factor w/(2πσ²) cancels in ρ_k and is added back
    in :func:`potential`."""
    variance, largest = parameters[0], -np.inf
    for k in range(out.shape[0]):
        first, second = theta[0] - parameters[1 + 2 * k], theta[1] - parameters[2 + 2 * k]
        out[k] = -0.5 * (first * first + second * second) / variance
        largest = max(largest, out[k])
    return largest


def gradient_into(theta, parameters, out):
    """∇U = Σ_k ρ_k (θ − µ_k)/σ² of one chain into ``out`` (:meth:`GaussianMixture25.gradient`'s, one chain)."""
    log_components = np.empty((parameters.shape[0] - 1) // 2)
    largest = _log_components_into(theta, parameters, log_components)
    total, first, second = 0.0, 0.0, 0.0
    for k in range(log_components.shape[0]):
        weight = np.exp(log_components[k] - largest)
        total += weight
        first += weight * parameters[1 + 2 * k]
        second += weight * parameters[2 + 2 * k]
    out[0] = (theta[0] - first / total) / parameters[0]
    out[1] = (theta[1] - second / total) / parameters[0]


def hessian_diagonal_into(theta, parameters, out):
    """∂²U/∂θ_i² = (1 − Var_ρ(µ_{·i})/σ²)/σ² of one chain into ``out`` (:meth:`GaussianMixture25.hessian_diagonal`'s)."""
    log_components = np.empty((parameters.shape[0] - 1) // 2)
    largest = _log_components_into(theta, parameters, log_components)
    total, first, second, first_square, second_square = 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(log_components.shape[0]):
        weight = np.exp(log_components[k] - largest)
        total += weight
        first += weight * parameters[1 + 2 * k]
        second += weight * parameters[2 + 2 * k]
        first_square += weight * parameters[1 + 2 * k] ** 2
        second_square += weight * parameters[2 + 2 * k] ** 2
    out[0] = (1.0 - (first_square / total - (first / total) ** 2) / parameters[0]) / parameters[0]
    out[1] = (1.0 - (second_square / total - (second / total) ** 2) / parameters[0]) / parameters[0]


def potential(theta, parameters):
    """U = −log Σ_k w N(θ; µ_k, σ²I) of one chain (:meth:`GaussianMixture25.potential`'s)."""
    log_components = np.empty((parameters.shape[0] - 1) // 2)
    largest = _log_components_into(theta, parameters, log_components)
    total = 0.0
    for k in range(log_components.shape[0]):
        total += np.exp(log_components[k] - largest)
    return -(largest + np.log(total) - np.log(log_components.shape[0]) - np.log(2.0 * np.pi * parameters[0]))
