"""The gradient estimators of the engine, one chain at a time: ∇Ũ(θ) from the functions a target hands over.

An estimator is called through its *source*, a tuple ``(estimate, first, second, data, numbers, energy, noise,
density)``:
``estimate(source, θ, normals, rows, memory, out, variance)`` writes ∇Ũ (d,) at θ (d,) into ``out``, where
``normals`` are the step's standard normal slots (slots, d) and ``rows`` the step's minibatch (indices into ``data``);
``memory`` (m,) is the chain's estimator state, carried from step to step and block to block (the running noise
estimate's t and Î_t), and an estimator that estimates its noise writes V̂ into ``variance`` (d, d), or its diagonal
into the row (1, d) of the diagonal forms (:func:`sgmcmc.engine.injection.variance_diagonal`);
``energy(source, θ, memory)`` is
the exact U(θ) where the model hands it over (a Metropolis–Hastings test's; :func:`formula_potential`,
:func:`density_potential`, and a data model's over all its rows, :func:`rows_potential`, with the functions of
``density``), else NaN (:func:`no_potential`); ``noise(source, θ, memory, variance)`` writes the
estimator's V̂ at θ without a gradient (:func:`minibatch_noise`; a constant or no V̂: :func:`no_noise`). The target's functions are
:class:`~sgmcmc.engine.static.StaticFunction` values, so the block that calls them is compiled once per function
and cached on disk.

- :func:`density_gradient`: a density model's ∇U(θ) plus Gaussian gradient noise L z, z = ``normals[0]``
  (SPEC §4.3's ∇Ũ = ∇U + N(0, V), V = LLᵀ). ``first(θ)`` is the model's vectorised gradient, called on one chain as θ
  (1, d), and returns ∇log π (``numbers[0]`` = −1) or ∇U (+1); ``numbers[1:]`` is L (d, d) row-major; ``second(θ)``
  its vectorised log π (``data[0]`` = −1) or U (+1). :func:`formula_gradient` is the same with ``first(θ, data, out)`` writing
  ∇U, ``data`` the formula's parameters (a built-in target's formula), and ``second(θ, data)`` U(θ).
- :func:`minibatch_gradient`: a data model's ∇Ũ(θ) = −(N/n) Σ_{i∈S̃} h_i − ∇log p(θ) (SPEC §1 "Common"):
  ``first(θ, data[rows])`` gives the per-example gradients g_i = ∇log p(x_i | θ) (n, d), ``second(θ)`` the prior's
  (d,), or ``second(θ, hyperparameters)`` a hierarchical prior's, given the chain's hyperparameters (its memory after
  the running estimate's share: the target's ``estimator_state``, as the BNN's Gibbs-drawn precisions); h_i = g_i (``numbers[1]`` = :data:`PLAIN`) or the control variates' h_i = g_i(θ) − g_i(θ̂) + ḡ(θ̂) about a
  centre θ̂ with ḡ(θ̂) = (1/N) Σ_j g_j(θ̂) (:data:`CONTROL_VARIATES`; Baker et al. 2019). With a running noise estimate
  (``numbers[2]`` = :data:`RUNNING_FULL` or :data:`RUNNING_DIAGONAL`; Shang et al. 2015 Eq. 18-19) the chain's
  ``memory`` = (t, Î_t) is updated with this minibatch's V_t = Σ_i (h_i − h̄)(h_i − h̄)ᵀ/(n − 1) (its diagonal),
  Î_t = Î_{t−1} + (V_t − Î_{t−1})/t, and V̂ = c·Î_t written into ``variance`` (its diagonal, in the row (1, d) the
  blocks hand over for it), c = ``numbers[3]``;
  with the known V(θ) (``numbers[2]`` = :data:`FULL_DATA`) V̂ = c·S_h²(θ), the covariance of the h_i over all N rows
  (:meth:`~sgmcmc.targets.data.DataTarget.noise_covariance`, a pass over the data at every gradient, through the
  source's noise door ``source[6]``: :func:`minibatch_noise`, or a vectorised model's table,
  :func:`sgmcmc.engine.replay.replayed_noise`).
  ``numbers`` = (N, estimator, running form, c, θ̂ (d), ḡ(θ̂) (d)). SVRG (:data:`SVRG`; Dubey et al. 2016) has each
  chain's own centre: ``numbers`` = (N, estimator, running form, c, update_every), and the chain's memory after the
  running estimate's (t, Î_t) holds (the count of its minibatch gradients, θ̂ (d), ḡ(θ̂) (d)); θ̂ is renewed at the
  point of the gradient, with ḡ over all the rows, before every update_every-th gradient (the first included).
- :func:`batch_estimate`: a model that estimates ∇Ũ from the step's minibatch by itself, with random numbers of its
  own (online LDA's Gibbs sweeps): ``first(θ, rows, seed, data)`` returns ∇Ũ (d,), ``rows`` the step's minibatch as
  the model packed it (its ``batches``, :class:`~sgmcmc.engine.driver.Blocks`), ``data`` its parameters, ``seed`` the
  bits of the step's first gradient-noise normal, ``normals[0, 0]`` (a uint64: drawn with the step's other numbers,
  so that a run cut into other blocks draws the same).

:func:`choose_rows` draws the minibatches of a block, uniform subsets of size n without replacement.
"""

