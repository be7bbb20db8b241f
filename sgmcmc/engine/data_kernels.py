"""Compiled blocks of steps on the data targets (numba): :func:`data_block` advances every chain K steps on
pre-drawn minibatches and standard normals (the Python side, which draws them from the run's Generator in the numpy
steps' order, is :mod:`sgmcmc.engine.data_blocks`).

The step is line for line the numpy reference, one step of every chain at a time (so that, like the numpy step, a
step that fails in one chain stops all, and the batch-wide choices of :mod:`sgmcmc.noise` are made over all chains):

1. the position move of ``theta_first`` (Shang et al. 2015 Eq. 12, 14: θ' = θ + εr) and the target's reflection
   (Normal-Gamma: γ ≤ 0 → −γ, r_γ → −r_γ; ``Sampler.reflect``);
2. the minibatch gradient ∇Ũ = −(N/n) Σ_{i∈S̃} g_i − ∇log p(θ) (SPEC §1 "Common", :func:`minibatch_gradient`) and,
   with the running estimate, Î_t = Î_{t−1} + (V_t − Î_{t−1})/t, V_t = Σ(g_i − ḡ)(g_i − ḡ)ᵀ/(n − 1) (Shang et al.
   Eq. 18-19, ``Sampler.gradient_and_noise``), Σ̂ = c·Î_t;
3. the injected noise N(0, ε(2D − εΣ̂)) (SPEC §4.3, ``sgmcmc.noise.injected_noise``): elementwise when every chain's Σ̂
   is diagonal, else a Cholesky factor per chain (refused as not PSD without ``clip``; with it the eigendecomposition
   of the chains that have none, their negative eigenvalues set to 0 and counted: ``clipped_gaussian``), or
   N(0, 2εD) when nothing is subtracted (zero estimate, CCAdL);
4. the update: SGLD θ' = θ − ε∇Ũ + noise (Ma et al. 2015 Eq. 13); SGHMC r' = r − ε∇Ũ − εCr + noise (Eq. 12);
   SGNHT / CCAdL r' = r − ε∇Ũ − εξr [− ε(ε/2)Σ̂r] + noise, ξ' = ξ + ε(r·r/d − 1) (Eq. 15; Shang et al. Eq. 12,
   Algorithm 1), with θ' per integrator (``splitting``: θ + εr'; ``euler``: θ + εr) and its reflection;
5. the stop: a step whose θ, r, ξ or Î is not finite ends the block before it (diverged), as does a covariance
   refused in 3 (failed).

Random numbers: ``index`` (K, c, n) are the minibatches (unused when n = N: every chain takes range(N)) and
``normals`` (K, c, d) the injected noise's standard normals.

No numba helper of another file is imported: numba's on-disk cache is keyed on the file of the compiled function
alone, so a change there would not renew this file's cache. The Cholesky factor is this file's own
(LAPACK potrf's test: a pivot that is not > 0 has no factor); ``np.linalg.eigh`` is numba's, which calls the same
LAPACK routine as numpy's (the same eigenvectors, signs included, so the same clipped draws). The eigenvectors of a
cluster of nearly equal eigenvalues are, however, set by the last bits of the matrix: where ε(2D − εΣ̂) has such
clusters (SGHMC on MNIST, d = 100: the many small eigenvalues of Σ̂ put many eigenvalues near 2εC), a Σ̂ that differs
from numpy's in its last bits (other summation orders) rotates them, and the clipped draws, of the same law, differ
by far more than rounding (measured over 150 steps, 4 chains, h = 1e-4: 1e-10 to 1e-8 relative, against 1e-12 for
SGNHT and CCAdL; with V_t from a gemm instead of numpy's syrk, O(1) at A = 10).
"""

from __future__ import annotations

import math

import llvmlite.binding
import numba
import numpy as np
from numba import types
from numba.extending import get_cython_function_address

from sgmcmc.engine import codes, data_blocks
from sgmcmc.engine.codes import EULER, NON_FINITE, NOT_PSD, OK, SPLITTING, THETA_FIRST
from sgmcmc.engine.data_blocks import CONTROL_VARIATES, LANGEVIN, MOMENTUM, NORMAL_GAMMA, PLAIN, SVRG, THERMOSTAT

