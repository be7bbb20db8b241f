"""Your own model as a target (``target=custom``): the contract a model meets, how it is loaded, and the checks it
gets before any run.

A model is any Python class (it imports nothing from this package). θ always has shape (n, dim), chain dimension
first, and every method returns one row per chain.

**Every model** has

- ``dim`` (int), the number of parameters; optionally
- ``initial_position(n, rng)`` → (n, dim), θ₀ of every chain (default: zeros);
- ``parameter_names``, a list of ``dim`` strings (the coordinates of the ArviZ posterior);
- ``metric()`` → a :class:`sgmcmc.geometry.DiagonalMetric`, G(θ) for SGRLD and the SGRHMC samplers (default G = I);
- for the metrics: ``exact_moments()`` → (E θ, E θ²), each (dim,), or ``reference_samples()`` → (m, dim) exact or
  long-run draws (their moments are used), and, for dim ≤ 2, ``exact_log_density(θ)`` → (n,) normalised with
  ``histogram_edges()`` (the KL grid, as :meth:`sgmcmc.targets.base.Target.histogram_edges`).

**A model in JAX** (the ``jax`` extra), in blackjax's form: ``logdensity_fn(params)``, or ``loglikelihood_fn(params,
x)`` of one example with ``logprior_fn(params)`` and ``data``, and ``initial_position``, a PyTree of parameters; a class,
an object or a file's module-level functions (``target.model=file.py``). JAX forms the gradients below from it
(:mod:`sgmcmc.targets.jax_model`), and it is then a density or data model in the vectorised form.

**A density model** gives the whole (unnormalised) log density at once:

- ``grad_log_density(θ)`` → (n, dim) and, optionally (HMC's Metropolis test, the gradient check), ``log_density(θ)``
  → (n,); or, in potential form, ``grad_potential(θ)`` and ``potential(θ)`` with U = −log π (the forms may be mixed);
- its stochastic gradient is the exact one plus N(0, v·I) noise, v = ``target.noise_variance`` (0: exact);
- where its gradient (``grad_log_density`` or ``grad_potential``) is a ``staticmethod`` the compiler takes (plain numpy
  on arrays, or a ``numba.njit`` function; no ``self``), the compiled blocks call it on one chain at a time, as θ of
  shape (1, dim) (:func:`sgmcmc.engine.estimators.density_gradient`); a method is called once a step for all the
  chains, on the same blocks, each step run again until every chain's gradient is answered (:mod:`sgmcmc.engine.replay`).
  HMC's and the other Metropolis–Hastings tests take ``log_density`` (or ``potential``) from the compiled blocks when
  it is a ``staticmethod`` too; a method (the gradient, the value or both) is called one chain at a time, in Python
  from the same blocks (:func:`sgmcmc.engine.replay.per_chain`, :func:`sgmcmc.engine.estimators._door`).

**A data model** gives per-example terms, and the runner draws the minibatches (SPEC §1 "Common",
:class:`sgmcmc.targets.data.DataTarget`: ∇Ũ = −(N/n) Σ_{i∈S̃} ∇log p(x_i | θ) − ∇log p(θ)):

- ``n_data`` (int), N;
- ``grad_log_likelihood(θ, index)`` → (n, b, dim), ∇log p(x_i | θ) of the examples ``index`` (n, b) (integers);
- ``grad_log_prior(θ)`` → (n, dim);
- optionally ``log_likelihood(θ, index)`` → (n, b) and ``log_prior(θ)`` → (n,) (U(θ) for HMC and the check);
- optionally ``grad_log_likelihood_sums(θ, index, with_scatter)`` → (Σ_i ∇log p(x_i | θ) (n, dim), Σ_i (g_i − ḡ)²
  (n, dim), or zeros without ``with_scatter``): the same gradients summed over each chain's examples without the
  (n, b, dim) array (a model with many parameters; a model in JAX has it), taken where it serves (plain minibatches,
  ``noise_estimate`` zero or the running diagonal one) and checked against ``grad_log_likelihood`` at θ₀;

it runs on the engine's compiled blocks (the same integrators and estimators as a data model on rows, below), each
step run again until every chain's calls are answered, with one call of ``grad_log_likelihood`` and one of
``grad_log_prior`` for all the chains a step (:mod:`sgmcmc.engine.replay`; the rows of θ are then the calls asked,
not the chains: with the control variates, each chain's θ and the centre), for the samplers, noise estimates and
estimators that take no pass of ∇U or U over all the data: every ``noise_estimate`` (the default ``known`` one's
covariance of the rows' gradients over all the data from ``grad_log_likelihood`` called on chunks of rows for all the
chains at once: :func:`sgmcmc.engine.replay.row_covariance`), plain minibatches or the control variates, with one
gradient a step. HMC's and SGHMC + MH's U, naive SGHMC's trajectory, SVRG's renewals and pSGLD's stationary
preconditioner call the model one chain at a time, in Python from the same blocks (θ (1, dim), the chain's rows' indices
(1, b): :func:`sgmcmc.engine.replay.per_chain`, said in one line: slower than all the chains at once).

**A data model on rows** is the same, written so that the compiled blocks run it (no formula to name): per chain,
on the rows of one array, with functions the compiler takes (plain numpy on arrays, or ``numba.njit`` functions; no
``self``, so ``staticmethod``s or module functions):

- ``n_data`` and ``data``, an array (n_data, width): row i is example x_i (its inputs and its response);
- ``row_gradients(θ, rows)`` → (m, dim), ∇log p(x_i | θ) of the rows (m, width) for one chain's θ (dim,);
- ``prior_gradient(θ)`` → (dim,), ∇log p(θ);
- optionally ``row_log_likelihoods(θ, rows)`` → (m,) and ``prior_log_density(θ)`` → a float (U(θ) for HMC's
  Metropolis–Hastings test, which the compiled blocks take from them too, and the check);
- optionally ``row_gradient_sums(θ, rows)`` → (Σ_i g_i (dim,), Σ_i (g_i − ḡ)² (dim,)), the same gradients summed
  without the (m, dim) array, for a model with many parameters: the blocks take it where it serves (plain
  minibatches, ``noise_estimate`` zero, or running with ``running_form=diagonal``;
  :func:`sgmcmc.engine.estimators.sums_gradient`). It is checked against ``row_gradients`` when the model is loaded.
  Written ``row_gradient_sums(θ, rows, with_scatter)``, it is told whether the second sum is wanted.

The samplers that take one gradient a step (SGLD, SGRLD, SGHMC, the SGRHMCs, SGNHT, CCAdL, BAOAB, BADODAB, pSGLD with
its running preconditioner; with ``noise_estimate`` zero, running, or known: the minibatches' covariance over all
the rows, :func:`sgmcmc.engine.estimators.minibatch_gradient`) then run on the engine's compiled blocks
(:mod:`sgmcmc.engine.driver`); if the compiler refuses a function, the run says so in one line, with what numba
could not type and where, and the compiled blocks call the model's functions in Python (numba's object mode, one chain
at a time: the same samples, slower), or, where even that does not compile, run uncompiled (the engine's Python path,
much slower). Everything else sees it through the contract above (:class:`RowModel`).

**The checks** (:func:`check_model`, at build time, before any run folder exists): the required methods are there,
``dim`` (and ``n_data``) are positive integers, θ₀ (for two chain counts) and every value at θ₀ have the promised
shape and are finite, the gradient agrees with central differences of the log density (or of the log-likelihood of
up to 256 examples, and of the log prior) along random directions at θ₀ and near it (a warning says when a missing
value method leaves it out), an exact density's grid is increasing and holds its mass 1, and the metric is positive.
Each failure is a :class:`UserModelError`, one line naming
``target.model`` and what to fix. The samplers' D/Q checks then run on it as on every target
(:func:`sgmcmc.experiment._check_at_start`). The model's file, as loaded, is copied into the run folder
(``model.py``), and its SHA-256 in the checkpoints makes a resume with an edited file a one-line refusal.

Loading: ``target.model`` is ``path/to/file.py:ClassName`` (a file, relative to the working folder) or
``package.module.ClassName`` / ``package.module:ClassName`` (an importable class, as Hydra's ``_target_``);
``target.options`` are its keyword arguments. From Python, :func:`user_target` wraps a model object.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import logging
import os
import sys
from types import ModuleType
import warnings
from pathlib import Path
from typing import Optional

import numpy as np

from sgmcmc.diagnostics.quadrature import bin_masses
from sgmcmc.geometry import DiagonalMetric, IdentityMetric
from sgmcmc.targets.base import Target
from sgmcmc.targets.data import DataTarget

log = logging.getLogger(__name__)

# chains and examples of the checks at θ₀ (and a second chain count for initial_position); directions and the relative
# tolerance of the gradient check
CHECK_CHAINS, OTHER_CHAINS, CHECK_EXAMPLES, CHECK_DIRECTIONS = 3, 5, 256, 2
# the most numbers (chains × examples × dim) of the per-example gradients the checks ask for: a model with many
# parameters is checked on fewer examples than CHECK_EXAMPLES (the BNN's 79,510: 17 examples a chain, not 256)
CHECK_NUMBERS = 1 << 22
# the rows a call of grad_log_likelihood_sums sums over in a full-data gradient
SUMS_CHUNK = 5000
GRADIENT_TOLERANCE = 1e-3  # relative: a factor 2 or a sign is 1/3 or 1
# the exact density's mass on its KL grid (quadrature) must be 1 within this: normalised, and the grid covers it
GRID_MASS_TOLERANCE = 0.02


class UserModelError(ValueError):
    """A user's model breaks the contract (one line, naming ``target.model``)."""