from __future__ import annotations

import math
from types import FunctionType
from typing import Optional

import numba
from numba import types
from numba.core.registry import CPUDispatcher
from numba.extending import register_jitable
import numpy as np

from sgmcmc.engine.injection import set_variance_diagonal
from sgmcmc.engine.static import (Callback, arity, call1, call2, call3, call4, call7, callback, lead3, lead4, lead5,
                                  static)

# a data model's estimator (numbers[1]) and noise estimate (numbers[2]): see the module docstring
PLAIN, CONTROL_VARIATES, SVRG = 0, 1, 2
NO_RUNNING, RUNNING_FULL, RUNNING_DIAGONAL, FULL_DATA = 0, 1, 2, 3
# the rows of one call of the model's functions in a pass over all the data (an SVRG renewal, the known V(θ), U)
FULL_CHUNK = 1024


@numba.njit(cache=True)
def density_gradient(source, theta, normals, rows, memory, out, variance):
    """∇U(θ) + L z of a density model whose vectorised ``first(θ)`` (1, d) → (1, d) returns ∇U (``numbers[0]`` = 1) or
    ∇log π (−1)."""
    value = lead3(source[1], theta.reshape((1, theta.shape[0])), memory, source)
    for j in range(theta.shape[0]):
        out[j] = source[4][0] * value[0, j]
    _add_noise(source[4], normals, out)


@numba.njit(cache=True)
def formula_gradient(source, theta, normals, rows, memory, out, variance):
    """∇U(θ) + L z of a density model whose ``first(θ, parameters, out)`` writes ∇U into ``out`` with its parameters
    ``data`` (makes no array: the built-in formulas, at tens of nanoseconds a step)."""
    call3(source[1], theta, source[3], out)
    _add_noise(source[4], normals, out)


@numba.njit(cache=True)
def formula_potential(source, theta, memory):
    """U(θ) of a model that hands over ``second(θ, parameters)`` (:func:`formula_gradient`'s)."""
    return call2(source[2], theta, source[3])


@numba.njit(cache=True)
def density_potential(source, theta, memory):
    """U(θ) of a model whose vectorised ``second(θ)`` (1, d) → (1,) is U (``data[0]`` = 1) or log π (−1)."""
    return source[3][0] * call1(source[2], theta.reshape((1, theta.shape[0])))[0]


@numba.njit(cache=True)
def no_potential(source, theta, memory):
    """A model that hands over no U: NaN (the samplers that need U refuse it before a block runs)."""
    return math.nan