# numba freezes these constants into the compiled code, and its cache is keyed on this file alone: their values are
# written here too, and a mismatch stops the import (change both files together, which renews the cache).
_FROZEN = {"OK": 0, "NON_FINITE": 1, "NOT_PSD": 2, "SPLITTING": 0, "EULER": 1, "THETA_FIRST": 2, "NORMAL_GAMMA": 0,
           "LANGEVIN": 0, "MOMENTUM": 1, "THERMOSTAT": 2, "PLAIN": 0, "CONTROL_VARIATES": 1, "SVRG": 2}
_CHANGED = [name for name, value in _FROZEN.items() if getattr(codes, name, getattr(data_blocks, name, None)) != value]
if _CHANGED:
    raise RuntimeError(f"sgmcmc.engine.data_kernels: the codes {', '.join(_CHANGED)} differ from the values this file "
                       "was compiled with; update _FROZEN here")


# BLAS dsyrk (C = A Aᵀ, the routine numpy's matmul takes for AᵀA) of scipy's OpenBLAS, called by name: the kernels'
# cache keeps the symbol, which is bound to its address here at every import.
llvmlite.binding.add_symbol("sgmcmc_data_kernels_dsyrk", get_cython_function_address("scipy.linalg.cython_blas", "dsyrk"))
_dsyrk = types.ExternalFunction("sgmcmc_data_kernels_dsyrk", types.void(*([types.voidptr] * 10)))


# Candidate lists up to this long are sorted by insertion; from a longer one numba's np.partition takes the threshold.
_INSERTION_SORT_MAX = 64


@numba.njit(cache=True)
def smallest_keys(keys, batch, out):
    """``out[k, c]`` = the indices of the ``batch`` smallest of ``keys[k, c]`` (K, c, N), in ascending order: each step's
    minibatch, the set :meth:`sgmcmc.targets.data.DataTarget.minibatch` takes (``np.argpartition``, then sorted).

    One pass keeps the candidates below t₀ = (n + 3√n + 3)/N (branch-free), which for uniform keys holds the n smallest
    but for a chance of about 1e-3 (else every key is a candidate); the n-th smallest candidate is the threshold, and
    the candidates below it, with as many equal to it (lowest index first) as fill n, are written in index order.
    Whether the keys are uniform changes the speed only, not the set."""
    n_steps, n_chains, n_data = keys.shape
    cutoff = min(1.0, (batch + 3.0 * math.sqrt(batch) + 3.0) / n_data)
    candidates = np.empty(n_data + 1)
    where = np.empty(n_data + 1, dtype=np.int64)
    ordered = np.empty(n_data + 1)
    for k in range(n_steps):
        for c in range(n_chains):
            found = 0
            for i in range(n_data):
                candidates[found] = keys[k, c, i]
                where[found] = i
                found += keys[k, c, i] < cutoff
            if found < batch:
                for i in range(n_data):
                    candidates[i] = keys[k, c, i]
                    where[i] = i
                found = n_data
            if found <= _INSERTION_SORT_MAX:
                for j in range(found):
                    value, m = candidates[j], j - 1
                    while m >= 0 and ordered[m] > value:
                        ordered[m + 1] = ordered[m]
                        m -= 1
                    ordered[m + 1] = value
                threshold = ordered[batch - 1]
            else:
                threshold = np.partition(candidates[:found], batch - 1)[batch - 1]
            ties = batch  # the keys equal to the threshold that go in: n less those below it
            for j in range(found):
                ties -= candidates[j] < threshold
            written = 0
            for j in range(found):
                if candidates[j] < threshold or (candidates[j] == threshold and ties > 0):
                    ties -= candidates[j] == threshold
                    out[k, c, written] = where[j]
                    written += 1


@numba.njit(cache=True)
def scatter_product(centred, out):
    """``out`` = centredᵀ centred (d, d) for ``centred`` (n, d), C order: BLAS dsyrk (uplo U, no transpose, k = n on
    the Fortran view centredᵀ) on one triangle, mirrored to the other."""
    n, d = centred.shape
    sizes = np.array([d, n], dtype=np.int32)
    factors = np.array([1.0, 0.0])
    flags = np.array([ord("U"), ord("N")], dtype=np.uint8)
    out[:] = 0.0
    _dsyrk(flags[0:].ctypes, flags[1:].ctypes, sizes[0:].ctypes, sizes[1:].ctypes, factors[0:].ctypes, centred.ctypes,
           sizes[0:].ctypes, factors[1:].ctypes, out.ctypes, sizes[0:].ctypes)
    for a in range(d):
        for e in range(a):
            out[e, a] = out[a, e]


