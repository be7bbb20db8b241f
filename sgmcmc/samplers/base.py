"""What a sampler is: an ``init``/``step`` pair over a :class:`~sgmcmc.state.SamplerState`, plus the
(H, D, Q, Γ) it implements, so the generic recipe step (Ma et al. 2015, Eq. 9 + K1) can run it too.

``integrator`` picks the update: one of the engine's integrators (:mod:`sgmcmc.engine.integrators`), which a
sampler names with its ``engine_*`` hooks and runs with :meth:`Sampler.engine_blocks`: ``"splitting"`` (default for
momentum samplers, SPEC §4.1), ``"euler"`` (the simultaneous Euler step, equal to the generic step for the same
random numbers) and the others; or ``"generic"``, :meth:`Sampler.step`: the generic recipe step on the sampler's own
D and Q, with Γ from the sampler or finite differences, vectorised across chains, the oracle the integrators are
pinned to.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from dataclasses import replace
from typing import Optional

import numpy as np

from sgmcmc.engine.blocks import gradient_noise_mode
from sgmcmc.engine.driver import COMPILED, PYTHON, Blocks
from sgmcmc.engine.estimators import (FULL_DATA, NO_RUNNING, RUNNING_DIAGONAL, RUNNING_FULL, called_in_python,
                                      has_potential, on_rows, source_of)
from sgmcmc.engine.injection import DIAGONAL_ESTIMATE, FULL_ESTIMATE
from sgmcmc.engine.integrators import (ABOBA, ALGORITHM_2, BADODAB, BAOAB, EULER, LEAPFROG, MOMENTS,
                                       MOMENTS_WITHOUT_CORRECTION, PLAIN, SPLITTING, THETA_FIRST, langevin,
                                       momentum_friction, ou_splitting, preconditioned, thermostat, trajectory)
from sgmcmc.engine.replay import on_replay, per_chain
from sgmcmc.engine.static import Callback, static
from sgmcmc.geometry import IdentityMetric
from sgmcmc.gradient_estimators import SVRG
from sgmcmc.recipe import Recipe, check_recipe, recipe_step
from sgmcmc.schema import Key, boolean, choice, metric, optional, real
from sgmcmc.state import SamplerState, StepInfo
from sgmcmc.targets.base import Target
from sgmcmc.targets.data import DataTarget

log = logging.getLogger(__name__)
NOISE_ESTIMATES = ("known", "zero", "running")
# the integrators the engine's blocks run (sgmcmc.engine.integrators)
# the integrators that hand a step's gradient-noise slot (normals[0]) to the estimator alone, and read the injected
# noise from slot 1: on a data model whose estimator takes no numbers of its own, nothing reads slot 0
GRADIENT_NOISE_TO_ESTIMATOR = (langevin, momentum_friction, preconditioned, thermostat)
ORDERS = {"splitting": SPLITTING, "euler": EULER, "theta_first": THETA_FIRST, "aboba": ABOBA, "leapfrog": LEAPFROG,
          "trajectory": ALGORITHM_2, "baoab": BAOAB, "badodab": BADODAB}
RUNNING_FORMS = ("full", "diagonal")
# the integrators that take one gradient a step, and so update a running noise estimate once a step (Shang et al.
# 2015 Eq. 18: one minibatch covariance per step); pSGLD's on a data model, where it runs with
# the running preconditioner only (PSGLD.engine_functions: the stationary one's second, exact, gradient is a density
# model's)
RUNNING = (langevin, momentum_friction, thermostat, preconditioned)
# ... and those that also take a data model's V̂, known or running: the estimator writes it at every gradient, or, for
# the O step of BAOAB and BADODAB, at a point of its own (sgmcmc.engine.estimators.minibatch_noise); a trajectory's
# known V(θ) (SGHMC + MH: its samplers take no running estimate)
ESTIMATED = (*RUNNING, ou_splitting, trajectory)

# The config keys of every sampler section (Sampler.config_keys) and those most samplers declare (Sampler.parameters).
STEP_SIZE = Key(real(0.0, strict=True), "ε, or ε₀ of the schedule", required=True)
NOISE_ESTIMATE = Key(choice(*NOISE_ESTIMATES), "V̂ subtracted from the injected noise: the target's V(θ) (known), "
                     "none (zero), the running average of the minibatches' covariances (running, data targets; "
                     "Shang et al. 2015 Eq. 18-19)")
NOISE_KEYS = {
    "noise_estimate": NOISE_ESTIMATE,
    "running_form": Key(choice(*RUNNING_FORMS), "the running estimate's form: full d×d or its diagonal"),
    "noise_clip": Key(boolean, "clip negative eigenvalues of ε(2D − εB̂) at 0 and count them, instead of stopping"),
    "finite_population": Key(boolean, "the running estimate's scale: N(N − n)/n (true, exact without replacement) "
                                      "or Eq. 17's N²/n (false)"),
}
METRIC = Key(metric, "G(θ): null for the target's (SPEC §4.2)")


def block_diagonal(*blocks: np.ndarray) -> np.ndarray:
    """Stack per-chain square blocks (n, k_i, k_i) into (n, Σk, Σk)."""
    n = blocks[0].shape[0]
    size = sum(block.shape[-1] for block in blocks)
    out = np.zeros((n, size, size))
    start = 0
    for block in blocks:
        k = block.shape[-1]
        out[:, start : start + k, start : start + k] = block
        start += k
    return out


def diagonal_matrices(diagonal: np.ndarray) -> np.ndarray:
    """(n, k) → (n, k, k) diagonal matrices."""
    n, k = diagonal.shape
    out = np.zeros((n, k, k))
    index = np.arange(k)
    out[:, index, index] = diagonal
    return out


def per_example_gradients(target: Target) -> bool:
    """Whether ``target`` can give its per-example gradients: a density model (it has no examples), or a data model
    whose functions (:meth:`~sgmcmc.targets.base.Target.engine_functions`) include the rows door ``row_gradients``;
    not one that hands over its minibatch sums alone (the BNN's, BPMF's: one chain's per-example gradients would be
    hundreds of MB)."""
    if not isinstance(target, DataTarget):
        return True
    functions = target.engine_functions()
    return (functions is None or not on_rows(functions)
            or bool({"row_gradients", "vectorised_row_gradients"} & functions.keys()))


class Sampler(ABC):
    """Base class of every sampler: binds a target and the sampler's parameters.

    Subclasses set ``name`` (the registry's and the config's), ``integrators`` (the first is the default) and
    ``parameters`` (their config keys, :meth:`config_keys`), implement ``init``, the ``engine_*`` hooks that
    name their integrator and, unless they are outside the recipe class, ``recipe``, ``pack`` and ``unpack``.
    ``sgmcmc.samplers.register_sampler`` makes one runnable by name.
    """

    name = "sampler"
    integrators: tuple[str, ...] = ("euler", "generic")
    # "sampler" (a recipe sampler, or HMC and the MH variants), or "optimiser" (SGD, SGD with momentum:
    # sgmcmc.samplers.optimisers): an optimiser has no recipe and no stationary distribution, keeps no samples, predicts
    # from its current point and treats a target's hyperparameters as its optimiser_hyperparameters says.
    kind: str = "sampler"

    # The keyword parameters that a config may set as sampler.<key> (besides step_size and integrator), each
    # declared once: its check, meaning and flags (sgmcmc.schema.Key). A subclass adds its own to its parent's
    # ({**Parent.parameters, "friction": FRICTION}) or declares its whole set.
    parameters: dict[str, Key] = NOISE_KEYS

    @classmethod
    def config_keys(cls) -> dict[str, Key]:
        """Every key of this sampler's config section: ``step_size`` (the schedule's ε₀, required), ``integrator``
        (one of :attr:`integrators`; null for the first) and :attr:`parameters`. :mod:`sgmcmc.config` validates
        ``sampler.<key>`` with them; the README's key list is made from them."""
        integrator = Key(optional(choice(*cls.integrators)), "the update rule; null: the first (SPEC §4.1)")
        return {"step_size": STEP_SIZE, "integrator": integrator, **cls.parameters}

    def checked(self, key: str, value):
        """``value`` of the parameter ``key`` checked as the config's ``sampler.<key>`` is (:meth:`config_keys`), for
        Python callers; a bad value raises :class:`~sgmcmc.schema.ConfigError` (a ValueError)."""
        declared = type(self).config_keys().get(key) or NOISE_KEYS.get(key)
        return declared.check(key, value)

    def __init__(self, target: Target, integrator: Optional[str] = None, noise_estimate: str = "known",
                 running_form: str = "full", noise_clip: bool = False, finite_population: bool = True):
        self.target = target
        self.integrator = self.checked("integrator", integrator) or self.integrators[0]
        noise_estimate = self.checked("noise_estimate", noise_estimate)
        running_form = self.checked("running_form", running_form)
        if noise_estimate == "running":
            if not isinstance(target, DataTarget):
                raise ValueError(f"noise_estimate=running needs a data target with per-example gradients; "
                                 f"target {target.name!r} has none (use known or zero)")
            if self.integrator == "generic":
                raise ValueError(f"noise_estimate=running is not available for {self.name} with integrator "
                                 f"{self.integrator} (use known or zero)")
        knows_noise = type(target).noise_covariance is not Target.noise_covariance
        if self.integrator == "aboba" and (noise_estimate == "running" or (noise_estimate == "known" and knows_noise)):
            raise ValueError(f"integrator aboba has no gradient-noise correction: use noise_estimate=zero "
                             f"(got {noise_estimate})")
        if noise_estimate == "running" and running_form == "full" and not per_example_gradients(target):
            raise ValueError(f"sampler.running_form=full: target {target.name!r} hands over no per-example gradients "
                             f"(its minibatch sums alone), so the full {target.dim}x{target.dim} running estimate "
                             f"cannot be formed; use sampler.running_form=diagonal")
        self.noise_estimate = noise_estimate
        self.running_form = running_form
        self.noise_clip = bool(noise_clip)
        self.finite_population = bool(finite_population)

    # -- state ----------------------------------------------------------------------------------
    @abstractmethod
    def init(self, theta: np.ndarray, rng: np.random.Generator) -> SamplerState:
        """Initial state for positions θ of shape (n_chains, dim)."""

    def step(self, rng: np.random.Generator, state: SamplerState, step_size: float) -> tuple[SamplerState, StepInfo]:
        """One generic recipe step of every chain with step size ε (Ma et al. 2015 Eq. 9 with +Γ, SPEC §0 K1;
        :func:`sgmcmc.recipe.recipe_step`): the ``generic`` integrator, the oracle the engine's integrators are pinned
        to. Every other integrator runs on the engine's blocks (:meth:`engine_blocks`)."""
        if self.integrator != "generic":
            raise ValueError(f"{self.name}'s {self.integrator} integrator runs on the engine's blocks "
                             f"(engine_blocks()); step() is the generic recipe step (integrator=generic)")
        z = recipe_step(self.recipe_at(step_size), self.pack(state), step_size, rng)
        return self.unpack(z), StepInfo()

    # -- compiled blocks (sgmcmc.engine) ---------------------------------------------------------------
    def engine_integrator(self) -> Optional[tuple]:
        """(the integrator of :mod:`sgmcmc.engine.integrators`, its constant or constants, whether the state has r, and
        ξ) that runs this sampler on the engine's blocks; None (the default) for none yet."""
        return None

    def engine_functions(self) -> Optional[dict]:
        """What the target hands the engine (:meth:`~sgmcmc.targets.base.Target.engine_functions`), as this sampler
        uses it (HMC's exact gradient drops the gradient noise)."""
        return self.target.engine_functions()

    def engine_draws(self, data: bool) -> tuple[int, bool]:
        """(the standard normal arrays a step draws, whether it then draws a uniform per chain), on a data model or
        not: two (the gradient noise, the injected noise) and no uniform by default; a trajectory's more, and a
        Metropolis–Hastings test's uniform."""
        return 2, False

    # False: the exact ∇U, no gradient noise (HMC); on a data model every gradient takes all N rows
    uses_stochastic_gradient = True

    def engine_passes(self) -> int:
        """The gradients of a step, each with a minibatch of its own (:class:`sgmcmc.engine.driver.Blocks`'
        ``passes``): one by default, a trajectory's m or m + 1."""
        return 1

    def engine_metric(self) -> Optional[tuple]:
        """(the metric's function, its flow, their parameters) the integrator takes
        (:meth:`~sgmcmc.geometry.DiagonalMetric.engine_function`): G = I (the default), a Riemannian sampler's G(θ);
        None where the engine has no function of its metric."""
        return IdentityMetric().engine_function(self.target.dim)

    def engine_carry(self) -> Optional[tuple]:
        """(the :class:`~sgmcmc.state.SamplerState` field (c, d) the integrator carries from step to step, whether the
        integrator takes it in a pass of its own where a state has none, else zeros), or None (the default): nothing
        carried (:class:`sgmcmc.engine.driver.Blocks`' ``carry`` and ``first_pass``)."""
        return None

    def engine_curvature(self, functions: dict, running: int, callbacks: bool = False) -> tuple:
        """What the integrator takes after its constants (``parameters[4:]``), given the block's running noise estimate:
        () by default; pSGLD's stationary preconditioner's function and its arguments (with ``callbacks``, the model's
        functions in them called in Python: :func:`~sgmcmc.engine.estimators.source_of`'s)."""
        return ()

    def engine_variant(self) -> int:
        """The integrator's variant (:mod:`sgmcmc.engine.integrators`, ``options[3]``): :data:`PLAIN` (the default),
        or naive SGRHMC's dropped γ, CCAdL's covariance-controlled friction."""
        return PLAIN

    def engine_blocks(self, backend: str = COMPILED) -> Optional[Blocks]:
        """The engine's blocks (:class:`sgmcmc.engine.driver.Blocks`) of this sampler on a target that hands the
        engine its functions (:meth:`~sgmcmc.targets.base.Target.engine_functions`, with its reflection where its
        support has a boundary), or None: the integrator or the metric is not there yet, or the noise estimate is one
        the engine does not take. Where the compiler refuses the model's functions, the same blocks on the Python
        backend (said in one line).

        Noise estimates: ``zero`` (nothing subtracted), on a density model ``known`` (its constant V, by its
        diagonal or in full), and on a data model ``running`` and ``known`` (V(θ), a pass over all the data at every
        gradient; nothing where the target keeps it unknown) with an integrator that takes one gradient a step
        (:data:`RUNNING`: the estimator writes V̂ at every gradient), BAOAB's and BADODAB's, or SGHMC + MH's trajectory
        (``known`` alone: :data:`ESTIMATED`), each with or without ``noise_clip``
        (:func:`sgmcmc.engine.injection.inject`). The control variates and SVRG run with every integrator (their cost
        counted at each gradient), BAOAB's and BADODAB's known V(θ₁) with SVRG about each chain's own centre."""
        integrator, metric = self.engine_integrator(), self.engine_metric()
        if (integrator is None or metric is None or self.integrator not in ORDERS
                or not self._kernel_declared("engine_functions")):
            return None
        handed = self.engine_functions()
        if handed is None:
            return None
        functions = on_replay(handed)
        vectorised, data = "replay" in functions, on_rows(functions)
        slots, uniforms = self.engine_draws(data)
        stationary = data and integrator[0] is preconditioned and self.engine_variant() in (MOMENTS,
                                                                                           MOMENTS_WITHOUT_CORRECTION)
        if vectorised and (uniforms or not self.uses_stochastic_gradient or self.engine_passes() > 1
                           or "update_every" in functions or stationary):
            # a vectorised model's passes over all the data (U, the exact ∇U, SVRG's renewals, pSGLD's stationary
            # V(θ) on a data model) or trajectories: the table does not serve them, each chain calls the model itself
            functions = per_chain(handed)
            log.warning("%s calls the vectorised model one chain at a time, in Python from the compiled blocks: one "
                        "call for all the chains does not serve its passes over all the rows or its trajectories "
                        "(slower; a model on rows is compiled: see sgmcmc/targets/user.py)", self._where())
        if uniforms and not has_potential(functions):  # a Metropolis test needs the exact U
            return None
        if not uniforms:  # a data model's U is read by a Metropolis test alone: blocks without one are not typed with it
            functions = {key: value for key, value in functions.items()
                         if key not in ("row_log_likelihoods", "prior_log_density")}
        step, constants, momentum, xi = integrator
        running, scale = NO_RUNNING, 0.0
        # a data model's known V(θ): the per-example covariance the estimator computes (DataTarget's, or SVRG's, which
        # has it once each chain has a centre), or none at all (Target's: nothing subtracted, as on Welling and Teh's
        # mixture); a data model with a V(θ) of its own has no blocks with noise_estimate=known
        noise_covariance = type(self.target).noise_covariance
        per_example = noise_covariance in (DataTarget.noise_covariance, SVRG.noise_covariance)
        if data and step in ESTIMATED and (self.noise_estimate == "running" or
                                         (self.noise_estimate == "known" and per_example)):
            if self.noise_estimate == "known":  # the estimator writes V̂ = V(θ) at every gradient
                running, scale = FULL_DATA, float(self.target.noise_scale)
            else:  # ... or V̂ = c·Î_t
                running = RUNNING_FULL if self.running_form == "full" else RUNNING_DIAGONAL
                scale = self.running_scale()
            mode = DIAGONAL_ESTIMATE if running == RUNNING_DIAGONAL else FULL_ESTIMATE
            variance = np.zeros((1, 1))
        elif self.noise_estimate == "zero" or (self.noise_estimate == "known" and
                                               (not data or noise_covariance is Target.noise_covariance)):
            mode, _, variance = gradient_noise_mode(None if self.noise_estimate == "zero" or data else
                                                    functions["noise_covariance"])
        else:
            return None
        metric_function, flow, metric_parameters = metric
        if isinstance(metric_function, Callback) and backend != PYTHON:
            log.warning("%s calls the metric's methods in Python from the compiled blocks, one chain at a time (slower "
                        "than a metric the compiler takes: see DiagonalMetric.engine_function in sgmcmc/geometry.py)",
                        self._where())
        parameters = (static(metric_function), static(flow), np.ascontiguousarray(metric_parameters, dtype=float),
                      np.atleast_1d(np.asarray(constants, dtype=float)), *self.engine_curvature(functions, running))
        source = source_of(functions, running, scale, every_row=not self.uses_stochastic_gradient)
        if source is None:  # the model's doors do not serve this estimate
            return None
        carry, first_pass = self.engine_carry() or (None, False)
        # a data model's gradient noise is its minibatch: slot 0 is not drawn unless the model takes its bits (online
        # LDA's Gibbs sweeps, batch_gradient's seed) or the integrator reads it (BAOAB's O step, a trajectory's r)
        unread_gradient_noise = (data and slots == 2 and step in GRADIENT_NOISE_TO_ESTIMATOR
                                 and "batch_gradient" not in functions)
        d = self.target.dim
        # V̂ in full (d, d) where it enters in full, else the row (1, d) of its diagonal (zeros where none enters): nothing
        # d × d is made for a model with d in the tens of thousands (sgmcmc.engine.injection.variance_diagonal)
        variance = np.broadcast_to(variance, (d, d))
        variance = variance.copy() if mode == FULL_ESTIMATE else np.diagonal(variance).reshape(1, d).copy()
        blocks = Blocks(static(step), source,
                        parameters,
                        (ORDERS[self.integrator], mode, int(self.noise_clip), self.engine_variant()),
                        variance, momentum=momentum, xi=xi,
                        n_data=int(functions["n_data"]) if data else 0,
                        batch_size=(int(self.target.batch_size) if self.uses_stochastic_gradient else
                                    int(functions["n_data"])) if data else 0, clip=bool(self.noise_clip),
                        slots=slots, uniforms=uniforms, backend=backend, carry=carry, first_pass=first_pass,
                        running=NO_RUNNING if running == FULL_DATA else running, advanced=functions.get("advanced"),
                        estimator_state=functions.get("estimator_state"),
                        estimator_size=int(functions.get("estimator_size", 0)),
                        replacement=bool(functions.get("replacement", False)) and self.uses_stochastic_gradient,
                        reflect=static(functions["reflect"]) if "reflect" in functions else None,
                        batches=functions.get("batches"), passes=self.engine_passes(), replay=functions.get("replay"),
                        first_slot=int(unread_gradient_noise))
        error = blocks.compile_error(d)
        where = self._where()
        methods = called_in_python(source)
        if error is None and methods and not vectorised:  # a vectorised model's one chain at a time: said above
            log.warning("%s calls the model's functions in Python from the compiled blocks, one chain at a time (slower "
                        "than a model the compiler takes; see sgmcmc/targets/user.py): its %s %s (a method, a closure)",
                        where, ", ".join(methods), "is not a plain function" if len(methods) == 1 else
                        "are not plain functions")
        if error is None:
            return blocks
        called = replace(blocks, source=source_of(functions, running, scale, not self.uses_stochastic_gradient,
                                                  callbacks=True),
                         parameters=(*parameters[:4], *self.engine_curvature(functions, running, callbacks=True)))
        if called.compile_error(d) is None:
            log.warning("%s calls the model's functions in Python from the compiled blocks, one chain at a time (slower "
                        "than a model the compiler takes; see sgmcmc/targets/user.py): the compiler refuses the model "
                        "(%s)", where, error)
            return called
        log.warning("%s runs on the Python path (the engine's blocks uncompiled, much slower): the compiler refuses the "
                    "model (%s)", where, error)
        return replace(blocks, backend=PYTHON)

    def _where(self) -> str:
        """This sampler on its target, as the warnings name them."""
        return f"{self.name} on {getattr(self.target, 'spec', self.target.name)}"

    # True in the body of each class whose engine hooks (engine_integrator, engine_variant, ...) describe its whole
    # update; a subclass (which may change the update) has no engine blocks unless it sets it too.
    exact_kernel = False

    def _kernel_declared(self, hook: str) -> bool:
        """Whether a kernel may run this sampler on its target: this very class has an exact kernel, and the target's
        class declares ``hook`` in its own body (a subclass of either may change what the kernel would compute)."""
        return bool(type(self).__dict__.get("exact_kernel", False)) and hook in type(self.target).__dict__

    # -- the recipe ---------------------------------------------------------------------------------
    def predicted_thermostat(self, theta: np.ndarray, step_size: float) -> Optional[float]:
        """The stationary mean of the thermostat ξ predicted over the positions θ (m, dim) at this step size, for the
        samplers with a thermostat (SGNHT, CCAdL); None (the default) for the others."""
        return None

    def first_order_thermostat(self, theta: np.ndarray, step_size: float) -> Optional[float]:
        """The first-order prediction of the same mean (Shang et al. 2015 Prop. 1); None (the default)."""
        return None

    def recipe(self) -> Recipe:
        """(∇H̃, D, Q, Γ, B̂) on the packed state z."""
        raise TypeError(f"sampler {self.name!r} declares no recipe")

    def recipe_at(self, step_size: float) -> Recipe:
        """The recipe used at step size ε (the same for every ε unless D depends on it, as in CCAdL)."""
        return self.recipe()

    def pack(self, state: SamplerState) -> np.ndarray:
        """The state as one array z of shape (n_chains, dim_z)."""
        parts = [state.theta]
        if state.momentum is not None:
            parts.append(state.momentum)
        if state.xi is not None:
            parts.append(state.xi[:, None])
        return np.concatenate(parts, axis=1)

    def unpack(self, z: np.ndarray) -> SamplerState:
        """Inverse of :meth:`pack`."""
        return SamplerState(theta=z)

    def validate(self, state: SamplerState, step_size: float = 0.0) -> None:
        """Check D(z) symmetric PSD and Q(z) skew-symmetric at ``state`` (run start and tests)."""
        check_recipe(self.recipe_at(step_size), self.pack(state))

    # -- gradient noise (SPEC §4.3; Shang et al. 2015 Eq. 17-19) ---------------------------------------
    def initial_noise(self, n_chains: int) -> dict:
        """The running estimate's fields of an initial state: Î₀ = 0, t = 0 (SPEC §4.8)."""
        if self.noise_estimate != "running":
            return {}
        d = self.target.dim
        shape = (n_chains, d) if self.running_form == "diagonal" else (n_chains, d, d)
        return {"noise": np.zeros(shape), "noise_count": 0}

    def running_scale(self) -> float:
        """c in Σ̂ = c·Î: the target's exact N(N − n)/n for minibatches drawn without replacement
        (``finite_population``, default), or Shang et al.'s Eq. 17 N²/n, which overstates the noise by
        N/(N − n) (11% for N = 100, n = 10) and is what their Table 1 ran."""
        if self.finite_population:
            return float(self.target.noise_scale)
        return self.target.n_data**2 / self.target.batch_size

    # True in the body of each class whose engine blocks can drop their injected noise (Blocks.without_noise), so that
    # the cyclical schedule's exploration phase takes the sampler's drift alone (Zhang et al. 2020, Algorithm 1); a
    # subclass that changes the step sets it again. Not the aboba or generic integrators.
    explores = False

    def can_explore(self) -> bool:
        """Whether this sampler, with its integrator, can take its step without the injected noise."""
        return bool(type(self).__dict__.get("explores", False)) and self.integrator not in ("aboba", "generic")

    # -- helpers ------------------------------------------------------------------------------------
    def gradient_noise(self, theta: np.ndarray) -> Optional[np.ndarray]:
        """V̂ per SPEC §4.3: the target's known V for ``known``, None for ``zero``."""
        if self.noise_estimate == "zero":
            return None
        return self.target.noise_covariance(theta)

    def _noise_block(self, theta: np.ndarray, transform: Optional[np.ndarray] = None) -> np.ndarray:
        """B̂ in the block that receives ∇Ũ through the diagonal matrix T: T V̂ T, shape (n, d, d)."""
        n, d = theta.shape
        variance = self.gradient_noise(theta)
        if variance is None:
            return np.zeros((n, d, d))
        variance = np.broadcast_to(variance, (n, d, d))
        if transform is None:
            return np.array(variance)
        return transform[:, :, None] * variance * transform[:, None, :]