@numba.njit(cache=True)
def rows_potential(source, theta, memory):
    """U(θ) = −Σ_i log p(x_i | θ) − log p(θ) of a data model over all its N rows, in chunks of rows: ``density`` =
    (``row_log_likelihoods(θ, rows)`` → (n,), ``prior_log_density(θ)``, or ``(θ, hyperparameters)`` of a hierarchical
    prior, given the chain's hyperparameters as its prior gradient is)."""
    data, numbers = source[3], source[4]
    tail = memory[running_size(numbers[2], theta.shape[0]):]
    total = 0.0
    for start in range(0, data.shape[0], FULL_CHUNK):
        values = lead4(source[7][0], theta, data[start:min(start + FULL_CHUNK, data.shape[0])], tail, source)
        for i in range(values.shape[0]):
            total += values[i]
    return -total - lead3(source[7][1], theta, tail, source)


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
def minibatch_gradient(source, theta, normals, rows, memory, out, variance):
    """−(N/n) Σ_{i∈rows} h_i − ∇log p(θ) of a data model, and its running noise estimate (see the module docstring)."""
    numbers, d = source[4], theta.shape[0]
    tail = memory[running_size(numbers[2], d):]
    if numbers[1] == PLAIN and every_row(rows, source[3].shape[0]):  # the exact ∇U: the data as they are
        batch = gather(source[3], rows[:0])  # not read (no centre): of the type the other branch gives
        examples = lead4(source[1], theta, source[3], tail, source)
    else:
        batch = gather(source[3], rows)
        examples = lead4(source[1], theta, batch, tail, source)
    centre = theta  # θ̂ where the estimator has one
    if numbers[1] != PLAIN:
        if numbers[1] == SVRG:  # the chain's (count, θ̂, ḡ(θ̂)), θ̂ renewed here before every update_every-th gradient
            state = tail
            centre, centre_mean = state[1:1 + d], state[1 + d:1 + 2 * d]
            if state[0] % numbers[4] == 0:
                _renew_centre(source, theta, centre, centre_mean, tail)
            state[0] += 1.0
        else:
            centre, centre_mean = numbers[4:4 + d], numbers[4 + d:4 + 2 * d]
        _control_variates(source, centre, centre_mean, batch, examples, tail)
    prior = lead3(source[2], theta, tail, source)
    n = examples.shape[0]
    for j in range(d):
        out[j] = 0.0
    for i in range(n):
        for j in range(d):
            out[j] += examples[i, j]
    if numbers[2] == FULL_DATA:  # the noise door: minibatch_noise's pass over the data, or a replay's table
        call4(source[6], source, theta, memory, variance)
    elif numbers[2] != NO_RUNNING:
        _running_estimate(numbers, examples, out, memory, variance)
    scale = numbers[0] / n
    for j in range(d):
        out[j] = -scale * out[j] - prior[j]


@numba.njit(cache=True)
def sums_gradient(source, theta, normals, rows, memory, out, variance):
    """−(N/n) Σ_{i∈rows} g_i − ∇log p(θ) of a data model that hands over its rows' sums, ``first(θ, data[rows])`` →
    (Σ_i g_i (d,), Σ_i (g_i − ḡ)² (d,)), so that no per-example (n, d) array is made (a model with d in the tens of
    thousands); with the running diagonal estimate (``numbers[2]`` = :data:`RUNNING_DIAGONAL`) V_t's diagonal is the
    second sum over n − 1 (Shang et al. 2015 Eq. 19). A ``first`` with a third parameter is told whether that second
    sum is wanted (:func:`~sgmcmc.engine.static.lead5`: a model whose second sum costs as much as its first), one with
    a fourth is given the chain's hyperparameters, as the prior is (BPMF's τ), and a fifth the source (a vectorised
    model's table: :func:`sgmcmc.engine.replay.replayed_sums`). ``numbers`` = (N, :data:`PLAIN`, running
    form, c)."""
    numbers, d = source[4], theta.shape[0]
    hyperparameters = memory[running_size(numbers[2], d):]
    if every_row(rows, source[3].shape[0]):  # the exact ∇U: the data as they are
        total, scatter = lead5(source[1], theta, source[3], numbers[2] == RUNNING_DIAGONAL, hyperparameters, source)
    else:
        total, scatter = lead5(source[1], theta, gather(source[3], rows), numbers[2] == RUNNING_DIAGONAL,
                               hyperparameters, source)
    prior = lead3(source[2], theta, hyperparameters, source)
    n = rows.shape[0]
    if numbers[2] == RUNNING_DIAGONAL:
        _running_diagonal(numbers, scatter, n, memory, variance)
    scale = numbers[0] / n
    for j in range(d):
        out[j] = -scale * total[j] - prior[j]


@numba.njit(cache=True)
def batch_estimate(source, theta, normals, rows, memory, out, variance):
    """∇Ũ(θ) of a model that estimates it by itself from the step's minibatch ``rows``, with the seed of the bits of
    ``normals[0, 0]`` (see the module docstring)."""
    value = call4(source[1], theta, rows, normals[0, :1].view(np.uint64)[0], source[3])
    for j in range(theta.shape[0]):
        out[j] = value[j]


@numba.njit(cache=True)
def every_row(rows, n_data):
    """Whether ``rows`` are 0, 1, …, N − 1 in order (HMC's exact ∇U: the model is handed the data themselves, not a
    copy; measured on logistic regression's N = 12,000, d = 100, the copy cost as much as the gradient)."""
    if rows.shape[0] != n_data:
        return False
    for i in range(n_data):
        if rows[i] != i:
            return False
    return True