@numba.njit(cache=True, inline="always")
def example_gradients(kind, data, n_data, batch, theta, index, step, chain, out):
    """The per-example g_i of one chain's minibatch at θ into ``out`` (n, d) (SPEC T7, T8; see
    :func:`minibatch_gradient`)."""
    d = theta.shape[0]
    for b in range(batch):
        row = b if batch == n_data else index[step, chain, b]
        if kind == NORMAL_GAMMA:
            residual = data[row, 0] - theta[0]
            out[b, 0] = theta[1] * residual
            out[b, 1] = 0.5 / theta[1] - 0.5 * residual**2
        else:
            margin = 0.0
            for j in range(d):
                margin += data[row, j] * theta[j]
            weight = 1.0 / (1.0 + math.exp(margin))
            for j in range(d):
                out[b, j] = weight * data[row, j]


@numba.njit(cache=True)
def full_mean_gradient(kind, data, n_data, theta, example, out):
    """ḡ(θ) = (1/N) Σ_{i=1}^N g_i(θ) of one θ (d,) into ``out`` (an SVRG renewal, ``CentredGradients.full_mean_gradient``),
    over the rows in order, ``example`` (1, d) a work row."""
    d = theta.shape[0]
    for j in range(d):
        out[j] = 0.0
    rows = np.empty((1, 1, 1), dtype=np.int64)
    for row in range(n_data):
        rows[0, 0, 0] = row  # a minibatch of one (batch 1 of "N + 1": the row is read from ``rows``)
        example_gradients(kind, data, n_data + 1, 1, theta, rows, 0, 0, example)
        for j in range(d):
            out[j] += example[0, j]
    for j in range(d):
        out[j] /= n_data


@numba.njit(cache=True, inline="always")
def minibatch_gradient(kind, data, n_data, batch, prior, estimator, centre, centre_mean, theta, index, step, chain,
                       per_example, at_centre, total, out):
    """∇Ũ(θ) = −(N/n) Σ_{i∈S̃} g_i − ∇log p(θ) of one chain into ``out`` (``DataTarget.minibatch_gradient``), the
    g_i into ``per_example`` (n, d) and Σ g_i into ``total`` (summed in minibatch order, as numpy's sum over axis 1):

    - NORMAL_GAMMA (T7): g_i = (γ(x_i − µ), 1/(2γ) − (x_i − µ)²/2), ∇log p(θ) = (−γµ, 1/(2γ) − 1 − µ²/2);
    - LOGISTIC (T8): g_i = σ(−y_i θᵀx_i) y_i x_i with σ(−m) = 1/(1 + e^m) (scipy's ``expit``), ∇log p = −θ/s².

    With a gradient estimator (``estimator`` not :data:`~sgmcmc.engine.data_blocks.PLAIN`) the g_i are the control
    variates' h_i = g_i(θ) − g_i(θ̂) + ḡ(θ̂) (``sgmcmc.gradient_estimators.CentredGradients``) with θ̂ = ``centre`` and
    ḡ(θ̂) = ``centre_mean`` (d,), g_i(θ̂) into ``at_centre`` (n, d).
    """
    d = theta.shape[0]
    example_gradients(kind, data, n_data, batch, theta, index, step, chain, per_example)
    if estimator != PLAIN:
        example_gradients(kind, data, n_data, batch, centre, index, step, chain, at_centre)
        for b in range(batch):
            for j in range(d):
                per_example[b, j] = per_example[b, j] - at_centre[b, j] + centre_mean[j]
    for j in range(d):
        total[j] = 0.0
    for b in range(batch):
        for j in range(d):
            total[j] += per_example[b, j]
    scale = n_data / batch
    if kind == NORMAL_GAMMA:
        mu, gamma = theta[0], theta[1]
        out[0] = -scale * total[0] - (-gamma * mu)
        out[1] = -scale * total[1] - (0.5 / gamma - 1.0 - 0.5 * mu**2)
    else:
        for j in range(d):
            out[j] = -scale * total[j] - (-theta[j] / prior[0])


