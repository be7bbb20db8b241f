"""The gradient estimators of the engine, one chain at a time: ∇Ũ(θ) from the functions a target hands over.

An estimator is called through its *source*, a tuple ``(estimate, first, second, data, numbers, energy)``:
``estimate(source, θ, normals, rows, out)`` writes ∇Ũ (d,) at θ (d,) into ``out``, where ``normals`` are the step's
standard normal slots (slots, d) and ``rows`` the step's minibatch (indices into ``data``); ``energy(source, θ)`` is
the exact U(θ) where the model hands it over (a Metropolis–Hastings test's; :func:`formula_potential`,
:func:`density_potential`), else NaN (:func:`no_potential`). The target's functions are
:class:`~sgmcmc.engine.static.StaticFunction` values, so the block that calls them is compiled once per function
and cached on disk.

- :func:`density_gradient`: a density model's ∇U(θ) plus Gaussian gradient noise L z, z = ``normals[0]``
  (SPEC §4.3's ∇Ũ = ∇U + N(0, V), V = LLᵀ). ``first(θ)`` is the model's vectorised gradient, called on one chain as θ
  (1, d), and returns ∇log π (``numbers[0]`` = −1) or ∇U (+1); ``numbers[1:]`` is L (d, d) row-major; ``second(θ)``
  its vectorised log π (``data[0]`` = −1) or U (+1). :func:`formula_gradient` is the same with ``first(θ, data, out)`` writing
  ∇U, ``data`` the formula's parameters (a built-in target's formula), and ``second(θ, data)`` U(θ).
- :func:`minibatch_gradient`: a data model's ∇Ũ(θ) = −(N/n) Σ_{i∈S̃} ∇log p(x_i | θ) − ∇log p(θ) (SPEC §1
  "Common"): ``first(θ, data[rows])`` gives the per-example gradients (n, d), ``second(θ)`` the prior's (d,);
  ``numbers[0]`` = N.

:func:`choose_rows` draws the minibatches of a block, uniform subsets of size n without replacement.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from sgmcmc.engine.static import call1, call2, call3, static


@numba.njit(cache=True)
def density_gradient(source, theta, normals, rows, out):
    """∇U(θ) + L z of a density model whose vectorised ``first(θ)`` (1, d) → (1, d) returns ∇U (``numbers[0]`` = 1) or
    ∇log π (−1)."""
    value = call1(source[1], theta.reshape((1, theta.shape[0])))
    for j in range(theta.shape[0]):
        out[j] = source[4][0] * value[0, j]
    _add_noise(source[4], normals, out)


@numba.njit(cache=True)
def formula_gradient(source, theta, normals, rows, out):
    """∇U(θ) + L z of a density model whose ``first(θ, parameters, out)`` writes ∇U into ``out`` with its parameters
    ``data`` (makes no array: the built-in formulas, at tens of nanoseconds a step)."""
    call3(source[1], theta, source[3], out)
    _add_noise(source[4], normals, out)


@numba.njit(cache=True)
def formula_potential(source, theta):
    """U(θ) of a model that hands over ``second(θ, parameters)`` (:func:`formula_gradient`'s)."""
    return call2(source[2], theta, source[3])


@numba.njit(cache=True)
def density_potential(source, theta):
    """U(θ) of a model whose vectorised ``second(θ)`` (1, d) → (1,) is U (``data[0]`` = 1) or log π (−1)."""
    return source[3][0] * call1(source[2], theta.reshape((1, theta.shape[0])))[0]


@numba.njit(cache=True)
def no_potential(source, theta):
    """A model that hands over no U: NaN (the samplers that need U refuse it before a block runs)."""
    return math.nan


@numba.njit(cache=True, inline="always")
def _add_noise(numbers, normals, out):
    """``out`` += L z with L = ``numbers[1:]`` (d, d) row-major and z = ``normals[0]``."""
    d = out.shape[0]
    for j in range(d):
        total = 0.0
        for k in range(d):
            total += numbers[1 + j * d + k] * normals[0, k]
        out[j] += total


@numba.njit(cache=True)
def minibatch_gradient(source, theta, normals, rows, out):
    """−(N/n) Σ_{i∈rows} ∇log p(x_i | θ) − ∇log p(θ) of a data model (see the module docstring)."""
    examples = call2(source[1], theta, source[3][rows])
    prior = call1(source[2], theta)
    scale = source[4][0] / rows.shape[0]
    for j in range(theta.shape[0]):
        total = 0.0
        for i in range(examples.shape[0]):
            total += examples[i, j]
        out[j] = -scale * total - prior[j]


@numba.njit(cache=True)
def choose_rows(uniforms, n_data, out, chosen):
    """``out[k, c]`` (n,): a uniform subset of size n of range(N) for every step k and chain c, from the uniforms
    ``uniforms[k, c]`` (n,) by Floyd's algorithm (each subset has probability 1/C(N, n)); ``chosen`` (N,) is
    scratch, all False on entry and on return."""
    n_steps, n_chains, batch = uniforms.shape
    for k in range(n_steps):
        for c in range(n_chains):
            for m in range(batch):
                limit = n_data - batch + m  # draw from 0..limit
                pick = min(int(uniforms[k, c, m] * (limit + 1)), limit)
                if chosen[pick]:
                    pick = limit
                chosen[pick] = True
                out[k, c, m] = pick
            for m in range(batch):
                chosen[out[k, c, m]] = False


def source_of(functions: dict) -> tuple:
    """The source of what a target hands the engine (its ``engine_functions()``): for a data model on rows
    (``row_gradients(θ, rows)``, ``prior_gradient(θ)``, ``data`` (N, width), ``n_data``) :func:`minibatch_gradient`'s;
    for a density model with a vectorised gradient (``gradient(θ)``, its ``sign``, ``noise_factor`` L; optionally its
    vectorised ``potential`` with its ``potential_sign``) :func:`density_gradient`'s; for one that writes ∇U
    (``gradient_into(θ, parameters, out)``, ``parameters``, ``noise_factor``; optionally ``potential(θ, parameters)``)
    :func:`formula_gradient`'s."""
    if "row_gradients" in functions:
        return (static(minibatch_gradient), static(functions["row_gradients"]), static(functions["prior_gradient"]),
                np.ascontiguousarray(functions["data"], dtype=float), np.array([float(functions["n_data"])]),
                static(no_potential))
    potential = functions.get("potential")
    if "gradient" in functions:
        gradient = static(functions["gradient"])
        numbers = np.concatenate([[float(functions["sign"])], np.ravel(functions["noise_factor"])]).astype(float)
        if potential is None:  # the slot of U is not read: any function of the right kind fills it
            return static(density_gradient), gradient, gradient, np.zeros(1), numbers, static(no_potential)
        return (static(density_gradient), gradient, static(potential), np.array([float(functions["potential_sign"])]),
                numbers, static(density_potential))
    gradient = static(functions["gradient_into"])
    numbers = np.concatenate([[1.0], np.ravel(functions["noise_factor"])]).astype(float)
    return (static(formula_gradient), gradient, gradient if potential is None else static(potential),
            np.ascontiguousarray(functions["parameters"], dtype=float), numbers,
            static(no_potential if potential is None else formula_potential))


def rows_for_block(rng: np.random.Generator, n_steps: int, n_chains: int, n_data: int, batch: int) -> np.ndarray:
    """The minibatches (K, c, n) of a block of K steps, drawn with ``rng`` (one call for the block); when n = N, every
    row for every step and chain, (1, 1, N), and no draw."""
    if batch >= n_data:
        return np.arange(n_data).reshape(1, 1, n_data)
    out = np.empty((n_steps, n_chains, batch), dtype=np.int64)
    choose_rows(rng.random((n_steps, n_chains, batch)), n_data, out, np.zeros(n_data, dtype=np.bool_))
    return out