@numba.njit(cache=True)
def gather(data, rows):
    """``data[rows]``, the minibatch's rows of the data (a call of its own, not inlined: numba's fancy indexing is
    long to compile, once for every data array type instead of once in every block)."""
    return data[rows]


# The two below take the model's functions (the source) and are called, not inlined, where compiled
# (register_jitable: an overload compiled once for the caller's types; a plain Python call in the Python backend):
# inlined, they were typed again at every level of a block's nesting (results/test-times/compile-20261128.md).


@register_jitable
def _control_variates(source, centre, centre_mean, batch, examples, tail):
    """h_i + ḡ(θ̂) − h_i(θ̂) into ``examples`` (n, d), the rows' gradients h_i at θ."""
    at_centre = lead4(source[1], centre, batch, tail, source)
    for i in range(examples.shape[0]):
        for j in range(examples.shape[1]):
            examples[i, j] += centre_mean[j] - at_centre[i, j]


@register_jitable
def _renew_centre(source, theta, centre, centre_mean, tail):
    """SVRG's renewal: θ̂ = θ into ``centre`` and ḡ(θ̂) = (1/N) Σ_j g_j(θ̂) into ``centre_mean``, over all the data
    in chunks of rows."""
    data, d = source[3], theta.shape[0]
    for j in range(d):
        centre[j] = theta[j]
        centre_mean[j] = 0.0
    for start in range(0, data.shape[0], FULL_CHUNK):
        chunk = lead4(source[1], centre, gather(data, np.arange(start, min(start + FULL_CHUNK, data.shape[0]))), tail,
                      source)
        for i in range(chunk.shape[0]):
            for j in range(d):
                centre_mean[j] += chunk[i, j]
    for j in range(d):
        centre_mean[j] /= data.shape[0]


@register_jitable
def _full_data_covariance(source, theta, centred, centre, scale, variance, tail):
    """V̂ = c·S_h²(θ) into ``variance`` (d, d), or its diagonal into the row (1, d) (d > 1): S_h² = Σ_i (h_i − h̄)
    (h_i − h̄)ᵀ/(N − 1) over all N rows, h_i = g_i(θ), or g_i(θ) − g_i(θ̂) where ``centred`` (the control variates'
    constant ḡ(θ̂) leaves it unchanged); summed in chunks of rows about the first chunk's mean, as
    :meth:`~sgmcmc.targets.data.DataTarget.per_example_covariance` does."""
    data, d = source[3], theta.shape[0]
    n = data.shape[0]
    diagonal = variance.shape[0] < d
    shift, first, second = np.zeros(d), np.zeros(d), np.zeros((variance.shape[0], d))
    for start in range(0, n, FULL_CHUNK):
        batch = gather(data, np.arange(start, min(start + FULL_CHUNK, n)))
        chunk = lead4(source[1], theta, batch, tail, source)
        if centred:
            chunk = chunk - lead4(source[1], centre, batch, tail, source)
        if start == 0:  # loops, not np.mean and np.sum: numba's and numpy's sum in other orders
            for i in range(chunk.shape[0]):
                for j in range(d):
                    shift[j] += chunk[i, j] / chunk.shape[0]
        chunk = chunk - shift.reshape((1, d))
        for i in range(chunk.shape[0]):
            for j in range(d):
                first[j] += chunk[i, j]
        if diagonal:
            for i in range(chunk.shape[0]):
                for j in range(d):
                    second[0, j] += chunk[i, j] * chunk[i, j]
        else:
            second += np.dot(chunk.T, chunk)
    for j in range(d):
        if diagonal:
            variance[0, j] = scale * (second[0, j] - first[j] * first[j] / n) / (n - 1)
            continue
        for k in range(d):
            variance[j, k] = scale * (second[j, k] - first[j] * first[k] / n) / (n - 1)


@numba.njit(cache=True)
def no_noise(source, theta, memory, variance):
    """The V̂ of a source whose noise estimate is a constant or none: ``variance`` left as it is."""
    return