def _first_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def load_model_class(spec: str):
    """The class (or object) named by ``spec``: ``file.py:Class``, ``package.module:Class`` or
    ``package.module.Class``; or the module itself, ``file.py``, for a model in blackjax's form written as module-level
    functions (:mod:`sgmcmc.targets.jax_model`)."""
    if spec == "???":  # Hydra's mandatory value, left unset
        raise UserModelError("target.model is not set: give target.model=path/to/file.py:ClassName or "
                             "package.module.ClassName")
    # a model in JAX makes its arrays when its file is imported: in float64 only if JAX starts with it on (JAX reads
    # this when it is first imported; sgmcmc.targets.jax_model switches it on too, for a JAX imported before)
    os.environ.setdefault("JAX_ENABLE_X64", "True")
    where, colon, attribute = spec.rpartition(":")
    if not colon and spec.endswith(".py"):
        where, attribute = spec, None
    elif not colon:
        where, _, attribute = spec.rpartition(".")
    if not where or attribute == "":
        raise UserModelError(f"target.model={spec}: expected path/to/file.py:ClassName or package.module.ClassName")
    if where.endswith(".py"):
        path = Path(where)
        if not path.is_file():
            raise UserModelError(f"target.model={spec}: no file {path} (the path is relative to the working folder "
                                 f"{Path.cwd()})")
        _search(path.resolve().parent)  # as `python file.py` would: the file may import its siblings
        name = f"sgmcmc_user_model_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as error:  # the user's file: any error it raises is theirs to fix
            sys.modules.pop(name, None)
            raise UserModelError(f"target.model={spec}: {path} does not import ({_first_line(error)})") from None
    else:
        _search(Path.cwd())  # as `python -c "import package.module"` would from the working folder
        try:
            module = importlib.import_module(where)
        except Exception as error:
            raise UserModelError(f"target.model={spec}: module {where} does not import ({_first_line(error)})") from None
    if attribute is None:
        return module
    try:
        model_class = getattr(module, attribute)
    except AttributeError:
        raise UserModelError(f"target.model={spec}: {where} has no {attribute}") from None
    return model_class