@numba.njit(cache=True, inline="always")
def running_estimate(per_example, total, old, count, new, centred, product):
    """Î_t = Î_{t−1} + (V_t − Î_{t−1})/t into ``new`` with V_t = Σ(g_i − ḡ)(g_i − ḡ)ᵀ/(n − 1) (Shang et al. Eq. 18-19;
    ``minibatch_covariance``), ḡ = Σg_i/n; the product (into ``product``, d × d) by BLAS dsyrk for d > 8, by loops on
    the lower triangle below."""
    n, d = per_example.shape
    for b in range(n):
        for j in range(d):
            centred[b, j] = per_example[b, j] - total[j] / n
    denominator = max(n - 1, 1)
    if d > 8:
        scatter_product(centred, product)
    else:
        product[:] = 0.0
        for b in range(n):
            for a in range(d):
                for e in range(a + 1):
                    product[a, e] += centred[b, a] * centred[b, e]
        for a in range(d):
            for e in range(a):
                product[e, a] = product[a, e]
    for a in range(d):
        for e in range(d):
            new[a, e] = (product[a, e] / denominator - old[a, e]) / count + old[a, e]


@numba.njit(cache=True, inline="always")
def reflect(coordinate, theta, momentum, flip):
    """θ_j ← −θ_j where θ_j ≤ 0 for j = ``coordinate`` (none when < 0; ``NormalGamma.reflect``), and r_j ← −r_j if
    ``flip`` (``Sampler.reflect``); returns the number of coordinates reflected."""
    if coordinate < 0 or not theta[coordinate] <= 0:
        return 0
    theta[coordinate] = -theta[coordinate]
    if flip:
        momentum[coordinate] = -momentum[coordinate]
    return 1


@numba.njit(cache=True, inline="always")
def _positive_diagonal(matrix):
    for j in range(matrix.shape[0]):
        if not matrix[j, j] > 0:
            return False
    return True


@numba.njit(cache=True, inline="always")
def cholesky_draw(work, normal, out):
    """L z into ``out`` with L Lᵀ = ``work`` (its lower triangle overwritten by L); False (``out`` untouched) when a
    pivot is not > 0, NaN included: no Cholesky factor (LAPACK potrf's test, ``np.linalg.cholesky`` raising)."""
    d = work.shape[0]
    for j in range(d):
        pivot = work[j, j]
        for k in range(j):
            pivot -= work[j, k] * work[j, k]
        if not pivot > 0:
            return False
        pivot = math.sqrt(pivot)
        work[j, j] = pivot
        for i in range(j + 1, d):
            value = work[i, j]
            for k in range(j):
                value -= work[i, k] * work[j, k]
            work[i, j] = value / pivot
    for i in range(d):
        value = 0.0
        for k in range(i + 1):
            value += work[i, k] * normal[k]
        out[i] = value
    return True


@numba.njit(cache=True, inline="always")
def _finite(values):
    for value in values.ravel():
        if not math.isfinite(value):
            return False
    return True


@numba.njit(cache=True)
def eigen_draw(covariance, normal, out):
    """U diag(√λ⁺) z into ``out`` with covariance = U diag(λ) Uᵀ and λ⁺ = max(λ, 0) (``clipped_gaussian``'s fallback);
    returns the number of negative eigenvalues. A non-finite covariance (an overflowed running estimate: the step
    diverges) draws NaN, as numpy's ``eigh`` gives NaN eigenvalues there where numba's raises."""
    d = covariance.shape[0]
    if not _finite(covariance):
        for i in range(d):
            out[i] = math.nan
        return 0
    values, vectors = np.linalg.eigh(covariance)
    clipped = 0
    for j in range(d):
        if values[j] < 0:
            clipped += 1
            values[j] = 0.0
        values[j] = math.sqrt(values[j]) * normal[j]
    for i in range(d):
        value = 0.0
        for j in range(d):
            value += vectors[i, j] * values[j]
        out[i] = value
    return clipped