@numba.njit(cache=True)
def minibatch_noise(source, theta, memory, variance):
    """V̂ of :func:`minibatch_gradient`'s estimate into ``variance``, for an integrator that needs it away from a
    gradient (BAOAB's and BADODAB's O step): with the known V(θ) (``numbers[2]`` = :data:`FULL_DATA`) c·S_h²(θ) at
    θ, a pass over the data (centred about the control variates' θ̂ where there is one); with a running estimate
    c·Î_t of the chain's ``memory`` (its full form, or its diagonal); with none, nothing. SVRG's centre is each
    chain's own, in its memory after the running estimate's (count, θ̂, ḡ(θ̂)): the last renewal's."""
    numbers, d = source[4], theta.shape[0]
    if numbers[2] == FULL_DATA:
        tail = memory[running_size(numbers[2], d):]
        centre = tail[1:1 + d] if numbers[1] == SVRG else numbers[4:4 + d] if numbers[1] == CONTROL_VARIATES else theta
        _full_data_covariance(source, theta, numbers[1] != PLAIN, centre, numbers[3], variance, tail)
    elif numbers[2] == RUNNING_FULL:
        for j in range(d):
            for k in range(d):
                variance[j, k] = numbers[3] * memory[1 + j * d + k]
    else:
        _running_diagonal_noise(source[4], theta.shape[0], memory, variance)


# the relative spacings of the central differences of ∇U and of diag V(θ) (Target.hessian_diagonal's and
# sgmcmc/samplers/psgld.py's _SPACING)
GRADIENT_SPACING, NOISE_SPACING = 1e-4, 1e-5


@numba.njit(cache=True)
def differenced_stationary(arguments, source, theta, rows, memory, normals, gradient, moment, slope):
    """pSGLD's stationary preconditioner on a density model that hands over no ∂²U/∂θ_i² (``sgmcmc/samplers/psgld.py``):
    ∇U(θ) into ``gradient`` (the source's estimate with its noise's normals, ``normals[0]``, set to 0), v(θ) = ∇U² +
    diag V into ``moment`` (diag V = ``arguments``, the model's constant V) and ∂_iU ∂²_iiU into ``slope``, the
    curvature by central differences of ∇U, spacing :data:`GRADIENT_SPACING` times 1 + |θ_i| (the numpy
    :meth:`~sgmcmc.targets.base.Target.hessian_diagonal`'s), at θ (k = 0), then θ + h e_j and θ − h e_j (k = 1 … 2d):
    2d + 1 gradients a step."""
    d = theta.shape[0]
    point, value = theta.copy(), np.empty(d)
    normals[0, :] = 0.0
    for k in range(2 * d + 1):
        j, up = (k - 1) // 2 % d, k % 2 == 1
        spacing = GRADIENT_SPACING * (1.0 + abs(theta[j]))
        if k > 0:
            point[j] = theta[j] + spacing if up else theta[j] - spacing
        call7(source[0], source, point, normals, rows, memory, value, normals)  # a density model writes no V̂
        point[j] = theta[j]
        if k == 0:
            for i in range(d):
                gradient[i] = value[i]
                moment[i] = value[i] * value[i] + arguments[i]
        elif up:
            slope[j] = value[j]
        else:
            slope[j] = gradient[j] * ((slope[j] - value[j]) / (2.0 * spacing)) + 0.0