def _search(folder: Path) -> None:
    """Put ``folder`` on the import path (once)."""
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def _source_file(model) -> Optional[Path]:
    model = getattr(model, "wrapped", model)
    module = model if isinstance(model, ModuleType) else sys.modules.get(getattr(model, "__module__", None)
                                                                          or type(model).__module__)
    path = getattr(module, "__file__", None)
    return Path(path) if path else None


class _UserTarget:
    """What both kinds of user target share: the model, its name, optional methods and metrics."""

    spec: str
    model: object  # the user's model object

    def _setup(self, model, spec: str) -> None:
        self.model, self.spec = model, spec
        self.name = "custom"
        # the model's source as it was loaded: copied into the run folder, and its hash in the checkpoints (a resume
        # with an edited file is refused)
        source = _source_file(model)
        self._source = source.read_bytes() if source is not None and source.is_file() else None
        self._metric = model.metric() if hasattr(model, "metric") else IdentityMetric()
        self._moments = None
        if hasattr(model, "exact_moments"):
            mean, second = model.exact_moments()
            self._moments = (np.asarray(mean, dtype=float), np.asarray(second, dtype=float))
        elif hasattr(model, "reference_samples"):
            reference = np.asarray(model.reference_samples(), dtype=float)
            if reference.ndim != 2 or reference.shape[1] != self.dim or reference.shape[0] < 2:
                raise UserModelError(f"{self._where}: reference_samples() must return (m, {self.dim}) with m >= 2; "
                                     f"got {reference.shape}")
            self._moments = (reference.mean(axis=0), (reference**2).mean(axis=0))
        if self._moments is not None and any(part.shape != (self.dim,) or not np.all(np.isfinite(part))
                                             for part in self._moments):
            raise UserModelError(f"{self._where}: the exact moments must be two finite arrays of shape ({self.dim},)")
        names = self.parameter_names()
        if names is not None and len(names) != self.dim:
            raise UserModelError(f"{self._where}: parameter_names has {len(names)} names for dim = {self.dim}")
        self.has_exact_moments = self._moments is not None
        self.has_exact_density = (self.has_exact_moments and self.dim <= 2 and hasattr(model, "exact_log_density")
                                  and hasattr(model, "histogram_edges"))

    @property
    def _where(self) -> str:
        return f"target.model={self.spec}"

    def initial_position(self, n_chains, rng):
        if hasattr(self.model, "initial_position"):
            return np.asarray(self.model.initial_position(int(n_chains), rng), dtype=float)
        return np.zeros((int(n_chains), self.dim))

    def default_metric(self) -> DiagonalMetric:
        return self._metric

    def exact_moments(self):
        if self._moments is None:
            return super().exact_moments()
        return self._moments

    def log_density(self, theta):
        if not self.has_exact_density:
            return super().log_density(theta)
        return np.asarray(self.model.exact_log_density(theta), dtype=float)

    def histogram_edges(self):
        if not self.has_exact_density:
            return super().histogram_edges()
        return self.model.histogram_edges()

    def parameter_names(self) -> Optional[list[str]]:
        names = getattr(self.model, "parameter_names", None)
        return None if names is None else [str(name) for name in names]

    def source_sha256(self) -> Optional[str]:
        return None if self._source is None else hashlib.sha256(self._source).hexdigest()

    def write_artifacts(self, folder, theta) -> list[str]:
        """The model's source file as it was loaded (``model.py``), so the run folder says what it sampled."""
        if self._source is None:
            return []
        (Path(folder) / "model.py").write_bytes(self._source)
        return ["model.py"]

    def checkpoint_state(self) -> Optional[dict]:
        """The hash of the model's source, so that a resume with another file is refused (:meth:`restore_state`)."""
        digest = self.source_sha256()
        return None if digest is None else {"model_sha256": digest}

    def restore_state(self, state: dict) -> None:
        from sgmcmc.checkpoint import CheckpointError

        if state.get("model_sha256") != self.source_sha256():
            raise CheckpointError(f"{self._where}: the model's file differs from the one the run started with (its "
                                  "SHA-256 in the checkpoint); restore that file (the run folder's model.py) or start "
                                  "a new run")


