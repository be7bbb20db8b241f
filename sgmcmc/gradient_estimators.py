"""Gradient estimators: how a sampler's ∇Ũ(θ) is formed from a data target's minibatches, as their own layer
(SGMCMCJax's split of update rule × gradient estimator × driver; config group ``gradient``).

Every estimator here is unbiased, E ∇Ũ(θ) = ∇U(θ), and is written as a data target of its own whose per-example
gradients are shifted by a control variate: with g_i(θ) = ∇_θ log p(x_i | θ), a centring value θ̂ and
ḡ(θ̂) = (1/N) Σ_{j=1}^N g_j(θ̂),

    h_i(θ) = g_i(θ) − g_i(θ̂) + ḡ(θ̂),
    ∇Ũ(θ) = −(N/n) Σ_{i∈S̃} h_i(θ) − ∇log p(θ) = ∇U(θ̂) + [∇Ũ(θ) − ∇Ũ(θ̂)] + ∇log p(θ̂) − ∇log p(θ)

(Baker, Fearnhead, Fox & Nemeth 2019, Eq. 5: the full-data gradient at θ̂ plus the minibatch estimate of the
difference; the prior's gradient is exact). Since Σ_i h_i(θ) = Σ_i g_i(θ), the potential, the full-data gradient
and the posterior are the target's; only the minibatch noise changes. Its covariance is N(N − n)/n · S_h²(θ), with
S_h² the covariance over the data of g_i(θ) − g_i(θ̂) (:meth:`~sgmcmc.targets.data.DataTarget.noise_covariance` of
the h_i): O(‖θ − θ̂‖²) near θ̂ where g_i is smooth, against the plain minibatch's O(1). So the samplers' ``known``
and ``running`` noise estimates work unchanged: they see the estimator's own per-example gradients.

- ``minibatch`` (:func:`make_estimator` returns the target itself): today's −(N/n) Σ_{i∈S̃} g_i(θ) − ∇log p(θ).
- ``control_variates`` (:class:`ControlVariates`; SGLD-CV, SGHMC-CV, SGNHT-CV of Baker et al. 2019 and SGMCMCJax):
  one θ̂ for every chain, the posterior mode, found before the run by ``optimiser``: ``lbfgs`` (scipy's L-BFGS-B on
  the full-data U and ∇U, from the target's initial position) or ``sgd`` (Baker et al.'s: ``centre_steps`` steps of
  θ ← θ − η∇Ũ(θ) on plain minibatches with η = ``centre_step_size``), then one full-data gradient at θ̂.
- ``svrg`` (:class:`SVRG`; SVRG-Langevin, Dubey et al. 2016): each chain's θ̂ is its own position, renewed every
  ``update_every`` minibatch gradients (default: one epoch, ⌈N/n⌉), each time with a full-data gradient there.

Each estimator owns its state (θ̂, ḡ(θ̂), the count of minibatch gradients since the start): a run starts from a
fresh one (:meth:`reset_hyperparameters`, which every run calls first) and its checkpoints keep it
(:meth:`checkpoint_state`), so a killed run resumes bit-identically. Its random numbers (the ``sgd`` centring's
minibatches) come from a generator of its own, seeded from the run's seed: the run's own stream is the plain
minibatch run's. Its cost is counted in per-example gradient evaluations (:meth:`cost`): 2n per minibatch gradient
(g_i at θ and at θ̂) against n, plus N per full-data gradient (the centring's, and every renewal's per chain).

On a target that hands the engine its rows (logistic regression, a user's model on rows: ``engine_functions``), the
samplers run the estimators on the engine's blocks (:func:`sgmcmc.engine.estimators.minibatch_gradient`: g_i(θ̂)
beside g_i(θ), SVRG's per-chain centres and renewals in each chain's memory, handed back to the estimator after each
block), pinned to the formulas written out in ``tests/engine/test_estimators.py``.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np

from sgmcmc.mode import lbfgs_mode
from sgmcmc.schema import Key, choice, integer, optional, real
from sgmcmc.targets.base import Target
from sgmcmc.targets.data import DataTarget

OPTIMISERS = ("lbfgs", "sgd")

# Each estimator's config keys (gradient.<key>, besides gradient.name), declared once.
ESTIMATOR_KEYS: dict[str, dict[str, Key]] = {
    "minibatch": {},
    "control_variates": {
        "optimiser": Key(choice(*OPTIMISERS), "how the centring value θ̂ (the posterior mode) is found: scipy's "
                                              "L-BFGS-B on the full-data U (lbfgs) or SGD on minibatches (sgd, Baker "
                                              "et al. 2019, the last half of its iterates averaged)"),
        "centre_steps": Key(integer(1), "SGD steps of the centring (optimiser=sgd)"),
        "centre_step_size": Key(optional(real(0.0, strict=True)), "η of the centring's SGD steps θ ← θ − η∇Ũ "
                                                                   "(required with optimiser=sgd)"),
    },
    "svrg": {
        "update_every": Key(optional(integer(1)), "minibatch gradients between two renewals of each chain's centring "
                                                  "value and its full-data gradient; null: one epoch, ⌈N/n⌉"),
    },
}


class EstimatorError(ValueError):
    """An estimator that cannot be used with the target or its settings (one line naming the ``gradient`` key)."""


def make_estimator(name: str, target: Target, seed: int = 0, **params) -> Target:
    """The target as the sampler sees it under the gradient estimator ``name`` (``minibatch``: ``target`` itself)."""
    if name not in ESTIMATOR_KEYS:
        raise EstimatorError(f"gradient={name!r} is invalid: allowed values are {', '.join(ESTIMATOR_KEYS)}")
    if name == "minibatch":
        if params:
            raise EstimatorError(f"gradient: minibatch takes no settings (got {', '.join(sorted(params))})")
        return target
    if not isinstance(target, DataTarget):
        raise EstimatorError(f"gradient={name} needs a data target with per-example gradients; target {target.name!r} "
                             "has none (use gradient=minibatch)")
    if target.gibbs_every:
        raise EstimatorError(f"gradient={name}: target {target.name!r} resamples hyperparameters by Gibbs steps, which "
                             "would leave the centring value's full-data gradient stale (use gradient=minibatch)")
    unknown_noise = type(target).noise_covariance is not DataTarget.noise_covariance
    if name == "control_variates":
        cls = ControlVariatesUnknownNoise if unknown_noise else ControlVariates
        return cls(target, seed=seed, **params)
    cls = SVRGUnknownNoise if unknown_noise else SVRG
    return cls(target, **params)


class CentredGradients(DataTarget):
    """A data target ``base`` whose per-example gradients are h_i(θ) = g_i(θ) − g_i(θ̂) + ḡ(θ̂) (module docstring);
    everything else is ``base``'s. Subclasses keep θ̂ (:attr:`centre`, (1, d) or one per chain (c, d)) and ḡ(θ̂)
    (:attr:`centre_mean`, same shape) up to date."""

    estimator = "centred"

    def __init__(self, base: DataTarget):
        super().__init__(base.n_data, base.batch_size)
        self.base = base
        self.name, self.dim = base.name, base.dim
        for flag in ("has_potential", "has_exact_gradient", "bounded", "has_exact_density", "has_exact_moments",
                     "documents_per_step", "random_metrics", "gibbs_every", "optimiser_hyperparameters",
                     "predict_every"):
            setattr(self, flag, getattr(base, flag))
        self.centre: Optional[np.ndarray] = None
        self.centre_mean: Optional[np.ndarray] = None
        self.evaluations = 0  # per-example gradient evaluations per chain (:meth:`cost`)

    # -- the estimator ---------------------------------------------------------------------------------------------
    def _centre_for(self, n_chains: int) -> tuple[np.ndarray, np.ndarray]:
        """(θ̂, ḡ(θ̂)) for ``n_chains`` positions: one centre for all, or one per chain."""
        if self.centre is None:
            raise RuntimeError(f"{self.estimator}: no centring value yet")
        if self.centre.shape[0] == n_chains:
            return self.centre, self.centre_mean
        if self.centre.shape[0] == 1:
            return (np.repeat(self.centre, n_chains, axis=0), np.repeat(self.centre_mean, n_chains, axis=0))
        raise ValueError(f"{self.estimator}: {n_chains} positions against {self.centre.shape[0]} chains' centring values")

    def full_mean_gradient(self, theta: np.ndarray) -> np.ndarray:
        """ḡ(θ) = (1/N) Σ_j g_j(θ) = −(∇U(θ) + ∇log p(θ))/N from the base's full-data gradient, (c, d); counts N."""
        self.evaluations += self.n_data
        return -(self.base.gradient(theta) + self.base.log_prior_gradient(theta)) / self.n_data

    def log_likelihood_gradients(self, theta, index):
        """h_i(θ) = g_i(θ) − g_i(θ̂) + ḡ(θ̂) for the indices (c, b): shape (c, b, d)."""
        theta = np.asarray(theta, dtype=float)
        centre, centre_mean = self._centre_for(theta.shape[0])
        return (self.base.log_likelihood_gradients(theta, index) - self.base.log_likelihood_gradients(centre, index)
                + centre_mean[:, None, :])

    def minibatch_gradient(self, theta, rng):
        """∇Ũ(θ) with the h_i of one minibatch (the base's draw, :meth:`minibatch`); counts 2n evaluations."""
        self.evaluations += 2 * self.batch_size
        return super().minibatch_gradient(theta, rng)

    def minibatch(self, rng, n_chains):
        return self.base.minibatch(rng, n_chains)

    def cost(self) -> dict:
        """What the estimator has cost so far: per-example gradient evaluations per chain."""
        return {"estimator": self.estimator, "gradient_evaluations_per_chain": int(self.evaluations)}

    # -- everything else is the base target's ----------------------------------------------------------------------
    def potential(self, theta):
        return self.base.potential(theta)

    def gradient(self, theta):
        return self.base.gradient(theta)

    def log_prior_gradient(self, theta):
        return self.base.log_prior_gradient(theta)

    def log_density(self, theta):
        return self.base.log_density(theta)

    def exact_moments(self):
        return self.base.exact_moments()

    def histogram_edges(self):
        return self.base.histogram_edges()

    def default_metric(self):
        return self.base.default_metric()

    def initial_position(self, n_chains, rng):
        return self.base.initial_position(n_chains, rng)

    def reflect(self, theta):
        return self.base.reflect(theta)

    def marginals(self):
        return self.base.marginals()

    def trace_metrics(self, mean_theta):
        return self.base.trace_metrics(mean_theta)

    def sample_metrics(self, theta, rng):
        return self.base.sample_metrics(theta, rng)

    def trace_position(self, step):
        return self.base.trace_position(step)

    def hyperparameters(self):
        return self.base.hyperparameters()

    def set_hyperparameters(self, values):
        self.base.set_hyperparameters(values)

    def gibbs_update(self, theta, rng, mode=False):
        self.base.gibbs_update(theta, rng, mode)

    def predict(self, theta):
        return self.base.predict(theta)

    def predictive_metrics(self, prediction):
        return self.base.predictive_metrics(prediction)

    def parameter_names(self):
        return self.base.parameter_names()

    def write_artifacts(self, folder, theta):
        return self.base.write_artifacts(folder, theta)

    def reset_hyperparameters(self):
        """Every run starts here: the base's initial hyperparameters and the estimator's initial state."""
        self.base.reset_hyperparameters()
        self.reset_estimator()

    def reset_estimator(self) -> None:
        """The estimator's state at the start of a run (nothing to reset by default)."""

    def checkpoint_state(self) -> Optional[dict]:
        state = {f"estimator.{key}": value for key, value in self.estimator_state().items()}
        base = self.base.checkpoint_state()
        if base is not None:
            state.update({f"base.{key}": value for key, value in base.items()})
        return state

    def restore_state(self, state: dict) -> None:
        prefix = "estimator."
        self.load_estimator_state({key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)})
        base = {key[len("base."):]: value for key, value in state.items() if key.startswith("base.")}
        if base:
            self.base.restore_state(base)

    def estimator_state(self) -> dict:
        return {"evaluations": int(self.evaluations)}

    def load_estimator_state(self, state: dict) -> None:
        self.evaluations = int(state["evaluations"])