@numba.njit(cache=True)
def rows_stationary(arguments, source, theta, rows, memory, normals, gradient, moment, slope):
    """pSGLD's stationary preconditioner on a data model on rows: ∇U(θ) over all N rows into ``gradient``, v(θ) =
    ∇U² + c·diag S²(θ) into ``moment`` and ∂_iU ∂²_iiU + ½∂_i(c·S²_ii) into ``slope``, the derivatives by central
    differences (spacings :data:`GRADIENT_SPACING` and :data:`NOISE_SPACING` times 1 + |θ_i|, as the numpy
    :meth:`~sgmcmc.targets.base.Target.hessian_diagonal` and ``PSGLD.noise_derivative`` take them): 4d + 2 passes over
    the data a step, or 2 without Γ; with the control variates S_h² about their θ̂ (their V(θ)) and ∇U through them (all
    N rows), each pass at θ and at θ̂ (twice the work). ``arguments`` = (the model's source without SVRG, (c, the offset of the chain's
    hyperparameters in its memory, 1 with Γ's bracket or 0 without it)); ``rows`` are not read."""
    exact, d = arguments[0], theta.shape[0]
    centred = exact[4][1] == CONTROL_VARIATES
    centre = exact[4][4:4 + d] if centred else theta
    everything = np.arange(exact[3].shape[0])
    hyperparameters = memory[int(arguments[1][1]):]
    noise, point, value = np.zeros((1, d)), theta.copy(), np.empty(d)
    curvature, above = np.empty(d), np.empty(d)
    normals[0, :] = 0.0
    # the points θ (k = 0), then θ + h e_j and θ − h e_j for ∇U (k = 1 … 2d), θ + h' e_j and θ − h' e_j for diag V
    # (k = 2d + 1 … 4d): one call site of the model's gradient and one of the covariance (each is compiled anew)
    for k in range(4 * d + 1 if arguments[1][2] > 0.0 else 1):
        j, up, of_noise = (k - 1) // 2 % d, k % 2 == 1, k > 2 * d
        spacing = (NOISE_SPACING if of_noise else GRADIENT_SPACING) * (1.0 + abs(theta[j]))
        if k > 0:
            point[j] = theta[j] + spacing if up else theta[j] - spacing
        if not of_noise:
            call7(exact[0], exact, point, normals, everything, hyperparameters, value, noise)
        if k == 0 or of_noise:  # S_h² of h_i = g_i(θ) − g_i(θ̂) about the control variates' θ̂ where there is one
            _full_data_covariance(exact, point, centred, centre, arguments[1][0], noise, hyperparameters)
        point[j] = theta[j]
        if k == 0:
            for i in range(d):
                gradient[i] = value[i]
                moment[i] = value[i] * value[i] + noise[0, i]
        elif up:
            above[j] = noise[0, j] if of_noise else value[j]
        elif not of_noise:
            curvature[j] = (above[j] - value[j]) / (2.0 * spacing)
        else:
            slope[j] = gradient[j] * curvature[j] + 0.5 * ((above[j] - noise[0, j]) / (2.0 * spacing))


@numba.njit(cache=True)
def sums_noise(source, theta, memory, variance):
    """V̂ of :func:`sums_gradient`'s estimate into ``variance``, away from a gradient (BAOAB's and BADODAB's O step):
    c·Î_t's diagonal from the chain's ``memory`` with the running diagonal estimate, else nothing (the only estimates
    the sums serve; the model's sums are not called)."""
    _running_diagonal_noise(source[4], theta.shape[0], memory, variance)


@register_jitable
def _running_diagonal_noise(numbers, d, memory, variance):
    """c·Î_t's diagonal from ``memory`` = (t, Î_t's diagonal) into ``variance`` where the running estimate is
    diagonal (``numbers[2]``), else nothing."""
    if numbers[2] == RUNNING_DIAGONAL:
        for j in range(d):
            set_variance_diagonal(variance, j, numbers[3] * memory[1 + j])


@numba.njit(cache=True, inline="always")
def running_size(running, d):
    """The running noise estimate's share of a chain's memory: (t, Î_t), 1 + d² (full) or 1 + d (diagonal), or 0."""
    if running == RUNNING_FULL:
        return 1 + d * d
    return 1 + d if running == RUNNING_DIAGONAL else 0


@numba.njit(cache=True)
def _running_estimate(numbers, examples, total, memory, variance):
    """Î_t = Î_{t−1} + (V_t − Î_{t−1})/t in ``memory`` = (t, Î_t) (full, row-major, or its diagonal), with V_t the
    covariance of the rows of ``examples`` (n, d) whose sum is ``total``; V̂ = c·Î_t into ``variance``. The rows are
    centred in place (the estimator's own array), and the full V_t's scatter is one BLAS product (gemm, np.dot),
    mirrored from its upper triangle: measured at logistic regression's n = 500, d = 100 (one BLAS thread), 0.49 ms a
    chain-step against 5.0 ms for the loops over the entries (the data kernels' dsyrk: 0.33 ms). Called, not inlined:
    compiled once for every block (np.dot's typing took seconds in each block's compilation)."""
    n, d = examples.shape
    for i in range(n):
        for j in range(d):
            examples[i, j] -= total[j] / n
    if numbers[2] != RUNNING_FULL:
        scatter = np.empty(d)
        for j in range(d):
            product = 0.0
            for i in range(n):
                product += examples[i, j] * examples[i, j]
            scatter[j] = product
        _running_diagonal(numbers, scatter, n, memory, variance)
    else:
        count = memory[0] + 1.0
        memory[0] = count
        denominator = max(n - 1, 1)
        product = np.dot(examples.T, examples)
        for j in range(d):
            for k in range(j, d):
                at = 1 + j * d + k
                memory[at] += (product[j, k] / denominator - memory[at]) / count
                memory[1 + k * d + j] = memory[at]
                variance[j, k] = numbers[3] * memory[at]
                variance[k, j] = variance[j, k]