class UserDensityTarget(_UserTarget, Target):
    """A density model (see the module docstring): U = −log π, ∇Ũ = ∇U + N(0, v·I)."""

    def __init__(self, model, spec: str = "<python object>", noise_variance: float = 0.0):
        self.dim = model.dim
        self.noise_variance = float(noise_variance)
        # either form of each, mixed as the model likes: U = potential or −log_density, ∇U = grad_potential or
        # −grad_log_density
        self.value_name = "potential" if hasattr(model, "potential") else "log_density"
        self.gradient_name = "grad_potential" if hasattr(model, "grad_potential") else "grad_log_density"
        self.has_potential = hasattr(model, self.value_name)
        self._setup(model, spec)

    def potential(self, theta):
        if not self.has_potential:
            raise TypeError(f"{self._where}: the model has no log_density or potential")
        value = np.asarray(getattr(self.model, self.value_name)(theta), dtype=float)
        return value if self.value_name == "potential" else -value

    def gradient(self, theta):
        value = np.asarray(getattr(self.model, self.gradient_name)(theta), dtype=float)
        return value if self.gradient_name == "grad_potential" else -value

    def stochastic_gradient(self, theta, rng):
        """∇U(θ) + √v·N(0, I): one standard normal array of shape θ.shape, also when v = 0 (the compiled blocks
        draw the same numbers)."""
        return self.gradient(theta) + np.sqrt(self.noise_variance) * rng.standard_normal(np.shape(theta))

    def noise_covariance(self, theta):
        return self.variance

    @property
    def variance(self) -> np.ndarray:
        """V = v·I, the covariance of the gradient noise (as :class:`~sgmcmc.targets.base.SyntheticTarget`'s, which
        ``density_functions`` hands the engine)."""
        return self.noise_variance * np.eye(self.dim)

    @property
    def _noise_factor(self) -> np.ndarray:
        return np.sqrt(self.noise_variance) * np.eye(self.dim)

    def engine_functions(self) -> Optional[dict]:
        """A gradient that is a ``staticmethod`` (see the module docstring), its sign (−1 for ∇log π) and the gradient
        noise's factor √v·I, and the value (U or log π) where it is a staticmethod too, for the engine
        (:func:`sgmcmc.engine.estimators.source_of`); for a method, ``vectorised_gradient`` (∇U of all the chains at
        once: :func:`sgmcmc.engine.replay.on_replay`) with the noise's factor."""
        gradient = inspect.getattr_static(type(self.model), self.gradient_name, None)
        if not isinstance(gradient, staticmethod):  # all the chains at once, each step (sgmcmc.engine.replay)
            return {"vectorised_gradient": self.gradient, "noise_factor": self._noise_factor,
                    "noise_covariance": self.variance,
                    **({"vectorised_potential": self.potential} if self.has_potential else {})}
        functions = {"gradient": gradient.__func__, "sign": 1.0 if self.gradient_name == "grad_potential" else -1.0,
                     "noise_factor": self._noise_factor, "noise_covariance": self.variance}
        value = inspect.getattr_static(type(self.model), self.value_name, None)
        if self.has_potential and isinstance(value, staticmethod):
            functions.update(potential=value.__func__, potential_sign=1.0 if self.value_name == "potential" else -1.0)
        elif self.has_potential:  # a method: U of one chain at a time, called in Python from the compiled blocks
            functions.update(potential=self.potential, potential_sign=1.0)
        return functions