class ControlVariates(CentredGradients):
    """Control variates around the posterior mode θ̂ (Baker et al. 2019; module docstring), found when built."""

    estimator = "control_variates"

    def __init__(self, base: DataTarget, seed: int = 0, optimiser: str = "lbfgs", centre_steps: int = 10_000,
                 centre_step_size: Optional[float] = None):
        super().__init__(base)
        if optimiser not in OPTIMISERS:
            raise EstimatorError(f"gradient.optimiser={optimiser!r} is invalid: allowed values are {', '.join(OPTIMISERS)}")
        if optimiser == "sgd" and centre_step_size is None:
            raise EstimatorError("gradient.centre_step_size is required with gradient.optimiser=sgd (η of θ ← θ − η∇Ũ)")
        self.optimiser, self.centre_steps, self.centre_step_size = optimiser, int(centre_steps), centre_step_size
        rng = np.random.default_rng([int(seed), 0x6376])  # the estimator's own stream ("cv"), never the run's
        start = np.asarray(base.initial_position(1, rng), dtype=float)
        centre = self._lbfgs(start) if optimiser == "lbfgs" else self._sgd(start, rng)
        if not np.all(np.isfinite(centre)):
            raise EstimatorError(f"gradient.optimiser={optimiser} did not reach a finite centring value on target "
                                 f"{base.name!r}" + (" (lower gradient.centre_step_size)" if optimiser == "sgd" else
                                                     " (try gradient.optimiser=sgd)"))
        self.centre = centre
        self.centre_mean = self.full_mean_gradient(centre)
        self.centring_evaluations = self.evaluations  # the centring's own cost, before any step

    def _lbfgs(self, start: np.ndarray) -> np.ndarray:
        """The mode of U by scipy's L-BFGS-B on the full data (N evaluations per function and gradient call)."""
        if not self.base.has_potential:
            raise EstimatorError(f"gradient.optimiser=lbfgs needs the potential of target {self.base.name!r}, which it "
                                 "does not have (use gradient.optimiser=sgd)")
        mode = lbfgs_mode(self.base.potential, self.base.gradient, start, gtol=1e-10 * max(1.0, self.n_data))
        self.evaluations += 2 * self.n_data * mode.calls  # U and ∇U each pass over the data
        self.optimiser_message = mode.message
        return mode.theta

    def _sgd(self, start: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """``centre_steps`` SGD steps θ ← θ − η∇Ũ(θ) on the base's plain minibatches (Baker et al. 2019, §3.1), and the
        average of the last half of the iterates (Polyak–Ruppert): a constant step's last iterate alone scatters
        about the mode by √(ηV/2H) (e.g. 0.07 in γ on Normal-Gamma at η = 10⁻³), the average by far less."""
        theta, total, kept = start.copy(), np.zeros_like(start), 0
        for step in range(self.centre_steps):
            with np.errstate(all="ignore"):
                theta = theta - self.centre_step_size * self.base.stochastic_gradient(theta, rng)
            theta, _ = self.base.reflect(theta)
            if not np.all(np.isfinite(theta)):
                return theta
            if 2 * (step + 1) > self.centre_steps:  # the last ⌈steps/2⌉ iterates (the last one at least)
                total += theta
                kept += 1
        self.evaluations += self.centre_steps * self.batch_size
        self.optimiser_message = f"{self.centre_steps} SGD steps of size {self.centre_step_size}, the last half averaged"
        return total / kept

    def cost(self) -> dict:
        return {**super().cost(), "centring_gradient_evaluations": int(self.centring_evaluations),
                "optimiser": self.optimiser, "optimiser_message": self.optimiser_message}

    def engine_functions(self):
        """The base's functions (on rows, or vectorised) with θ̂ and ḡ(θ̂)
        (:func:`sgmcmc.engine.estimators.minibatch_gradient`'s control variates) and ``advanced(gradients)``, which
        counts 2n evaluations a gradient; None where the base hands the engine none."""
        functions = self.base.engine_functions()
        if functions is None or not {"row_gradients", "vectorised_row_gradients"} & functions.keys():
            return None
        return {**functions, "centre": self.centre[0], "centre_mean": self.centre_mean[0], "advanced": self._advanced}

    def _advanced(self, gradients: int, state: np.ndarray) -> None:
        self.evaluations += 2 * self.batch_size * gradients

    def reset_estimator(self) -> None:
        """θ̂ stays (found once, deterministically); the count restarts after the centring."""
        self.evaluations = self.centring_evaluations


class SVRG(CentredGradients):
    """Stochastic variance-reduced gradients (Johnson & Zhang 2013; SVRG-Langevin, Dubey et al. 2016): each chain's
    centring value is its own position, renewed with a full-data gradient every ``update_every`` minibatch gradients
    (the first at the run's first one)."""

    estimator = "svrg"

    def __init__(self, base: DataTarget, update_every: Optional[int] = None):
        super().__init__(base)
        self.update_every = int(update_every) if update_every is not None else math.ceil(self.n_data / self.batch_size)
        self.calls = 0  # minibatch gradients since the run's start

    def minibatch_gradient(self, theta, rng):
        theta = np.asarray(theta, dtype=float)
        if self.calls % self.update_every == 0 or self.centre is None or self.centre.shape != theta.shape:
            self.centre = theta.copy()
            self.centre_mean = self.full_mean_gradient(self.centre)
        self.calls += 1
        return super().minibatch_gradient(theta, rng)

    def noise_covariance(self, theta):
        """The covariance at θ given each chain's current centring value; None (unknown) for positions that are not
        the chains' (e.g. the pooled kept samples) or before the first renewal."""
        if self.centre is None or np.shape(theta)[0] != self.centre.shape[0]:
            return None
        return super().noise_covariance(theta)

    def reset_estimator(self) -> None:
        self.centre = self.centre_mean = None
        self.calls = self.evaluations = 0

    def estimator_state(self) -> dict:
        state = {**super().estimator_state(), "calls": int(self.calls)}
        if self.centre is not None:
            state.update(centre=self.centre, centre_mean=self.centre_mean)
        return state

    def load_estimator_state(self, state: dict) -> None:
        super().load_estimator_state(state)
        self.calls = int(state["calls"])
        self.centre = np.array(state["centre"], dtype=float) if "centre" in state else None
        self.centre_mean = np.array(state["centre_mean"], dtype=float) if "centre_mean" in state else None

    def cost(self) -> dict:
        return {**super().cost(), "update_every": self.update_every}

    def engine_functions(self):
        """The base's functions (on rows, or vectorised) with ``update_every``
        (:func:`sgmcmc.engine.estimators.minibatch_gradient`'s
        SVRG), ``estimator_state`` (each chain's count of minibatch gradients, θ̂ and ḡ(θ̂), the engine's memory of
        them at a block's start) and ``advanced``, which takes that memory back after the block and counts its cost;
        None where the base hands the engine none."""
        functions = self.base.engine_functions()
        # the chain's memory after the running estimate's is SVRG's own: a prior's hyperparameters have no room there
        if (functions is None or not {"row_gradients", "vectorised_row_gradients"} & functions.keys()
                or "estimator_state" in functions):
            return None
        return {**functions, "update_every": self.update_every, "estimator_state": self._engine_state,
                "estimator_size": 1 + 2 * self.dim, "advanced": self._engine_advanced}

    def _engine_state(self, n_chains: int) -> np.ndarray:
        """(c, 1 + 2d): each chain's (count, θ̂, ḡ(θ̂)) (zeros before the first renewal)."""
        centre, centre_mean = self._chain_centres(n_chains)
        return np.column_stack([np.full(n_chains, float(self.calls)), centre, centre_mean])

    def _engine_advanced(self, steps: int, state: np.ndarray) -> None:
        d = self.dim
        self._advance_to(state[:, 1:1 + d].copy(), state[:, 1 + d:].copy(), int(state[0, 0]))

    def _chain_centres(self, n_chains: int) -> tuple[np.ndarray, np.ndarray]:
        """(θ̂, ḡ(θ̂)) (c, d) of each chain for a compiled block: copies of the current ones, or zeros where the
        block's first gradient renews them (a ValueError between two renewals, where there are none for these
        chains)."""
        if self.centre is None or self.centre.shape[0] != n_chains:
            if self.calls % self.update_every:
                raise ValueError(f"svrg: no centring values for {n_chains} chains between two renewals")
            return np.zeros((n_chains, self.dim)), np.zeros((n_chains, self.dim))
        return self.centre.copy(), self.centre_mean.copy()

    def _advance_to(self, centre: np.ndarray, centre_mean: np.ndarray, calls: int) -> None:
        """A compiled block's minibatch gradients taken: its final θ̂, ḡ(θ̂) and count; the cost counts 2n per
        gradient and N per chain at each renewal (every count that is a multiple of ``update_every``)."""
        if calls == self.calls:
            return
        first = -(-self.calls // self.update_every) * self.update_every  # the first renewal at or after the block's start
        renewals = len(range(first, calls, self.update_every))
        self.evaluations += 2 * self.batch_size * (calls - self.calls) + self.n_data * renewals
        self.centre, self.centre_mean, self.calls = centre, centre_mean, calls




class ControlVariatesUnknownNoise(ControlVariates):
    """:class:`ControlVariates` on a target that keeps its noise covariance unknown (d too large for d × d)."""

    noise_covariance = Target.noise_covariance


class SVRGUnknownNoise(SVRG):
    """:class:`SVRG` on a target that keeps its noise covariance unknown (d too large for d × d)."""

    noise_covariance = Target.noise_covariance


__all__ = ["ESTIMATOR_KEYS", "EstimatorError", "make_estimator", "ControlVariates", "SVRG", "CentredGradients"]
