"""∇log p(θ) and log p(θ) of the data models' Gaussian priors, compiled, for one chain: the isotropic N(0, s²I)
(logistic regression, SPEC T8; the DRBM, T9) as functions of θ alone, and the grouped N(0, λ_g⁻¹ I) (the BNN, T11;
BPMF, T12) of θ and the chain's precisions; the ``prior_gradient`` and ``prior_log_density`` of the engine's rows and
sums doors (:func:`sgmcmc.engine.estimators.source_of`). The log densities drop the constant −(d/2) log 2π, as the
targets' potentials do."""

from __future__ import annotations

from functools import cache

import numba
import numpy as np


@numba.njit(cache=True)
def standard_normal_prior_gradient(theta):
    """∇log N(θ | 0, I) = −θ."""
    return -theta


@cache
def prior_gradient_of(variance: float):
    """∇log N(θ | 0, s²I) = −θ/s²: :func:`standard_normal_prior_gradient` for s² = 1 (the default of SPEC §4.9 and
    §4.10; its blocks are cached on disk), else a function of this s² (compiled in each process)."""
    if variance == 1.0:
        return standard_normal_prior_gradient

    @numba.njit
    def prior_gradient(theta):
        return -theta / variance

    return prior_gradient


@numba.njit(cache=True)
def standard_normal_prior_log_density(theta):
    """log N(θ | 0, I) = −θᵀθ/2, a float (the constant −(d/2) log 2π dropped)."""
    return -0.5 * np.sum(theta * theta)


@cache
def prior_log_density_of(variance: float):
    """log N(θ | 0, s²I) = −θᵀθ/(2s²), a float, with the constant −(d/2) log(2πs²) dropped (the potentials of
    logistic regression and the DRBM drop it too): :func:`standard_normal_prior_log_density` for s² = 1, else a
    function of this s² (compiled in each process), as :func:`prior_gradient_of`."""
    if variance == 1.0:
        return standard_normal_prior_log_density

    @numba.njit
    def prior_log_density(theta):
        return -0.5 * np.sum(theta * theta) / variance

    return prior_log_density


@numba.njit(cache=True)
def grouped_prior_gradient(theta, hyperparameters):
    """∇log p(θ | λ) = −λ_g θ_g of G contiguous groups of coordinates, each θ_g ~ N(0, λ_g⁻¹ I) (the BNN's precisions,
    :mod:`sgmcmc.hyperparameters`): ``hyperparameters`` = (λ_1, …, λ_G, the end of each group but the last) of one
    chain, the 2G − 1 numbers of its estimator state."""
    groups = (hyperparameters.shape[0] + 1) // 2
    if groups < 1:
        raise ValueError("grouped_prior_gradient needs at least one group's precision")
    out = np.empty(theta.shape[0])
    start = 0
    for g in range(groups):
        end = int(hyperparameters[groups + g]) if g < groups - 1 else theta.shape[0]
        for j in range(start, end):
            out[j] = -hyperparameters[g] * theta[j]
        start = end
    return out


@numba.njit(cache=True)
def grouped_prior_log_density(theta, hyperparameters):
    """log p(θ | λ) = Σ_g (½ n_g log λ_g − ½ λ_g ‖θ_g‖²), a float, of the groups of :func:`grouped_prior_gradient`
    (the same ``hyperparameters`` (2G − 1,) of one chain), n_g the size of group g. The constant −(d/2) log 2π is
    dropped; the normalising terms ½ n_g log λ_g are kept, as they change with λ (the BNN's ``potential`` leaves
    them out: it is U given λ)."""
    groups = (hyperparameters.shape[0] + 1) // 2
    if groups < 1:
        raise ValueError("grouped_prior_log_density needs at least one group's precision")
    total = 0.0
    start = 0
    for g in range(groups):
        end = int(hyperparameters[groups + g]) if g < groups - 1 else theta.shape[0]
        squares = 0.0
        for j in range(start, end):
            squares += theta[j] * theta[j]
        total += 0.5 * ((end - start) * np.log(hyperparameters[g]) - hyperparameters[g] * squares)
        start = end
    return total
