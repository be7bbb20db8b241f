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
  per-rating gradients' scatter needs); only the 2k + 2 entries of each rating are touched.

All run on one thread (2 cores shared with the sampler and other processes), in the order of the ratings given.
"""

from __future__ import annotations

import numba
import numpy as np

# error_model="numpy": no ZeroDivisionError checks in the loops (none divide); cache: compiled once per machine.
_JIT = dict(cache=True, error_model="numpy")

# One training rating as the minibatch kernel reads it: user, item and y in one 16-byte record, so that a randomly
# drawn rating costs one cache miss, not one per array (measured at full size, n = 4000: 0.9 ms per minibatch
# gradient against 1.4 ms with three separate arrays).
RATING = np.dtype([("user", np.int32), ("item", np.int32), ("y", np.float64)])


def rating_table(users: np.ndarray, items: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The :data:`RATING` records (N,) of the ratings (users, items, y), in their order."""
    table = np.empty(len(y), dtype=RATING)
    table["user"], table["item"], table["y"] = users, items, y
    return table


@numba.njit(**_JIT)
def _residual(y, base, theta, chain, u, v, n_users, n_items, k):
    """e = y − (base + a_u + b_v + U_u · V_v) of chain ``chain``."""
    uo = u * k
    vo = (n_users + v) * k
    bias = (n_users + n_items) * k
    total = base + theta[chain, bias + u] + theta[chain, bias + n_users + v]
    for j in range(k):
        total += theta[chain, uo + j] * theta[chain, vo + j]
    return y - total


@numba.njit(**_JIT)
def predictions(theta, users, items, n_users, n_items, k, base, out):
    """``out[c, i]`` = ŷ of pair i (users[i], items[i]) under chain c's θ; out (c, m)."""
    bias = (n_users + n_items) * k
    for chain in range(theta.shape[0]):
        for i in range(users.shape[0]):
            u = users[i]
            v = items[i]
            uo = u * k
            vo = (n_users + v) * k
            total = base + theta[chain, bias + u] + theta[chain, bias + n_users + v]
            for j in range(k):
                total += theta[chain, uo + j] * theta[chain, vo + j]
            out[chain, i] = total
    return out


@numba.njit(**_JIT)
def squared_residuals(theta, table, n_users, n_items, k, base):
    """Σ_i (y_i − ŷ_i)² over all the ratings of ``table`` (:data:`RATING` records), per chain: (c,)."""
    out = np.zeros(theta.shape[0])
    for chain in range(theta.shape[0]):
        total = 0.0
        for i in range(table.shape[0]):
            rating = table[i]
            e = _residual(rating.y, base, theta, chain, rating.user, rating.item, n_users, n_items, k)
            total += e * e
        out[chain] = total
    return out


@numba.njit(**_JIT)
def gradient_sums(theta, table, index, full, n_users, n_items, k, base, tau, scale, out, squares, with_moments):
    """``out[c]`` += −scale · Σ_{i∈S_c} g_i with g_i = τ_c e_i ∂ŷ_i/∂θ (module docstring), S_c = ``index[c]`` (or every
    rating of ``table`` when ``full``; ``index`` is then not read), and with ``with_moments`` ``squares[c]`` +=
    Σ_{i∈S_c} g_i² entrywise. ``tau`` (c,) per chain; ``out`` and ``squares`` (c, d) are added to, not cleared."""
    bias = (n_users + n_items) * k
    batch = table.shape[0] if full else index.shape[1]
    for chain in range(theta.shape[0]):
        t = tau[chain]
        for b in range(batch):
            rating = table[b if full else index[chain, b]]  # one 16-byte record: one cache line
            u = rating.user
            v = rating.item
            uo = u * k
            vo = (n_users + v) * k
            g = t * _residual(rating.y, base, theta, chain, u, v, n_users, n_items, k)  # τ e_i
            w = scale * g
            for j in range(k):
                out[chain, uo + j] -= w * theta[chain, vo + j]
                out[chain, vo + j] -= w * theta[chain, uo + j]
            out[chain, bias + u] -= w
            out[chain, bias + n_users + v] -= w
            if with_moments:
                gg = g * g
                for j in range(k):
                    squares[chain, uo + j] += gg * theta[chain, vo + j] ** 2
                    squares[chain, vo + j] += gg * theta[chain, uo + j] ** 2
                squares[chain, bias + u] += gg
                squares[chain, bias + n_users + v] += gg
    return out
