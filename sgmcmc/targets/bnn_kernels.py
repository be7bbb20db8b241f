"""The BNN's minibatch sums as a compiled function of one chain (numba, BLAS products through ``np.dot``): the engine's
sums door (:func:`sgmcmc.engine.estimators.sums_gradient`) for :class:`sgmcmc.targets.bnn.BayesianNeuralNetwork`,
whose numpy methods stay the readable reference (tests/targets/test_bnn_engine.py pins the two together).

One chain's θ (d,) packs (W1 (D×H), b1 (H), W2 (H×K), b2 (K)) as in :mod:`sgmcmc.targets.bnn`; the rows (n, D + 2) are
x_i | y_i | K, the number of classes carried in the rows so that this is a plain module function (cached on disk with
the blocks that call it), and H follows from d = H(D + 1 + K) + K. With s = σ(X W1 + b1), p = softmax(s W2 + b2),
R = E_y − P and Δ = (R W2ᵀ) ⊙ s ⊙ (1 − s), the sums of the per-example gradients are Σ_i g_i = (XᵀΔ, Σ Δ, sᵀR, Σ R),
and their squares' sums ((X²)ᵀΔ², …: the square of an outer product is the outer product of the squares) give
Σ_i (g_i − ḡ)² = Σ_i g_i² − (Σ_i g_i)²/n, computed only when asked for (a diagonal running noise estimate): they cost
as much again. :func:`row_log_likelihoods` gives log p(y_i | x_i, θ) = z_{y_i} − log Σ_k e^{z_k} of the same rows by
the same forward pass (:func:`_forward`), the likelihood's part of U for a Metropolis–Hastings test.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _forward(theta, rows):
    """The forward pass of one chain's θ (d,) on the rows x_i | y_i | K (n, D + 2) (module docstring): (X (n, D),
    W2 (H, K), s = σ(X W1 + b1) (n, H), the logits z = s W2 + b2 (n, K), log Σ_k e^{z_ik} (n,))."""
    n, n_features = rows.shape[0], rows.shape[1] - 2
    n_classes = int(rows[0, n_features + 1])
    n_hidden = (theta.shape[0] - n_classes) // (n_features + 1 + n_classes)
    D, H, K = n_features, n_hidden, n_classes
    x = np.ascontiguousarray(rows[:, :D])
    w1 = np.ascontiguousarray(theta[:D * H]).reshape((D, H))
    b1 = theta[D * H:D * H + H]
    w2 = np.ascontiguousarray(theta[D * H + H:D * H + H + H * K]).reshape((H, K))
    b2 = theta[D * H + H + H * K:]
    hidden = x @ w1
    for i in range(n):
        for j in range(H):
            a = hidden[i, j] + b1[j]
            hidden[i, j] = 1.0 / (1.0 + math.exp(-a)) if a >= 0.0 else math.exp(a) / (1.0 + math.exp(a))
    logits = hidden @ w2
    log_totals = np.empty(n)
    for i in range(n):  # log Σ_k e^{z_k} = largest + log Σ_k e^{z_k − largest}
        largest = -np.inf
        for k in range(K):
            logits[i, k] += b2[k]
            largest = max(largest, logits[i, k])
        total = 0.0
        for k in range(K):
            total += math.exp(logits[i, k] - largest)
        log_totals[i] = largest + math.log(total)
    return x, w2, hidden, logits, log_totals


@numba.njit(cache=True)
def row_log_likelihoods(theta, rows):
    """log p(y_i | x_i, θ) = z_{y_i} − log Σ_k e^{z_k} (n,) of one chain's θ (d,) on the rows x_i | y_i | K (n, D + 2):
    the terms of −Σ_i in U (:meth:`~sgmcmc.targets.bnn.BayesianNeuralNetwork.potential`) for a Metropolis–Hastings
    test."""
    _, _, _, logits, log_totals = _forward(theta, rows)
    label_column = rows.shape[1] - 2
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = logits[i, int(rows[i, label_column])] - log_totals[i]
    return out


@numba.njit(cache=True)
def row_gradient_sums(theta, rows, with_scatter):
    """(Σ_i g_i (d,), Σ_i (g_i − ḡ)² (d,), zeros unless ``with_scatter``) of one chain's θ (d,) on the rows x_i | y_i | K
    (n, D + 2) (module docstring)."""
    x, w2, hidden, residual, log_totals = _forward(theta, rows)
    n, D, H, K = x.shape[0], x.shape[1], hidden.shape[1], residual.shape[1]
    for i in range(n):  # R = E_y − softmax(z), by log-softmax
        label = int(rows[i, D])
        for k in range(K):
            p = math.exp(residual[i, k] - log_totals[i])
            residual[i, k] = (1.0 - p if k == label else -p)
    delta = residual @ np.ascontiguousarray(w2.T)
    for i in range(n):
        for j in range(H):
            delta[i, j] *= hidden[i, j] * (1.0 - hidden[i, j])
    sums = np.concatenate((np.ravel(x.T @ delta), delta.sum(axis=0), np.ravel(hidden.T @ residual),
                           residual.sum(axis=0)))
    scatter = np.zeros(theta.shape[0])
    if with_scatter:
        squares = np.concatenate((np.ravel((x * x).T @ (delta * delta)), (delta * delta).sum(axis=0),
                                  np.ravel((hidden * hidden).T @ (residual * residual)),
                                  (residual * residual).sum(axis=0)))
        for q in range(scatter.shape[0]):
            scatter[q] = max(squares[q] - sums[q] * sums[q] / n, 0.0)
    return sums, scatter
