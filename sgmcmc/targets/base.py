"""What a target is: a potential U(θ), its exact and stochastic gradients and, where known, its
exact normalised density, plus what the metrics need (histogram grid, exact moments).

All functions take θ of shape (n_chains, dim).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional, Sequence

import numpy as np

from sgmcmc.geometry import DiagonalMetric, IdentityMetric


class Target(ABC):
    """A distribution π(θ) ∝ exp(−U(θ)) with a stochastic gradient ∇Ũ = ∇U + noise."""

    name: str = "target"
    dim: int = 1

    @abstractmethod
    def potential(self, theta: np.ndarray) -> np.ndarray:
        """U(θ), shape (n,)."""

    @abstractmethod
    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Exact ∇U(θ), shape (n, dim)."""

    @abstractmethod
    def stochastic_gradient(self, theta: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """∇Ũ(θ): an unbiased noisy estimate of ∇U(θ), shape (n, dim)."""

    def noise_covariance(self, theta: np.ndarray) -> Optional[np.ndarray]:
        """The covariance V(θ) of ∇Ũ − ∇U where known: (dim, dim) or (n, dim, dim); None if unknown."""
        return None

    def hessian_diagonal(self, theta: np.ndarray) -> np.ndarray:
        """∂²U/∂θ_i² at θ, shape (n, dim), for samplers whose diffusion depends on ∇U(θ) (pSGLD's stationary
        preconditioner and its Γ). Default: central differences of the exact :meth:`gradient` (2·dim calls, spacing
        1e-4·(1 + |θ_i|)); formula targets override it with the exact value."""
        theta = np.asarray(theta, dtype=float)
        out = np.zeros_like(theta)
        for i in range(theta.shape[1]):
            shift = np.zeros_like(theta)
            shift[:, i] = 1e-4 * (1.0 + np.abs(theta[:, i]))
            out[:, i] = (self.gradient(theta + shift)[:, i] - self.gradient(theta - shift)[:, i]) / (2.0 * shift[:, i])
        return out

    # Whether ``potential`` and ``gradient`` are available: a target whose U(θ) or ∇U(θ) over the whole data set cannot
    # be computed (LDA's needs the marginal likelihood of the corpus) says so, and the samplers that need them (HMC's
    # exact gradient, every Metropolis test) refuse it in one line.
    has_potential: bool = True
    has_exact_gradient: bool = True
    # Whether the support is bounded (``reflect`` maps θ back into it after each step; LDA's θ > 0).
    bounded: bool = False

    # What the metrics need; targets without an exact density leave these as they are.
    has_exact_density: bool = False
    # exact_moments() known without an exact density (a user model's, or its reference samples'): the metrics are then
    # the errors of E θ and E θ² only
    has_exact_moments: bool = False

    def log_density(self, theta: np.ndarray) -> np.ndarray:
        """Exact normalised log π(θ), shape (n,)."""
        raise TypeError(f"target {self.name!r} has no exact density")

    def exact_moments(self) -> tuple[np.ndarray, np.ndarray]:
        """(E θ, E θ²) per coordinate."""
        raise TypeError(f"target {self.name!r} has no exact moments")

    def histogram_edges(self):
        """Bin edges of the fixed KL grid (SPEC §3): a 1D array, or a tuple of two for 2D targets."""
        raise TypeError(f"target {self.name!r} has no histogram grid")

    def default_metric(self) -> DiagonalMetric:
        """G(θ) used by the Riemannian samplers unless the config gives one (SPEC §4.2)."""
        return IdentityMetric()

    def initial_position(self, n_chains: int, rng: np.random.Generator) -> np.ndarray:
        """θ₀ for every chain, shape (n_chains, dim)."""
        return np.zeros((n_chains, self.dim))

    def reflect(self, theta: np.ndarray) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """Map θ back into the support after a step: (θ, boolean mask (n, dim) of reflected coordinates),
        or (θ, None) for targets on all of R^d (the default)."""
        return theta, None

    def engine_functions(self) -> Optional[dict]:
        """What this target hands the engine's compiled blocks (:func:`sgmcmc.engine.estimators.source_of`): its
        functions, which the compiler takes (plain numpy on arrays, or ``numba.njit``), and their arrays; None (the
        default): the engine cannot run it (only the ``generic`` integrator, the recipe's step, can). A density model gives ``gradient_into(θ, parameters, out)`` (∇U of one
        chain written into ``out``), ``parameters``, and its gradient noise's factor ``noise_factor`` L and
        covariance ``noise_covariance`` V = LLᵀ (:meth:`SyntheticTarget.density_functions`); a data model on rows
        ``row_gradients(θ, rows)`` or ``row_gradient_sums(θ, rows[, with_scatter[, hyperparameters]])`` or both,
        ``prior_gradient(θ)``, ``data`` and ``n_data``; a model whose prior (or sums) take each chain's
        hyperparameters, ``prior_gradient(θ, hyperparameters)`` and ``estimator_state`` / ``estimator_size`` (the BNN,
        BPMF); optionally ``row_log_likelihoods(θ, rows)`` and ``prior_log_density(θ[, hyperparameters])`` (U for a
        Metropolis–Hastings test), ``"replacement": True`` (minibatches drawn with replacement, Welling–Teh's) and
        ``"minibatch_sums": False`` (the sums serve the exact ∇U alone, logistic regression's).

        A target whose support has a boundary (its own :meth:`reflect`) adds ``reflect(θ, r) -> count``, the same
        reflection on one chain (:class:`sgmcmc.engine.driver.Blocks`' ``reflect``): it maps θ (d,) back into the
        support in place, negates r's entries of the coordinates it reflected (r is (d,), or empty (0,) for a sampler
        without momentum) and returns how many it reflected; the blocks call it right after each move of θ and count its reflections per step (Normal-Gamma's γ ≤ 0 → −γ). Without it the blocks do
        not reflect, so such a target must hand over either its reflection or nothing."""
        return None

    # -- what some targets add: declared here with the value that means "none", overridden where a target has it --
    n_data: Optional[int] = None  # N of a data set: the trace counts passes over it (steps × batch_size / N)
    batch_size: Optional[int] = None  # n, the data points (or documents) of one step
    documents_per_step: Optional[int] = None  # a document stream's documents per step: metrics give s / 100 documents
    random_metrics: bool = False  # True when sample_metrics draws random numbers: the run gives it its own generator

    def marginals(self) -> Optional[tuple]:
        """The exact marginal of each coordinate (scipy frozen distributions), for the marginal-density RMSE (SPEC
        §3); None (the default) where unknown."""
        return None

    def trace_metrics(self, mean_theta: np.ndarray) -> dict:
        """Metrics of the per-chain running posterior mean (c, dim), e.g. the test log-likelihood of the mean
        predictor (SPEC §3 E5/E6); {} (the default) for none."""
        return {}

    def sample_metrics(self, theta: np.ndarray, rng: np.random.Generator) -> dict:
        """Metrics of the current state (c, dim), e.g. LDA's held-out perplexity (SPEC §3 E3); {} (the default) for
        none. A target whose metrics draw from ``rng`` sets :attr:`random_metrics`."""
        return {}

    def trace_position(self, step: int) -> dict:
        """Where the run is after ``step`` steps in the target's own units, for the trace (e.g. documents seen); {}."""
        return {}

    def minibatch_noise_covariance(self, theta: np.ndarray) -> Optional[np.ndarray]:
        """The exact covariance of ∇Ũ − ∇U at θ for diagnostics when :meth:`noise_covariance` keeps it from the
        samplers (None there); None (the default) where unknown."""
        return None

    def checkpoint_state(self) -> Optional[dict]:
        """What a checkpoint must keep of a target whose state moves along a run (a document stream): a dict of JSON
        scalars, lists and numeric arrays, given back to :meth:`restore_state`; None (the default) for none."""
        return None

    def restore_state(self, state: dict) -> None:
        """Continue from a :meth:`checkpoint_state`; targets without one have nothing to restore."""

    # -- hyperparameters with Gibbs steps (SGHMC paper T11/T12: Gamma precisions, sgmcmc.hyperparameters) ------------
    gibbs_every: int = 0  # steps between two Gibbs updates of the hyperparameters (after steps k·gibbs_every); 0: none
    # What an optimiser's run does with them: "initial" keeps the initial values (no Gibbs step), "mode" sets each to its
    # conditional's mode every gibbs_every steps (the authors' MAP update).
    optimiser_hyperparameters: str = "initial"

    def reset_hyperparameters(self) -> None:
        """Set the hyperparameters to their initial values (every run starts there; a resumed one then loads its
        checkpoint's); nothing to do for a target without any."""

    def hyperparameters(self) -> dict[str, np.ndarray]:
        """The current hyperparameters, name → values per chain ((c,), or (1,) before the first update), recorded in
        the trace and the checkpoints; {} (the default) for a target without any."""
        return {}

    def set_hyperparameters(self, values: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`hyperparameters` (a resumed run)."""
        if values:
            raise TypeError(f"target {self.name!r} has no hyperparameters")

    def gibbs_update(self, theta: np.ndarray, rng: np.random.Generator, mode: bool = False) -> None:
        """Draw every hyperparameter from its conditional given θ (c, d) (the Gibbs step); ``mode``: set it to the
        conditional's mode instead, with no random numbers (the authors' MAP update)."""
        raise TypeError(f"target {self.name!r} has no hyperparameters")

    # -- predictions averaged over samples (SGHMC paper T11/T12: test error, RMSE of the averaged predictive) --------
    predict_every: int = 0  # steps between two predictions of the test set (one sample per epoch); 0: none

    def predict(self, theta: np.ndarray) -> np.ndarray:
        """The test-set predictions at θ (c, d), shape (c, n_test, k) (class probabilities, or predicted ratings with
        k = 1): what is averaged over the post-burn-in samples."""
        raise TypeError(f"target {self.name!r} has no test-set predictions")

    def predictive_metrics(self, prediction: np.ndarray) -> dict:
        """Metrics of predictions (c, n_test, k), one per chain, as {name: (c,) array} (e.g. ``test_error``,
        ``test_log_likelihood``, ``rmse``)."""
        raise TypeError(f"target {self.name!r} has no test-set predictions")

    def parameter_names(self) -> Optional[list[str]]:
        """The names of θ's coordinates (``dim`` strings), written to samples.npz as ``parameter_names`` and used as
        the ArviZ posterior's coordinates (:mod:`sgmcmc.run_results`); None (the default): 0, 1, …, dim − 1."""
        return None

    def write_artifacts(self, folder, theta: np.ndarray) -> list[str]:
        """Write the target's own files of the final state θ (c, dim) into the run folder; their names ([] by
        default)."""
        return []


class SyntheticTarget(Target):
    """A target given by a formula, with Gaussian gradient noise of fixed covariance V (SPEC §4.3).

    Parameters
    ----------
    noise_variance : float or (dim, dim) array
        V in ∇Ũ = ∇U + N(0, V); a scalar means V = v·I.
    initial_position : sequence of floats, optional
        Centre of θ₀ (default: zeros).
    initial_spread : float
        θ₀ = initial_position + initial_spread·N(0, I) (0 gives a fixed start).
    """

    has_exact_density = True

    def __init__(self, noise_variance=4.0, initial_position: Optional[Sequence[float]] = None, initial_spread: float = 1.0):
        variance = np.asarray(noise_variance, dtype=float)
        if variance.ndim == 0:
            variance = float(variance) * np.eye(self.dim)
        if variance.shape != (self.dim, self.dim):
            raise ValueError(f"noise_variance must be a scalar or a {self.dim}x{self.dim} matrix")
        if not np.allclose(variance, variance.T) or np.min(np.linalg.eigvalsh(variance)) < 0:
            raise ValueError("noise_variance must be symmetric positive semidefinite")
        self.variance = variance
        try:
            self._noise_factor = np.linalg.cholesky(variance)
        except np.linalg.LinAlgError:  # singular V (e.g. noise in one coordinate only)
            eigenvalues, eigenvectors = np.linalg.eigh(variance)
            self._noise_factor = eigenvectors * np.sqrt(np.clip(eigenvalues, 0, None))
        centre = np.zeros(self.dim) if initial_position is None else np.asarray(initial_position, dtype=float)
        if centre.shape != (self.dim,):
            raise ValueError(f"initial_position must have {self.dim} entries")
        if initial_spread < 0:
            raise ValueError("initial_spread must be >= 0")
        self.initial_centre = centre
        self.initial_spread = float(initial_spread)

    def stochastic_gradient(self, theta, rng):
        """∇U(θ) + N(0, V): draws one standard normal array of shape θ.shape."""
        normal = rng.standard_normal(theta.shape)
        return self.gradient(theta) + normal @ self._noise_factor.T

    def noise_covariance(self, theta):
        return self.variance

    def density_functions(self, gradient_into, potential, parameters=(0.0,), hessian_diagonal_into=None) -> dict:
        """:meth:`Target.engine_functions` of a formula target: ``gradient_into(θ, parameters, out)`` writes ∇U of
        one chain and ``potential(θ, parameters)`` returns its U (with ``parameters``, a flat float array), and
        ∇Ũ = ∇U + L z with this target's V = LLᵀ; ``hessian_diagonal_into(θ, parameters, out)``, where given, writes
        its exact ∂²U/∂θ_i² (:meth:`hessian_diagonal`'s; pSGLD's stationary preconditioner)."""
        functions = {"gradient_into": gradient_into, "potential": potential,
                     "parameters": np.ascontiguousarray(parameters, dtype=float),
                     "noise_factor": np.ascontiguousarray(self._noise_factor, dtype=float),
                     "noise_covariance": np.ascontiguousarray(self.variance, dtype=float)}
        if hessian_diagonal_into is not None:
            functions["hessian_diagonal_into"] = hessian_diagonal_into
        return functions

    def initial_position(self, n_chains, rng):
        return self.initial_centre + self.initial_spread * rng.standard_normal((n_chains, self.dim))


def quadratic_potential(theta, parameters):
    """U = ½(θ − m)ᵀP(θ − m) of one chain, ``parameters`` = (m, P row-major)."""
    d = theta.shape[0]
    total = 0.0
    for i in range(d):
        row = 0.0
        for j in range(d):
            row += parameters[d + i * d + j] * (theta[j] - parameters[j])
        total += (theta[i] - parameters[i]) * row
    return 0.5 * total


def quadratic_gradient_into(theta, parameters, out):
    """∇U = P(θ − m) of one chain into ``out``, ``parameters`` = (m, P row-major) (the Gaussian targets T1, T5)."""
    d = theta.shape[0]
    for i in range(d):
        total = 0.0
        for j in range(d):
            total += parameters[d + i * d + j] * (theta[j] - parameters[j])
        out[i] = total


def quadratic_hessian_diagonal_into(theta, parameters, out):
    """∂²U/∂θ_i² = P_ii of U = ½(θ − m)ᵀP(θ − m), one chain, ``parameters`` = (m, P row-major)."""
    d = theta.shape[0]
    for i in range(d):
        out[i] = parameters[d + i * d + i]