@numba.njit(cache=True)
def _running_diagonal(numbers, scatter, n, memory, variance):
    """Î_t = Î_{t−1} + (V_t − Î_{t−1})/t in ``memory`` = (t, Î_t's diagonal), V_t's diagonal = ``scatter``/(n − 1)
    (the minibatch's Σ_i (h_i − h̄)²), and V̂ = c·Î_t into ``variance``'s diagonal."""
    count = memory[0] + 1.0
    memory[0] = count
    denominator = max(n - 1, 1)
    for j in range(scatter.shape[0]):
        memory[1 + j] += (scatter[j] / denominator - memory[1 + j]) / count
        set_variance_diagonal(variance, j, numbers[3] * memory[1 + j])


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


# what each of a model's functions returns, where the blocks call it in Python (numba's object mode: a model the
# compiler refuses, static.callback)
_VECTOR, _MATRIX = types.float64[::1], types.float64[:, ::1]
RETURNS = {"gradient": _MATRIX, "potential": _VECTOR, "row_gradients": _MATRIX, "prior_gradient": _VECTOR,
           "row_gradient_sums": types.UniTuple(_VECTOR, 2), "row_log_likelihoods": _VECTOR,
           "prior_log_density": types.float64}


def _door(functions: dict, name: str, callbacks: bool, inline: bool = False):
    """The model's function ``name`` as the blocks call it: compiled (its source inlined or called), or, with
    ``callbacks`` or where it is not a plain function (a bound method, a closure), in Python from the compiled blocks
    (:func:`~sgmcmc.engine.static.callback`)."""
    function = functions[name]
    plain = isinstance(function, CPUDispatcher) or (isinstance(function, FunctionType) and not function.__closure__)
    if callbacks or not plain:  # a bound method, a closure over Python objects: not compiled at all
        return callback(function, RETURNS[name], name)
    return static(function, inline=inline)


def called_in_python(source: tuple) -> list[str]:
    """The model's functions in ``source`` that the blocks call in Python (:func:`_door`), by their :data:`RETURNS`
    names."""
    parts = [*source[1:3], *source[7]] if len(source) > 7 else list(source[1:3])
    return sorted({part.name for part in parts if isinstance(part, Callback)})


def on_rows(functions: dict) -> bool:
    """Whether a target's functions are a data model's: its rows door, its sums door or both, or a vectorised data
    model's gradients (:func:`sgmcmc.engine.replay.on_replay`)."""
    return bool({"row_gradients", "row_gradient_sums", "vectorised_row_gradients"} & functions.keys())


def has_potential(functions: dict) -> bool:
    """Whether a target's functions give the exact U(θ) (a Metropolis–Hastings test's): a density model's
    ``potential``, a data model's ``row_log_likelihoods`` and ``prior_log_density``."""
    return "potential" in functions or ("row_log_likelihoods" in functions and "prior_log_density" in functions)