class UserDataTarget(_UserTarget, DataTarget):
    """A data model (see the module docstring), minibatched by :class:`~sgmcmc.targets.data.DataTarget`."""

    def __init__(self, model, spec: str = "<python object>", batch_size: Optional[int] = None):
        self.dim = model.dim
        n_data = model.n_data
        DataTarget.__init__(self, n_data, min(DEFAULT_BATCH_SIZE, n_data) if batch_size is None else batch_size)
        self.has_potential = hasattr(model, "log_likelihood") and hasattr(model, "log_prior")
        self._setup(model, spec)

    def log_likelihood_gradients(self, theta, index):
        return np.asarray(self.model.grad_log_likelihood(theta, index), dtype=float)

    def log_prior_gradient(self, theta):
        return np.asarray(self.model.grad_log_prior(theta), dtype=float)

    def gradient(self, theta):
        """Full-data ∇U(θ) (c, d): from ``grad_log_likelihood_sums`` over chunks of rows where the model has it (no
        (c, b, d) array: a model with many parameters), else :meth:`DataTarget.gradient`'s per-example chunks."""
        if not hasattr(self.model, "grad_log_likelihood_sums"):
            return DataTarget.gradient(self, theta)
        theta = np.asarray(theta, dtype=float)
        total = np.zeros(theta.shape)
        for start in range(0, self.n_data, SUMS_CHUNK):
            index = np.arange(start, min(start + SUMS_CHUNK, self.n_data))
            sums = self.model.grad_log_likelihood_sums(theta, np.broadcast_to(index, (theta.shape[0], index.size)),
                                                       False)
            total += np.asarray(sums[0], dtype=float)
        return -total - self.log_prior_gradient(theta)

    def potential(self, theta):
        """U(θ) = −Σ_i log p(x_i | θ) − log p(θ), summed over the data in chunks."""
        if not self.has_potential:
            raise TypeError(f"{self._where}: the model has no log_likelihood and log_prior")
        theta = np.asarray(theta, dtype=float)
        total = np.zeros(theta.shape[0])
        per_chunk = max(1, self._chunk_elements // max(1, theta.shape[0] * self.dim))
        for start in range(0, self.n_data, per_chunk):
            index = np.arange(start, min(start + per_chunk, self.n_data))
            total += np.asarray(self.model.log_likelihood(theta, np.broadcast_to(index, (theta.shape[0], index.size))),
                                dtype=float).sum(axis=1)
        return -total - np.asarray(self.model.log_prior(theta), dtype=float)

    def engine_functions(self) -> Optional[dict]:
        """What a model on rows hands the engine (:func:`sgmcmc.engine.estimators.source_of`): its functions (with
        ``row_gradient_sums``, ``row_log_likelihoods`` and ``prior_log_density`` where it has them: the last two are a
        Metropolis–Hastings test's U), data and N; the vectorised form's ``vectorised_row_gradients(θ (c, d), index (c,
        n))`` → (c, n, d) and ``vectorised_prior_gradient(θ)`` → (c, d), with ``vectorised_row_log_likelihoods`` (c, n)
        and ``vectorised_prior_log_density`` (c,) where it has them (:func:`sgmcmc.engine.replay.on_replay`,
        :func:`sgmcmc.engine.replay.per_chain`)."""
        if not isinstance(self.model, RowModel):
            functions = {"vectorised_row_gradients": self.log_likelihood_gradients,
                         "vectorised_prior_gradient": self.log_prior_gradient, "n_data": self.n_data}
            if self.has_potential:
                functions.update(vectorised_row_log_likelihoods=self.model.log_likelihood,
                                 vectorised_prior_log_density=self.model.log_prior)
            if hasattr(self.model, "grad_log_likelihood_sums"):
                functions["vectorised_row_gradient_sums"] = self.model.grad_log_likelihood_sums
            return functions
        model = self.model.wrapped
        functions = {"row_gradients": model.row_gradients, "prior_gradient": model.prior_gradient,
                     "data": self.model.data, "n_data": self.n_data}
        for name in ("row_gradient_sums", "row_log_likelihoods", "prior_log_density"):
            if hasattr(model, name):
                functions[name] = getattr(model, name)
        return functions


class RowModel:
    """A data model in the compiled form (the module docstring's "A data model on rows"), seen through the
    vectorised contract (``grad_log_likelihood(θ, index)`` and the rest) that the checks and the generic recipe step call."""

    def __init__(self, model):
        self.wrapped = model
        self.data = np.ascontiguousarray(model.data, dtype=float)
        if self.data.ndim != 2 or self.data.shape[0] != model.n_data:
            raise UserModelError(f"data must be an array (n_data, width) = ({model.n_data}, ...); got shape "
                                 f"{self.data.shape}")
        if hasattr(model, "row_gradient_sums"):
            self._check_sums()
        if hasattr(model, "row_log_likelihoods"):
            self.log_likelihood = self._log_likelihood
        if hasattr(model, "prior_log_density"):
            self.log_prior = self._log_prior

    def __getattr__(self, name):
        return getattr(self.wrapped, name)

    def _check_sums(self):
        """``row_gradient_sums`` against ``row_gradients`` at a point near 0 on the first (up to 16) rows."""
        theta = 0.1 * np.random.default_rng(0).standard_normal(self.wrapped.dim)
        rows = self.data[:16]
        gradients = np.asarray(self.wrapped.row_gradients(theta, rows), dtype=float)
        function = self.wrapped.row_gradient_sums
        taken = len(inspect.signature(getattr(function, "py_func", function)).parameters)
        sums = function(*(theta, rows, True)[:taken])  # with_scatter, where it takes one
        disagreement = sums_disagreement(sums, gradients, axis=0)
        if disagreement is not None:
            name, difference = disagreement
            raise UserModelError(f"row_gradient_sums' {name} disagrees with row_gradients' on the first {len(rows)} "
                                 f"rows (largest difference {difference}): make the two agree, or drop "
                                 "row_gradient_sums")

    def grad_log_likelihood(self, theta, index):
        return np.stack([self.wrapped.row_gradients(t, self.data[i]) for t, i in zip(theta, index)])

    def grad_log_prior(self, theta):
        return np.stack([self.wrapped.prior_gradient(t) for t in theta])

    def _log_likelihood(self, theta, index):
        return np.stack([self.wrapped.row_log_likelihoods(t, self.data[i]) for t, i in zip(theta, index)])

    def _log_prior(self, theta):
        return np.array([self.wrapped.prior_log_density(t) for t in theta])


ROW_METHODS = ("row_gradients", "prior_gradient")
BLACKJAX_FORM = ("logdensity_fn", "loglikelihood_fn")  # a model in JAX (sgmcmc.targets.jax_model)
DEFAULT_BATCH_SIZE = 32  # n of a data model when target.batch_size is null (at most N)
DATA_METHODS = ("grad_log_likelihood", "grad_log_prior")


def user_target(model, spec: str = "<python object>", batch_size: Optional[int] = None,
                noise_variance: float = 0.0, seed: int = 0) -> Target:
    """The checked target of a model object (a data model when it has ``n_data``, else a density model); a
    :class:`UserModelError` naming ``spec`` when it breaks the contract (:func:`check_model`). ``batch_size`` is a data
    model's n (None: min(32, N)); ``noise_variance`` a density model's v."""
    where = f"target.model={spec}"
    if any(hasattr(model, name) for name in BLACKJAX_FORM):
        model = _jax_model(model, where)
    if not isinstance(getattr(model, "dim", None), (int, np.integer)) or isinstance(model.dim, bool) or model.dim < 1:
        raise UserModelError(f"{where}: the model needs dim, a positive integer (got {getattr(model, 'dim', None)!r})")
    data = hasattr(model, "n_data")
    if data and hasattr(model, "data") and all(callable(getattr(model, name, None)) for name in ROW_METHODS):
        try:
            model = RowModel(model)
        except UserModelError as error:
            raise UserModelError(f"{where}: {error}") from None
    missing = [name for name in DATA_METHODS if not callable(getattr(model, name, None))] if data else []
    if not data and not any(callable(getattr(model, name, None)) for name in ("grad_log_density", "grad_potential")):
        missing.append("grad_log_density (or grad_potential)")
    if missing:
        kind = "a data model (it has n_data)" if data else "a density model"
        raise UserModelError(f"{where}: the model has no {', '.join(missing)}; {kind} needs it (see sgmcmc/targets/user.py)")
    if data and noise_variance:
        raise UserModelError(f"target.noise_variance={noise_variance} is for a density model; {spec} is a data model, "
                             "whose gradient noise comes from its minibatches (target.batch_size): leave it at 0")
    if not data and batch_size is not None:
        raise UserModelError(f"target.batch_size={batch_size} is for a data model; {spec} is a density model (no n_data "
                             "and per-example gradients to minibatch): leave it null")
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if data:
                n_data = model.n_data
                if not isinstance(n_data, (int, np.integer)) or isinstance(n_data, bool) or n_data < 2:
                    raise UserModelError(f"{where}: n_data must be an integer >= 2 (got {n_data!r})")
                if batch_size is not None and not 1 <= batch_size <= n_data:
                    raise UserModelError(f"target.batch_size={batch_size} is invalid for {spec}: allowed 1..{n_data} "
                                         f"(n_data)")
                target = UserDataTarget(model, spec, batch_size)
            else:
                target = UserDensityTarget(model, spec, noise_variance)
        except UserModelError:
            raise
        except Exception as error:
            raise UserModelError(f"{where}: setting the model up raised {_first_line(error)}") from None
        check_model(target, np.random.default_rng(seed))
    return target


def _jax_model(model, where: str):
    """``model``, in blackjax's form, as the contract's vectorised form (:class:`sgmcmc.targets.jax_model.JaxModel`).
    Imported here, not at the top: JAX is an optional extra (``pip install -e ".[jax]"``), needed by these models
    only."""
    try:
        from sgmcmc.targets.jax_model import JaxModel, JaxModelError
    except ImportError as error:
        raise UserModelError(f"{where}: a model in blackjax's form (logdensity_fn or loglikelihood_fn) needs JAX, "
                             f"which does not import ({_first_line(error)}): pip install -e \".[jax]\"") from None
    try:
        return JaxModel(model)
    except JaxModelError as error:
        raise UserModelError(f"{where}: {error}") from None


def make_user_target(model: str, options: Optional[dict] = None, batch_size: Optional[int] = None,
                     noise_variance: float = 0.0) -> Target:
    """``target=custom``: load ``model`` (see :func:`load_model_class`), build it with ``options`` (a class) and check
    it."""
    model_class = load_model_class(model)
    if not inspect.isclass(model_class):  # a module or an object: the model itself
        if options:
            raise UserModelError(f"target.model={model} is not a class, so target.options={options} cannot build it: "
                                 "leave target.options empty")
        return user_target(model_class, model, batch_size, noise_variance)
    try:
        instance = model_class(**(options or {}))
    except Exception as error:
        raise UserModelError(f"target.model={model}: {model_class.__name__}(**target.options) raised "
                             f"{_first_line(error)}") from None
    return user_target(instance, model, batch_size, noise_variance)


def _evaluate(target, name: str, function, *args):
    """``function(*args)`` as an array; a UserModelError naming ``name`` when it raises."""
    try:
        return np.asarray(function(*args))
    except Exception as error:
        raise UserModelError(f"{target._where}: {name} raised {_first_line(error)} at θ₀") from None


def _call(target, name: str, function, *args, shape: tuple):
    """``function(*args)`` as a float array of ``shape``, finite; a UserModelError naming ``name`` otherwise."""
    value = _evaluate(target, name, function, *args)
    try:
        value = value.astype(float)
    except (TypeError, ValueError):
        raise UserModelError(f"{target._where}: {name} returned {value.dtype} values at θ₀; expected numbers") from None
    if value.shape != shape:
        raise UserModelError(f"{target._where}: {name} returned shape {value.shape} at θ₀; expected {shape} "
                             f"(θ has shape (n_chains, dim), chains first)")
    if not np.all(np.isfinite(value)):
        raise UserModelError(f"{target._where}: {name} is not finite at θ₀ (NaN or inf)")
    return value


def _near(theta: np.ndarray, rng) -> np.ndarray:
    """Points near θ₀ for the gradient check (at a symmetric θ₀ such as 0 a gradient of the wrong sign or scale is 0 as
    well): θ₀ + 0.1·(1 + |θ₀|)·z per chain."""
    return theta + 0.1 * (1.0 + np.abs(theta)) * rng.standard_normal(theta.shape)


def _check_gradient(target, name: str, value, gradient, theta: np.ndarray, rng) -> None:
    """:func:`_check_directional` of ``gradient`` (θ → (n, d)) at θ₀ and at points near it where ``value`` is finite
    there (a bounded support may exclude them)."""
    _check_directional(target, name, value, _call(target, f"the gradient of {name}", gradient, theta,
                                                         shape=theta.shape), theta, rng)
    nearby = _near(theta, rng)
    with np.errstate(all="ignore"):
        try:
            inside = np.all(np.isfinite(np.asarray(value(nearby), dtype=float)))
        except Exception:
            inside = False
    if inside:
        _check_directional(target, name, value, _call(target, f"the gradient of {name}", gradient, nearby,
                                                             shape=nearby.shape), nearby, rng)


def _check_directional(target, name: str, value, gradient: np.ndarray, theta: np.ndarray, rng) -> None:
    """The gradient (n, d) of ``value`` (θ → (n,)) against central differences along random directions u, each
    coordinate scaled by 1 + |θ_j| (so a coordinate of size 1000 does not set the step of one of size 0.01).

    The step h = eps^(1/3) balances truncation (h²) and rounding (eps·|f|/h), eps the machine precision of the values
    the model returns (float32 models are checked at their own precision); the tolerance is GRADIENT_TOLERANCE of the
    derivatives' size plus 100 times that rounding error (a value of 1e6 at its mode has a rounding error far above its
    zero derivative), plus ten times the step's truncation error, estimated from the step 2h (at a θ₀ where the
    derivative is 0, such as the banana's, h²·f‴ is all the difference there is)."""
    n = theta.shape[0]
    for _ in range(CHECK_DIRECTIONS):
        direction = rng.standard_normal(theta.shape) * (1.0 + np.abs(theta))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        centre = _evaluate(target, name, value, theta)
        eps = np.finfo(centre.dtype if centre.dtype in (np.float32, np.float16) else np.float64).eps
        step = eps ** (1 / 3) * (1.0 + np.abs(theta).max(axis=1))
        upper = _call(target, name, value, theta + step[:, None] * direction, shape=(n,))
        lower = _call(target, name, value, theta - step[:, None] * direction, shape=(n,))
        numeric = (upper - lower) / (2 * step)
        wider = (_call(target, name, value, theta + 2 * step[:, None] * direction, shape=(n,))
                 - _call(target, name, value, theta - 2 * step[:, None] * direction, shape=(n,))) / (4 * step)
        truncation = np.abs(wider - numeric) / 3  # the h² error of the step, from the step 2h (Richardson)
        analytic = np.einsum("cd,cd->c", gradient, direction)
        rounding = eps * (np.abs(upper) + np.abs(lower)) / (2 * step)
        allowed = (GRADIENT_TOLERANCE * (np.abs(analytic) + np.abs(numeric)) + 100 * rounding + 10 * truncation
                   + 1e-12)
        worst = int(np.argmax(np.abs(numeric - analytic) - allowed))
        if abs(numeric[worst] - analytic[worst]) > allowed[worst]:
            raise UserModelError(f"{target._where}: the gradient of {name} disagrees with its central differences near "
                                 f"θ₀ (directional derivative {analytic[worst]:.6g} against {numeric[worst]:.6g}); "
                                 "check its sign and scale")


def _skipped(target, what: str) -> None:
    log.warning("%s: %s (the gradient check needs it)", target._where, what)


def check_model(target, rng: np.random.Generator) -> None:
    """The contract checks of a user target at θ₀ (see the module docstring); a :class:`UserModelError` otherwise."""
    model, n, d = target.model, CHECK_CHAINS, target.dim
    theta = _call(target, "initial_position", target.initial_position, n, rng, shape=(n, d))
    _call(target, "initial_position", target.initial_position, OTHER_CHAINS, rng, shape=(OTHER_CHAINS, d))
    if isinstance(target, UserDataTarget):
        examples = min(target.n_data, max(2, min(CHECK_EXAMPLES, CHECK_NUMBERS // (n * d))))
        index = np.stack([rng.choice(target.n_data, size=examples, replace=False) for _ in range(n)])
        b = index.shape[1]
        gradients = _call(target, "grad_log_likelihood", model.grad_log_likelihood, theta, index, shape=(n, b, d))
        if hasattr(model, "grad_log_likelihood_sums"):
            for with_scatter in (False, True):  # the first sum alone, as plain minibatches ask, then with the second
                _check_sums(target, _call(target, "grad_log_likelihood_sums", model.grad_log_likelihood_sums, theta,
                                          index, with_scatter, shape=(2, n, d)), gradients, with_scatter)
        _call(target, "grad_log_prior", model.grad_log_prior, theta, shape=(n, d))
        if hasattr(model, "log_likelihood"):
            _call(target, "log_likelihood", model.log_likelihood, theta, index, shape=(n, b))
            _check_gradient(target, "log_likelihood", lambda x: np.asarray(model.log_likelihood(x, index)).sum(axis=1),
                            lambda x: np.asarray(model.grad_log_likelihood(x, index)).sum(axis=1), theta, rng)
        else:
            _skipped(target, "no log_likelihood: grad_log_likelihood is not checked against it")
        if hasattr(model, "log_prior"):
            _call(target, "log_prior", model.log_prior, theta, shape=(n,))
            _check_gradient(target, "log_prior", model.log_prior, model.grad_log_prior, theta, rng)
        else:
            _skipped(target, "no log_prior: grad_log_prior is not checked against it")
    else:
        _call(target, target.gradient_name, getattr(model, target.gradient_name), theta, shape=(n, d))
        if target.has_potential:
            _call(target, target.value_name, getattr(model, target.value_name), theta, shape=(n,))
            sign = 1.0 if target.value_name == "potential" else -1.0  # U, in the precision the model returns it
            value = getattr(model, target.value_name)
            _check_gradient(target, target.value_name, lambda x: sign * np.asarray(value(x)), target.gradient, theta, rng)
        else:
            _skipped(target, f"no log_density (or potential): {target.gradient_name} is not checked against it")
    if target.has_exact_density:
        _call(target, "exact_log_density", model.exact_log_density, theta, shape=(n,))
        _check_grid(target)
    metric = target.default_metric()
    if not isinstance(metric, DiagonalMetric):
        raise UserModelError(f"{target._where}: metric() must return a sgmcmc.geometry.DiagonalMetric; got "
                             f"{type(metric).__name__}")
    scale = _call(target, "metric().inverse_sqrt", metric.inverse_sqrt, theta, shape=(n, d))
    _call(target, "metric().inverse_sqrt_derivative", metric.inverse_sqrt_derivative, theta, shape=(n, d))
    if np.any(scale <= 0):
        raise UserModelError(f"{target._where}: metric().inverse_sqrt must be positive at θ₀ (G(θ)^(-1/2) is a "
                             "positive diagonal)")


def sums_disagreement(sums: tuple, gradients: np.ndarray, axis: int, with_scatter: bool = True) -> Optional[tuple]:
    """The first of a model's sums (Σ_i g_i, and with ``with_scatter`` Σ_i (g_i − ḡ)²) that is not those of its
    per-example ``gradients`` summed over ``axis`` (to 1e-8 relative, 1e-10 absolute), as (its name, the largest
    difference or the wrong shape); None where they agree."""
    expected = (gradients.sum(axis=axis),
                np.sum((gradients - gradients.mean(axis=axis, keepdims=True)) ** 2, axis=axis))
    for name, got, want in list(zip(("Σ g_i", "Σ (g_i − ḡ)²"), sums, expected))[:2 if with_scatter else 1]:
        got = np.asarray(got, dtype=float)
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-8, atol=1e-10):
            return name, np.max(np.abs(got - want)) if got.shape == want.shape else f"shape {got.shape}"
    return None


def _check_sums(target, sums: np.ndarray, gradients: np.ndarray, with_scatter: bool) -> None:
    """``grad_log_likelihood_sums``' (Σ_i g_i, Σ_i (g_i − ḡ)²) (2, n, d), asked ``with_scatter`` or not, against those of
    ``grad_log_likelihood``'s ``gradients`` (n, b, d) on the same rows."""
    disagreement = sums_disagreement(sums, gradients, axis=1, with_scatter=with_scatter)
    if disagreement is not None:
        name, difference = disagreement
        raise UserModelError(f"{target._where}: grad_log_likelihood_sums' {name} (with_scatter={with_scatter}) "
                             f"disagrees with grad_log_likelihood's (largest difference {difference}): make the two "
                             "agree, or drop grad_log_likelihood_sums")


def _check_grid(target) -> None:
    """histogram_edges() as the KL grid needs it (increasing edges: one array for dim 1, two for dim 2), and the exact
    density's mass on it, by the metrics' own quadrature, 1 within GRID_MASS_TOLERANCE."""
    try:
        edges = target.histogram_edges()
        parts = [np.asarray(edges, dtype=float)] if target.dim == 1 else [np.asarray(part, dtype=float) for part in edges]
        valid = len(parts) == target.dim and all(part.ndim == 1 and part.size >= 2 and np.all(np.diff(part) > 0)
                                                 and np.all(np.isfinite(part)) for part in parts)
    except Exception:
        valid = False
    if not valid:
        shape = "an increasing array of bin edges" if target.dim == 1 else "a tuple of two increasing arrays of bin edges"
        raise UserModelError(f"{target._where}: histogram_edges() must return {shape}")
    try:
        mass = float(np.sum(bin_masses(target.log_density, edges, target.dim)))
    except Exception as error:
        raise UserModelError(f"{target._where}: the exact density's quadrature on histogram_edges() raised "
                             f"{_first_line(error)}") from None
    if not abs(mass - 1.0) <= GRID_MASS_TOLERANCE:
        raise UserModelError(f"{target._where}: exact_log_density integrates to {mass:.4g} over histogram_edges(); it "
                             "must be normalised, and the edges must cover nearly all of its mass")
