"""BPMF's rating loops as compiled kernels (numba), for :class:`sgmcmc.targets.bpmf.BPMF` (whose numpy methods stay the
readable reference; the tests pin the two together).

Layout of θ (one row per chain), k the latent dimension, n_u users, n_i items:
``[U (n_u × k, row-major) | V (n_i × k) | a (n_u) | b (n_i)]``; a rating i of user u and item v has the prediction
ŷ_i = base + a_u + b_v + U_u · V_v and the residual e_i = y_i − ŷ_i. With the output precision τ the likelihood's
gradient of one rating is g_i = ∇_θ log p(y_i | θ) = τ e_i · (V_v in U_u's slots, U_u in V_v's, 1 at a_u and at b_v):
2k + 2 non-zero entries, so a minibatch's gradient is a scatter-add into the rows it touches.

- :func:`predictions` writes ŷ of a list of (user, item) pairs per chain;
- :func:`squared_residuals` gives Σ_i e_i² over a table of ratings (:data:`RATING` records) per chain (the τ
  conditional, the potential);
- :func:`gradient_sums` adds −scale · Σ_{i∈S} g_i into ``out`` (c, d) for the ratings S of each chain (all of them when
  ``full``), and with ``with_moments`` Σ_{i∈S} g_i² per coordinate into ``squares`` (what the diagonal of the
  per-rating gradients' scatter needs); only the 2k + 2 entries of each rating are touched;
- :func:`row_gradient_sums` and :func:`prior_gradient` are the same sums and the prior for one chain, the engine's sums
  door (:meth:`sgmcmc.targets.bpmf.BPMF.engine_functions`), given the chain's hyperparameters (:data:`STATE`).

The ratings are rows (user, item, y) of a float array (N, 3), a rating's three numbers in one cache line.

All run on one thread (2 cores shared with the sampler and other processes), in the order of the ratings given.
"""

from __future__ import annotations

import numba
import numpy as np

from sgmcmc.targets.gaussian_prior import grouped_prior_gradient

# error_model="numpy": no ZeroDivisionError checks in the loops (none divide); cache: compiled once per machine.
_JIT = dict(cache=True, error_model="numpy")

# One chain's hyperparameters as the engine hands them to the sums door and the prior (its estimator state): τ, the
# base rating, n_users, n_items, k, then the grouped prior's (λ_U, λ_V, λ_a, λ_b, where U, V and a end).
STATE = ("tau", "base", "n_users", "n_items", "latent_dim")
STATE_SIZE = len(STATE)