def source_of(functions: dict, running: int = NO_RUNNING, scale: float = 0.0, every_row: bool = False,
              callbacks: bool = False) -> Optional[tuple]:
    """The source of what a target hands the engine (its ``engine_functions()``): for a data model on rows
    (``row_gradients(θ, rows)``, ``prior_gradient(θ)``, ``data`` (N, width), ``n_data``) :func:`minibatch_gradient`'s;
    for a density model with a vectorised gradient (``gradient(θ)``, its ``sign``, ``noise_factor`` L; optionally its
    vectorised ``potential`` with its ``potential_sign``) :func:`density_gradient`'s; for one that writes ∇U
    (``gradient_into(θ, parameters, out)``, ``parameters``, ``noise_factor``; optionally ``potential(θ, parameters)``)
    :func:`formula_gradient`'s. A data model's noise door with the known V(θ) (``running`` = :data:`FULL_DATA`) is its
    ``full_data_noise`` where it hands one over (a vectorised model's table), else :func:`minibatch_noise`. A data
    model's control variates come as ``centre`` θ̂ (d,) and ``centre_mean``
    ḡ(θ̂) (d,), SVRG's as its ``update_every`` (each chain's θ̂, ḡ(θ̂) and count are in its memory); ``running`` and
    ``scale`` are its running noise estimate and c (:func:`minibatch_gradient`). A data model that also hands over
    ``row_gradient_sums(θ, rows[, with_scatter[, hyperparameters]])`` gets :func:`sums_gradient`'s where that serves:
    plain minibatches, with no noise estimate or the running diagonal one (unless the model says
    ``"minibatch_sums": False``: its minibatches keep its rows door), and ``every_row`` (HMC's exact ∇U, where the
    rows door would make an (N, d) array); a model with the sums alone gets None for any other estimate. A prior ``prior_gradient(θ, hyperparameters)`` of each chain's hyperparameters comes with
    ``estimator_state`` (``n_chains`` → (c, ``estimator_size``), read at each block's start), else None. A model
    that estimates ∇Ũ by itself (``batch_gradient(θ, rows, seed, parameters)``, ``parameters``) gets
    :func:`batch_estimate`'s. A data model on rows that hands over ``row_log_likelihoods(θ, rows)`` and
    ``prior_log_density(θ[, hyperparameters])`` has its exact U, :func:`rows_potential`. With ``callbacks`` the
    model's functions (:data:`RETURNS`) are called in Python from the compiled blocks: a model the compiler refuses."""
    if "batch_gradient" in functions:
        gradient = static(functions["batch_gradient"], inline=False)
        return (static(batch_estimate), gradient, gradient, np.ascontiguousarray(functions["parameters"], dtype=float),
                np.zeros(1), static(no_potential), static(no_noise), ())
    if "row_log_likelihoods" in functions and "prior_log_density" in functions:
        density = (_door(functions, "row_log_likelihoods", callbacks), _door(functions, "prior_log_density", callbacks))
        energy = static(rows_potential)
    else:
        density, energy = (), static(no_potential)
    if ("prior_gradient" in functions and arity(functions["prior_gradient"]) > 1 and "estimator_state" not in functions
            and "replay" not in functions):
        return None  # a prior of the chain's hyperparameters, and none handed over (the replay's takes its table)
    plain = "update_every" not in functions and "centre" not in functions
    sums = every_row or functions.get("minibatch_sums", True)
    if "row_gradient_sums" in functions and sums and plain and running in (NO_RUNNING, RUNNING_DIAGONAL):
        return (static(sums_gradient), _door(functions, "row_gradient_sums", callbacks),
                _door(functions, "prior_gradient", callbacks), np.ascontiguousarray(functions["data"], dtype=float),
                np.array([float(functions["n_data"]), PLAIN, running, scale]), energy, static(sums_noise), density)
    if "row_gradient_sums" in functions and "row_gradients" not in functions:
        return None  # the sums alone serve no other estimate (the control variates, SVRG, the full running estimate)
    if "row_gradients" in functions:
        if "update_every" in functions:
            numbers = np.array([float(functions["n_data"]), SVRG, running, scale, functions["update_every"]],
                               dtype=float)
        else:
            centred = "centre" in functions
            numbers = np.concatenate([[float(functions["n_data"]), CONTROL_VARIATES if centred else PLAIN, running,
                                       scale], np.ravel(functions["centre"]) if centred else [],
                                      np.ravel(functions["centre_mean"]) if centred else []]).astype(float)
        return (static(minibatch_gradient), _door(functions, "row_gradients", callbacks),
                _door(functions, "prior_gradient", callbacks), np.ascontiguousarray(functions["data"], dtype=float),
                numbers, energy, static(functions["full_data_noise"] if running == FULL_DATA and
                                        "full_data_noise" in functions else minibatch_noise), density)
    potential = functions.get("potential")
    constant_noise = static(no_noise)
    if "gradient" in functions:
        gradient = _door(functions, "gradient", callbacks, inline=True)
        numbers = np.concatenate([[float(functions["sign"])], np.ravel(functions["noise_factor"])]).astype(float)
        if potential is None:  # the slot of U is not read: any function of the right kind fills it
            return (static(density_gradient), gradient, gradient, np.zeros(1), numbers, static(no_potential),
                    constant_noise, ())
        return (static(density_gradient), gradient, _door(functions, "potential", callbacks, inline=True),
                np.array([float(functions["potential_sign"])]),
                numbers, static(density_potential), constant_noise, ())
    gradient = static(functions["gradient_into"])
    numbers = np.concatenate([[1.0], np.ravel(functions["noise_factor"])]).astype(float)
    return (static(formula_gradient), gradient, gradient if potential is None else static(potential),
            np.ascontiguousarray(functions["parameters"], dtype=float), numbers,
            static(no_potential if potential is None else formula_potential), constant_noise, ())
