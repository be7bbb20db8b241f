"""A model written in JAX, in blackjax's form (issue 35): the project forms every gradient it needs by automatic
differentiation, so a blackjax user's model runs unchanged and nobody writes a gradient by hand.

The model (a class, its instance, or a module: ``target.model=file.py:Name`` or ``target.model=file.py``) has

- ``initial_position``: a PyTree of parameters (an array, a tuple, a dict of arrays, …), every chain's θ₀. θ is its
  flattening (:func:`jax.flatten_util.ravel_pytree`, leaves in the tree's order, each row-major), so ``dim`` is its
  size and the functions below take the PyTree back;
- a **density model**: ``logdensity_fn(params)`` → a scalar, the unnormalised log density (blackjax's
  ``logdensity_fn``); or
- a **data model**: ``loglikelihood_fn(params, x)`` → a scalar, log p(x | params) of one example x, and
  ``logprior_fn(params)`` → a scalar (blackjax's SG-MCMC ``logdensity_estimator`` takes the same two), with ``data``:
  a PyTree of arrays whose leaves share their first axis N (e.g. ``(X, y)``); x is each leaf's row i.

Everything else of the user-model contract (:mod:`sgmcmc.targets.user`) is optional and read as there
(``exact_moments``, ``metric``, ``parameter_names``: by default the leaves' paths, ``w[0, 1]``).

What the engine then gets (:class:`JaxModel`, the contract's vectorised form; each jitted once per shape, in float64):

- density: ``grad_log_density(θ)`` (c, d) = ``vmap(grad(logdensity_fn))`` over the chains, ``log_density(θ)`` (c,);
- data: ``grad_log_likelihood(θ, index)`` (c, b, d) = per-example gradients ``vmap(grad(loglikelihood_fn))`` over the
  b rows ``index`` of each chain, vmapped over the chains; their sums ``grad_log_likelihood_sums(θ, index,
  with_scatter)`` (c, d) = ``grad`` of the rows' summed log-likelihood (one backward pass, no (c, b, d) array: what
  plain minibatches take; the scatter Σ_i (g_i − ḡ)², which the running diagonal estimate asks for, is formed from the
  per-example gradients inside XLA); ``log_likelihood(θ, index)`` (c, b);
  ``grad_log_prior(θ)`` (c, d) and ``log_prior(θ)`` (c,).

Each is one jitted call for all the chains of a step (:mod:`sgmcmc.engine.replay`). A function JAX cannot trace (a
Python ``if`` on a value, a conversion to a Python number) is refused at build time in one line naming it. JAX runs in
float64 (``jax_enable_x64``): the gradients agree with a hand-written float64 model to rounding.
"""

from __future__ import annotations

import itertools
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

jax.config.update("jax_enable_x64", True)

DENSITY = ("logdensity_fn",)
DATA = ("loglikelihood_fn", "logprior_fn")


class JaxModelError(ValueError):
    """The model cannot be used as it is: one line saying what to fix (the caller adds ``target.model=…``)."""


def is_jax_model(model) -> bool:
    """Whether ``model`` is in blackjax's form (it names ``logdensity_fn`` or ``loglikelihood_fn``)."""
    return any(hasattr(model, name) for name in (*DENSITY, *DATA))


def _float64(tree, every: bool):
    """The leaves as numpy arrays, the floating ones (``every``: all of them) in float64: a model file that made its
    arrays before JAX's float64 was on holds float32 leaves, and ``ravel_pytree``'s unravel casts θ back to its
    leaves' types."""
    def leaf64(leaf):
        leaf = np.asarray(leaf)
        return leaf.astype(float) if every or np.issubdtype(leaf.dtype, np.floating) else leaf

    return jax.tree_util.tree_map(leaf64, tree)


def leaf_names(tree) -> list[str]:
    """One name per flattened coordinate: the leaf's path (``keystr``; ``theta`` for a bare array) and its index."""
    names = []
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        key = jax.tree_util.keystr(path) or "theta"
        shape = np.shape(leaf)
        if not shape:
            names.append(key)
            continue
        names.extend(f"{key}[{', '.join(map(str, index))}]" for index in itertools.product(*map(range, shape)))
    return names