@numba.njit(cache=True)
def data_block(kind, data, n_data, batch, prior, reflected, family, integrator, coefficient, friction, subtract,
               running, scale, clip, theta, momentum, xi, noise, count, index, normals, step_sizes, offset,
               theta_path, momentum_path, xi_path, clipped_path, reflected_path, counters, report,
               estimator, centre, centre_mean, update_every, calls):
    """K steps of every chain (module docstring) from the state ``theta``, ``momentum``, ``xi``, ``noise`` (Î, c×d×d)
    and ``count[0]`` (t), updated in place; step k's paths go to index ``offset + k``. ``coefficient`` is SGHMC's C,
    the thermostat's A or SGLD's 1. ``counters`` += (clipped draws with a full covariance, their eigendecompositions).
    Returns the steps done; at a stop ``report`` = (code, chains with a non-finite θ, r or ξ, smallest variance of a
    refused diagonal covariance or NaN for a refused full one).

    ``estimator``: :data:`~sgmcmc.engine.data_blocks.PLAIN`, ``CONTROL_VARIATES`` (one θ̂ for every chain: ``centre``
    and ``centre_mean`` (1, d)) or ``SVRG`` (each chain's θ̂ (c, d), renewed at its current position with a full-data
    ḡ before the step's gradient whenever ``calls[0]`` (minibatch gradients so far) is a multiple of
    ``update_every``); ``calls[0]`` += 1 per step whose gradient was taken, the failed one included (the numpy
    path's count)."""
    n_chains, d = theta.shape
    at_centre, example = np.empty((batch, d)), np.empty((1, d))
    at, current, gradient = np.empty((n_chains, d)), np.empty((n_chains, d)), np.empty((n_chains, d))
    new_theta, new_momentum, drawn, new_xi = np.empty((n_chains, d)), np.empty((n_chains, d)), np.empty((n_chains, d)), np.empty(n_chains)
    new_noise, sigma = np.zeros((n_chains, d, d)), np.zeros((n_chains, d, d))
    per_example, centred, total = np.empty((batch, d)), np.empty((batch, d)), np.empty(d)
    covariance, work, product = np.empty((d, d)), np.empty((d, d)), np.empty((d, d))
    moved, clipped = np.zeros(n_chains, dtype=np.int64), np.zeros(n_chains, dtype=np.int64)
    t = count[0]
    for k in range(step_sizes.shape[0]):
        step = step_sizes[k]
        # 1-2: the position move of theta_first, its reflection, the gradient and the running estimate
        for i in range(n_chains):
            for j in range(d):
                current[i, j] = momentum[i, j]
                at[i, j] = theta[i, j] + step * momentum[i, j] if family != LANGEVIN and integrator == THETA_FIRST else theta[i, j]
            moved[i] = 0
            if family != LANGEVIN and integrator == THETA_FIRST:
                moved[i] = reflect(reflected, at[i], current[i], True)
        if estimator == SVRG and calls[0] % update_every == 0:
            for i in range(n_chains):
                for j in range(d):
                    centre[i, j] = at[i, j]
                full_mean_gradient(kind, data, n_data, centre[i], example, centre_mean[i])
        calls[0] += 1
        for i in range(n_chains):
            shared = 0 if estimator == CONTROL_VARIATES else i
            minibatch_gradient(kind, data, n_data, batch, prior, estimator, centre[shared], centre_mean[shared], at[i],
                               index, k, i, per_example, at_centre, total, gradient[i])
            if running:
                running_estimate(per_example, total, noise[i], t + 1, new_noise[i], centred, product)
                for a in range(d):
                    for e in range(d):
                        sigma[i, a, e] = scale * new_noise[i, a, e]
        # 3: the injected noise N(0, ε(2D − εΣ̂)), elementwise when every chain's Σ̂ is diagonal (noise.is_diagonal)
        diagonal = True
        if subtract and d > 1:
            for i in range(n_chains):
                for a in range(d):
                    for e in range(d):
                        if a != e and sigma[i, a, e] != 0:
                            diagonal = False
        if not subtract:
            for i in range(n_chains):
                clipped[i] = 0
                for j in range(d):
                    drawn[i, j] = math.sqrt(2.0 * step * coefficient) * normals[k, i, j]
        elif diagonal:
            smallest, refused = math.inf, False
            for i in range(n_chains):
                clipped[i] = 0
                for j in range(d):
                    variance = step * (2.0 * coefficient - step * sigma[i, j, j])
                    if not math.isnan(smallest) and (math.isnan(variance) or variance < smallest):
                        smallest = variance  # numpy's min: NaN once there is one
                    if variance < 0:
                        if not clip:
                            refused = True
                        clipped[i] += 1
                        variance = 0.0
                    drawn[i, j] = math.sqrt(variance) * normals[k, i, j]
            if refused:
                report[0], report[2] = NOT_PSD, smallest
                return k
        else:
            for i in range(n_chains):
                clipped[i] = 0
                for a in range(d):
                    for e in range(d):
                        covariance[a, e] = -(step**2) * sigma[i, a, e]
                        work[a, e] = covariance[a, e]
                    covariance[a, a] += 2.0 * step * coefficient
                    work[a, a] = covariance[a, a]
                # a variance <= 0 on the diagonal: no factor, no attempt (clipped_gaussian)
                if _positive_diagonal(covariance) and cholesky_draw(work, normals[k, i], drawn[i]):
                    continue
                if not clip:
                    report[0], report[2] = NOT_PSD, math.nan
                    return k
                clipped[i] = eigen_draw(covariance, normals[k, i], drawn[i])
                counters[1] += 1
            if clip:
                counters[0] += n_chains
        # 4: the update of each family and integrator, the reflection of θ', the thermostat
        for i in range(n_chains):
            if family == LANGEVIN:
                for j in range(d):
                    new_theta[i, j] = theta[i, j] - step * gradient[i, j] + drawn[i, j]
                moved[i] = reflect(reflected, new_theta[i], new_momentum[i], False)
                continue
            damping = step * coefficient if family == MOMENTUM else step * xi[i]
            for j in range(d):
                new_momentum[i, j] = current[i, j] - step * gradient[i, j] - damping * current[i, j] + drawn[i, j]
            if friction:  # CCAdL: − ε (ε/2)Σ̂ r
                for j in range(d):
                    value = 0.0
                    for m in range(d):
                        value += 0.5 * step * sigma[i, j, m] * current[i, m]
                    new_momentum[i, j] = new_momentum[i, j] - step * value
            if integrator != THETA_FIRST:
                for j in range(d):
                    velocity = new_momentum[i, j] if integrator == SPLITTING else momentum[i, j]
                    new_theta[i, j] = theta[i, j] + step * velocity
                moved[i] = reflect(reflected, new_theta[i], new_momentum[i], True)
            else:
                for j in range(d):
                    new_theta[i, j] = at[i, j]
            if family == THERMOSTAT:
                heat = 0.0
                for j in range(d):
                    kinetic = momentum[i, j] if integrator == EULER else new_momentum[i, j]
                    heat += kinetic * kinetic
                new_xi[i] = xi[i] + step * (heat / d - 1.0)
        # 5: a non-finite θ, r, ξ or Î stops the block before this step (the numpy step's _finite)
        bad, stop = 0, False
        for i in range(n_chains):
            fine = _finite(new_theta[i])
            if family != LANGEVIN:
                fine = fine and _finite(new_momentum[i])
            if family == THERMOSTAT:
                fine = fine and math.isfinite(new_xi[i])
            if not fine:
                bad += 1
            if not fine or (running and not _finite(new_noise[i])):
                stop = True
        if stop:
            report[0], report[1] = NON_FINITE, bad
            return k
        for i in range(n_chains):
            for j in range(d):
                theta[i, j] = new_theta[i, j]
                theta_path[i, offset + k, j] = new_theta[i, j]
                if family != LANGEVIN:
                    momentum[i, j] = new_momentum[i, j]
                    momentum_path[i, offset + k, j] = new_momentum[i, j]
            if family == THERMOSTAT:
                xi[i] = new_xi[i]
                xi_path[i, offset + k] = new_xi[i]
            if running:
                for a in range(d):
                    for e in range(d):
                        noise[i, a, e] = new_noise[i, a, e]
            clipped_path[i, offset + k] = clipped[i]
            reflected_path[i, offset + k] = moved[i]
        if running:
            t += 1
            count[0] = t
    return step_sizes.shape[0]