def rating_rows(users: np.ndarray, items: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The ratings (users, items, y) as rows (user, item, y) of a float array (N, 3), in their order."""
    return np.ascontiguousarray(np.column_stack([users, items, y]), dtype=float)


@numba.njit(**_JIT)
def _residual(y, base, theta, u, v, n_users, n_items, k):
    """e = y − (base + a_u + b_v + U_u · V_v) of one chain's θ (d,)."""
    uo = u * k
    vo = (n_users + v) * k
    bias = (n_users + n_items) * k
    total = base + theta[bias + u] + theta[bias + n_users + v]
    for j in range(k):
        total += theta[uo + j] * theta[vo + j]
    return y - total


@numba.njit(**_JIT)
def predictions(theta, users, items, n_users, n_items, k, base, out):
    """``out[c, i]`` = ŷ of pair i (users[i], items[i]) under chain c's θ; out (c, m)."""
    for chain in range(theta.shape[0]):
        for i in range(users.shape[0]):
            out[chain, i] = -_residual(0.0, base, theta[chain], users[i], items[i], n_users, n_items, k)
    return out


@numba.njit(**_JIT)
def squared_residuals(theta, ratings, n_users, n_items, k, base):
    """Σ_i (y_i − ŷ_i)² over all the rating rows ``ratings`` (N, 3), per chain: (c,)."""
    out = np.zeros(theta.shape[0])
    for chain in range(theta.shape[0]):
        total = 0.0
        for i in range(ratings.shape[0]):
            e = _residual(ratings[i, 2], base, theta[chain], int(ratings[i, 0]), int(ratings[i, 1]), n_users, n_items,
                          k)
            total += e * e
        out[chain] = total
    return out


@numba.njit(**_JIT)
def _chain_sums(theta, ratings, index, full, n_users, n_items, k, base, tau, scale, out, squares, with_moments):
    """``out`` (d,) += −scale · Σ_{i∈S} g_i of one chain's θ (d,), g_i = τ e_i ∂ŷ_i/∂θ (module docstring), S the rows
    ``index`` (b,) of ``ratings`` (N, 3) (every row when ``full``; ``index`` is then not read), and with
    ``with_moments`` ``squares`` (d,) += Σ_{i∈S} g_i² entrywise."""
    bias = (n_users + n_items) * k
    batch = ratings.shape[0] if full else index.shape[0]
    for b in range(batch):
        row = b if full else index[b]
        u = int(ratings[row, 0])
        v = int(ratings[row, 1])
        uo = u * k
        vo = (n_users + v) * k
        g = tau * _residual(ratings[row, 2], base, theta, u, v, n_users, n_items, k)  # τ e_i
        w = scale * g
        for j in range(k):
            out[uo + j] -= w * theta[vo + j]
            out[vo + j] -= w * theta[uo + j]
        out[bias + u] -= w
        out[bias + n_users + v] -= w
        if with_moments:
            gg = g * g
            for j in range(k):
                squares[uo + j] += gg * theta[vo + j] ** 2
                squares[vo + j] += gg * theta[uo + j] ** 2
            squares[bias + u] += gg
            squares[bias + n_users + v] += gg


@numba.njit(**_JIT)
def gradient_sums(theta, ratings, index, full, n_users, n_items, k, base, tau, scale, out, squares, with_moments):
    """``out[c]`` += −scale · Σ_{i∈S_c} g_i for each chain c (:func:`_chain_sums`), S_c = ``index[c]`` (or every row of
    ``ratings`` when ``full``), and with ``with_moments`` ``squares[c]`` += Σ_{i∈S_c} g_i². ``tau`` (c,) per chain;
    ``out`` and ``squares`` (c, d) are added to, not cleared."""
    for chain in range(theta.shape[0]):
        chosen = index[0] if full else index[chain]  # not read when full
        _chain_sums(theta[chain], ratings, chosen, full, n_users, n_items, k, base, tau[chain], scale, out[chain],
                    squares[chain], with_moments)
    return out


@numba.njit(**_JIT)
def row_gradient_sums(theta, rows, with_scatter, hyperparameters):
    """(Σ_i g_i (d,), Σ_i (g_i − ḡ)² (d,) as Σ g_i² − (Σ g_i)²/n clipped at 0, zeros unless ``with_scatter``) of one
    chain's θ (d,) on the rating rows (n, 3), given its :data:`STATE`."""
    tau, base = hyperparameters[0], hyperparameters[1]
    n_users, n_items, k = int(hyperparameters[2]), int(hyperparameters[3]), int(hyperparameters[4])
    total = np.zeros(theta.shape[0])
    squares = np.zeros(theta.shape[0])
    _chain_sums(theta, rows, np.zeros(0, dtype=np.int64), True, n_users, n_items, k, base, tau, -1.0, total, squares,
                with_scatter)
    if with_scatter:
        n = rows.shape[0]
        for q in range(total.shape[0]):
            squares[q] = max(squares[q] - total[q] * total[q] / n, 0.0)
    return total, squares


@numba.njit(**_JIT)
def prior_gradient(theta, hyperparameters):
    """∇log p(θ | λ) = −λ_g θ_g of one chain given its :data:`STATE` (the grouped prior after the first five)."""
    return grouped_prior_gradient(theta, hyperparameters[STATE_SIZE:])