class JaxModel:
    """A model in blackjax's form seen through the user-model contract's vectorised form (module docstring)."""

    def __init__(self, model):
        self.wrapped = model
        if not hasattr(model, "initial_position") or callable(model.initial_position):
            raise JaxModelError("a model in blackjax's form needs initial_position, a PyTree of parameters (its "
                                "structure, and every chain's θ₀)")
        position = _float64(model.initial_position, every=True)
        flat, self._unravel = ravel_pytree(position)
        self._start = np.asarray(flat, dtype=float)
        self.dim = int(self._start.size)
        self._names = leaf_names(position)
        if hasattr(model, "logdensity_fn"):
            self._density_model(model.logdensity_fn)
        elif all(hasattr(model, name) for name in DATA):
            self._data_model(model.loglikelihood_fn, model.logprior_fn, model)
        else:
            raise JaxModelError("a data model in blackjax's form needs loglikelihood_fn(params, x), logprior_fn(params) "
                                "and data")

    def __getattr__(self, name):
        if name == "wrapped":
            raise AttributeError(name)
        return getattr(self.wrapped, name)

    @property
    def parameter_names(self) -> list[str]:
        return list(getattr(self.wrapped, "parameter_names", None) or self._names)

    def initial_position(self, n_chains: int, rng) -> np.ndarray:
        """Every chain at ``initial_position`` (blackjax's single starting point)."""
        return np.tile(self._start, (n_chains, 1))

    def _flat(self, function: Callable) -> Callable:
        """``function`` of a PyTree as a function of one flat θ (d,)."""
        return lambda theta, *rest: function(self._unravel(theta), *rest)

    def _gradient(self, function: Callable) -> Callable:
        """∇ of ``function(params, …)`` with respect to params, flattened: (d,)."""
        return lambda theta, *rest: ravel_pytree(jax.grad(function)(self._unravel(theta), *rest))[0]

    # -- a density model -----------------------------------------------------------------------------------------
    def _density_model(self, logdensity: Callable) -> None:
        value = jax.jit(jax.vmap(self._flat(logdensity)))
        gradient = jax.jit(jax.vmap(self._gradient(logdensity)))
        self._functions = {"log_density": value, "grad_log_density": gradient}
        self._traced("logdensity_fn", lambda: (value(self._start[None]), gradient(self._start[None])))

    def log_density(self, theta):
        return np.asarray(self._functions["log_density"](np.asarray(theta, dtype=float)))

    def grad_log_density(self, theta):
        return np.asarray(self._functions["grad_log_density"](np.asarray(theta, dtype=float)))

    # -- a data model --------------------------------------------------------------------------------------------
    def _data_model(self, loglikelihood: Callable, logprior: Callable, model) -> None:
        if not hasattr(model, "data"):
            raise JaxModelError("a data model in blackjax's form needs data, a PyTree of arrays whose leaves share "
                                "their first axis N")
        self._data = jax.tree_util.tree_map(jnp.asarray, _float64(model.data, every=False))
        sizes = {int(np.shape(leaf)[0]) if np.ndim(leaf) else -1 for leaf in jax.tree_util.tree_leaves(self._data)}
        if len(sizes) != 1 or min(sizes) < 2:
            raise JaxModelError(f"data's leaves must share a first axis N >= 2 (got first axes {sorted(sizes)})")
        self.n_data = sizes.pop()

        def rows(data, index):
            return jax.tree_util.tree_map(lambda leaf: leaf[index], data)

        def chain_values(theta, index, data):
            return jax.vmap(self._flat(loglikelihood), in_axes=(None, 0))(theta, rows(data, index))

        def chain_gradients(theta, index, data):
            return jax.vmap(self._gradient(loglikelihood), in_axes=(None, 0))(theta, rows(data, index))

        def chain_sums(theta, index, data):
            return self._gradient(lambda params, rows: jnp.sum(jax.vmap(loglikelihood, in_axes=(None, 0))(
                params, rows)))(theta, rows(data, index))

        def chain_scatters(theta, index, data):
            gradients = chain_gradients(theta, index, data)
            return jnp.sum(gradients, axis=0), jnp.sum((gradients - jnp.mean(gradients, axis=0)) ** 2, axis=0)

        self._functions = {"log_likelihood": jax.jit(jax.vmap(chain_values, in_axes=(0, 0, None))),
                           "grad_log_likelihood": jax.jit(jax.vmap(chain_gradients, in_axes=(0, 0, None))),
                           "grad_log_likelihood_sum": jax.jit(jax.vmap(chain_sums, in_axes=(0, 0, None))),
                           "grad_log_likelihood_scatter": jax.jit(jax.vmap(chain_scatters, in_axes=(0, 0, None))),
                           "log_prior": jax.jit(jax.vmap(self._flat(logprior))),
                           "grad_log_prior": jax.jit(jax.vmap(self._gradient(logprior)))}
        start, first = self._start[None], np.zeros((1, 1), dtype=np.int64)
        self._traced("loglikelihood_fn", lambda: (self.log_likelihood(start, first),
                                                  self.grad_log_likelihood(start, first)))
        self._traced("logprior_fn", lambda: (self.log_prior(start), self.grad_log_prior(start)))

    def _rows_call(self, name: str, theta, index):
        return np.asarray(self._functions[name](np.asarray(theta, dtype=float), np.asarray(index), self._data))

    def grad_log_likelihood(self, theta, index):
        return self._rows_call("grad_log_likelihood", theta, index)

    def log_likelihood(self, theta, index):
        return self._rows_call("log_likelihood", theta, index)

    def grad_log_likelihood_sums(self, theta, index, with_scatter):
        """(Σ_i ∇log p(x_i | θ) (c, d), and with ``with_scatter`` Σ_i (g_i − ḡ)² (c, d), else zeros) over each chain's
        rows ``index`` (c, b): the sum's gradient, ∇ Σ_i log p(x_i | θ), by one backward pass through the summed
        log-likelihood, so that no (c, b, d) array is made (the BNN's would be 318 MB a chain); the scatter needs the
        per-example gradients, formed inside XLA only ``with_scatter``."""
        if not with_scatter:
            total = self._rows_call("grad_log_likelihood_sum", theta, index)
            return total, np.zeros_like(total)
        total, scatter = self._functions["grad_log_likelihood_scatter"](np.asarray(theta, dtype=float),
                                                                        np.asarray(index), self._data)
        return np.asarray(total), np.asarray(scatter)

    def grad_log_prior(self, theta):
        return np.asarray(self._functions["grad_log_prior"](np.asarray(theta, dtype=float)))

    def log_prior(self, theta):
        return np.asarray(self._functions["log_prior"](np.asarray(theta, dtype=float)))

    # -- the build-time check ------------------------------------------------------------------------------------
    @staticmethod
    def _traced(name: str, call: Callable) -> None:
        """``call()`` (a first jitted evaluation at θ₀), with JAX's refusal to trace ``name`` as one line."""
        try:
            call()
        except (jax.errors.JAXTypeError, jax.errors.JAXIndexError, jax.errors.UnexpectedTracerError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else ""
            raise JaxModelError(f"JAX cannot trace {name} ({type(error).__name__}: {first}); write it in jax.numpy "
                                "without Python branches or conversions on values (jnp.where or jax.lax.cond for a "
                                "branch)") from None
