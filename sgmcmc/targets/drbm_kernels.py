"""The DRBM's per-example gradients as compiled kernels (numba): the forward pass, the class posterior and the
gradient of log p(y_i | x_i) of one example at a time, fused, for the minibatch paths of
:class:`sgmcmc.targets.drbm.DiscriminativeRBM` (whose numpy methods stay the readable reference; the tests pin
the two together to 1e-12 relative to the largest entry).

Notation as in :mod:`sgmcmc.targets.drbm`: o_{yj} = pre_j + U_{jy} with pre_j = c_j + Σ_k W_{jk} x_k. Per example
the kernel computes

- e^{−|o_{yj}|} without an exponential per (y, j): e^{o} = e^{pre_j}·e^{U_{jy}}, from H exponentials per example
  and 2·H·C per chain (``_SAFE`` bounds |pre_j| and |U_{jy}| so that neither factor overflows nor is subnormal;
  beyond it, e^{−|o|} is computed directly);
- Σ_j softplus(o_{yj}) = Σ_j max(o_{yj}, 0) + log Π_j (1 + e^{−|o_{yj}|}): one logarithm per class (the product,
  of factors in (1, 2], is folded into the sum every ``_FOLD`` hidden units);
- σ(o) = 1/(1 + e^{−o}) from the same e^{−|o|}; log p by log-softmax; the gradient
  (∂W = x ⊗ (σ(o_y) − s̄), ∂c = σ(o_y) − s̄, ∂U_{jy'} = σ(o_{y'j})(1[y = y'] − p_{y'}), ∂d = 1[y = ·] − p)
  into a row of length dim, packed like θ.

Drivers: :func:`per_example_gradients` writes the (c, b, dim) rows; :func:`gradient_sums` gives only the sums
Σ_i g_i (c, dim) and, when asked, the centred second moments Σ_i (g_i − ḡ)² (c, dim) (Welford's update over the
examples), never the (c, b, dim) array; :func:`row_gradients` and :func:`row_gradient_sums` are the same for one chain
on its minibatch's rows, the engine's rows and sums doors (:meth:`DiscriminativeRBM.engine_functions`), and
:func:`row_log_likelihoods` the log p(y_i | x_i) of such rows by the same forward pass (:func:`_logits`; a
Metropolis–Hastings test's U). All run on one thread: on 2 cores shared with other processes (and runs with 2 jobs) a
parallel loop over the examples was slower, not faster.
"""

from __future__ import annotations

import math

import numba
import numpy as np

# |pre_j|, |U_jy| <= _SAFE: e^{±pre}·e^{±U} lies in [e^{−600}, e^{600}], normal floats, a few ulp from e^{±o}.
_SAFE = 300.0
# At most this many factors 1 + e^{−|o|} <= 2 are multiplied before their logarithm is taken (2^1000 < 1.8e308).
_FOLD = 1000
# error_model="numpy": x / 0 is inf, not a ZeroDivisionError check in every loop (which stops LLVM vectorising them).
_JIT = dict(cache=True, error_model="numpy")


@numba.njit(**_JIT)
def _tables(theta, n_hidden, n_features, n_classes):
    """One chain's parameters θ (dim,) laid out for the kernel's inner loops over the hidden units: Wᵀ (D, H), Uᵀ,
    e^{Uᵀ}, e^{−Uᵀ} (C, H), and whether every |U_jy| <= _SAFE."""
    H, D, C = n_hidden, n_features, n_classes
    u_start = H * D + H
    weights_t = np.empty((D, H))
    u_t = np.empty((C, H))
    e_u = np.empty((C, H))
    e_u_inverse = np.empty((C, H))
    safe = True
    for j in range(H):
        for k in range(D):
            weights_t[k, j] = theta[j * D + k]
        for y in range(C):
            u = theta[u_start + j * C + y]
            if abs(u) > _SAFE:
                safe = False
            u_t[y, j] = u
            e_u[y, j] = math.exp(u)
            e_u_inverse[y, j] = math.exp(-u)
    return weights_t, u_t, e_u, e_u_inverse, safe


@numba.njit(**_JIT)
def _softplus_sum(y, pre, u_t, sig):
    """Σ_j softplus(o_yj) with e^{−|o|} computed directly, and σ(o_yj) into sig[y]: the path for parameters beyond
    _SAFE or more than _FOLD hidden units (the product is folded into the sum every _FOLD units)."""
    H = pre.shape[0]
    total = 0.0
    for start in range(0, H, _FOLD):
        linear = 0.0
        product = 1.0
        for j in range(start, min(start + _FOLD, H)):
            o = pre[j] + u_t[y, j]
            t = math.exp(-abs(o))
            denominator = 1.0 + t
            r = 1.0 / denominator
            sig[y, j] = r if o >= 0.0 else t * r
            linear += max(o, 0.0)
            product *= denominator
        total += linear + math.log(product)
    return total


@numba.njit(fastmath={"reassoc"}, **_JIT)
def _logits(theta, x, weights_t, u_t, e_u, e_u_inverse, u_safe, pre, a, a_inverse, sig, p):
    """The class logits d_y + Σ_j softplus(o_yj) of one chain's θ (dim,) at the input x (D,) into ``p`` (C,), σ(o_yj)
    into ``sig`` (C, H), and the largest logit returned; ``weights_t`` (D, H), ``u_t``, ``e_u``, ``e_u_inverse``
    (C, H) and ``u_safe`` from :func:`_tables`, ``pre``, ``a``, ``a_inverse`` (H,) scratch space: O(H(D + C)).
    ``reassoc`` lets the sums over the hidden units run as vectors (a different order of the same additions)."""
    D, H = weights_t.shape
    C = u_t.shape[0]
    c_start = H * D
    d_start = c_start + H + H * C
    for j in range(H):
        pre[j] = 0.0
    for k in range(D):
        x_k = x[k]
        for j in range(H):
            pre[j] += weights_t[k, j] * x_k
    fast = u_safe and H <= _FOLD
    for j in range(H):
        pre[j] += theta[c_start + j]
        fast = fast and abs(pre[j]) <= _SAFE
    if fast:
        for j in range(H):
            a[j] = math.exp(pre[j])
            a_inverse[j] = 1.0 / a[j]
    largest = -np.inf
    for y in range(C):
        if fast:  # Σ_j softplus(o_yj) = Σ_j max(o_yj, 0) + log Π_j (1 + e^{−|o_yj|}), e^{−|o|} = e^{∓pre}·e^{∓U}
            linear = 0.0
            product = 1.0
            for j in range(H):
                o = pre[j] + u_t[y, j]
                t_positive = a_inverse[j] * e_u_inverse[y, j]
                t_negative = a[j] * e_u[y, j]
                t = t_positive if o >= 0.0 else t_negative
                denominator = 1.0 + t
                r = 1.0 / denominator
                sig[y, j] = r if o >= 0.0 else t * r
                linear += max(o, 0.0)
                product *= denominator
            softplus = linear + math.log(product)
        else:
            softplus = _softplus_sum(y, pre, u_t, sig)
        p[y] = softplus + theta[d_start + y]  # the logit; log p = log_softmax, as scipy.special computes it
        largest = max(largest, p[y])
    return largest


@numba.njit(fastmath={"reassoc"}, **_JIT)
def _log_total(p, largest):
    """log Σ_y e^{p_y − largest} of the logits p (C,), which are shifted to p_y − largest in place (``reassoc``: the
    order of :func:`_example_gradient`'s sum before it was split out, so that its results are unchanged)."""
    total = 0.0
    for y in range(p.shape[0]):
        p[y] -= largest
        total += math.exp(p[y])
    return math.log(total)


@numba.njit(**_JIT)
def _example_log_likelihood(theta, x, label, weights_t, u_t, e_u, e_u_inverse, u_safe, pre, a, a_inverse, sig, p):
    """log p(label | x) of one chain's θ (dim,): the log-softmax of :func:`_logits` at the label (its arguments)."""
    largest = _logits(theta, x, weights_t, u_t, e_u, e_u_inverse, u_safe, pre, a, a_inverse, sig, p)
    log_total = _log_total(p, largest)
    return p[label] - log_total


@numba.njit(fastmath={"reassoc"}, **_JIT)
def _example_gradient(theta, x, label, weights_t, u_t, e_u, e_u_inverse, u_safe, pre, a, a_inverse, sig, p,
                      residual, hidden, out):
    """g = ∇_θ log p(label | x) of one chain's θ (dim,) into ``out`` (dim,), packed like θ; ``weights_t`` (D, H),
    ``u_t``, ``e_u``, ``e_u_inverse`` (C, H) and ``u_safe`` from :func:`_tables`. ``pre``, ``a``, ``a_inverse``,
    ``hidden`` (H,), ``sig`` (C, H), ``p``, ``residual`` (C,) are scratch space. ``reassoc`` lets the sums over the
    hidden units run as vectors (a different order of the same additions)."""
    D, H = weights_t.shape
    C = u_t.shape[0]
    c_start = H * D
    u_start = c_start + H
    d_start = u_start + H * C
    largest = _logits(theta, x, weights_t, u_t, e_u, e_u_inverse, u_safe, pre, a, a_inverse, sig, p)
    log_total = _log_total(p, largest)
    for y in range(C):
        log_p = p[y] - log_total
        p[y] = math.exp(log_p)
        residual[y] = -math.expm1(log_p) if y == label else -p[y]  # 1 − p_y, accurate when p_y is close to 1
    for j in range(H):
        hidden[j] = 0.0
    for y in range(C):
        p_y = p[y]
        for j in range(H):
            hidden[j] += p_y * sig[y, j]
    for j in range(H):
        hidden[j] = sig[label, j] - hidden[j]  # σ(o_yj) − s̄_j
    for j in range(H):
        h = hidden[j]
        for k in range(D):
            out[j * D + k] = h * x[k]
        out[c_start + j] = h
        for y in range(C):
            out[u_start + j * C + y] = sig[y, j] * residual[y]
    for y in range(C):
        out[d_start + y] = residual[y]


@numba.njit(**_JIT)
def _scratch(n_hidden, n_classes):
    """One work item's scratch space for :func:`_example_gradient`: pre, a, a_inverse (H,), σ (C, H), p, residual
    (C,), hidden (H,)."""
    return (np.empty(n_hidden), np.empty(n_hidden), np.empty(n_hidden), np.empty((n_classes, n_hidden)),
            np.empty(n_classes), np.empty(n_classes), np.empty(n_hidden))


@numba.njit(**_JIT)
def _chain_gradients(theta, features, labels, index, n_hidden, n_classes, out):
    """g_i of one chain's θ (dim,) for the examples ``index`` (b,) of ``features`` (N, D) / ``labels`` (N,) into
    ``out`` (b, dim)."""
    weights_t, u_t, e_u, e_u_inverse, safe = _tables(theta, n_hidden, features.shape[1], n_classes)
    pre, a, a_inverse, sig, p, residual, hidden = _scratch(n_hidden, n_classes)
    for position in range(index.shape[0]):
        example = index[position]
        _example_gradient(theta, features[example], int(labels[example]), weights_t, u_t, e_u, e_u_inverse, safe,
                          pre, a, a_inverse, sig, p, residual, hidden, out[position])


@numba.njit(**_JIT)
def _chain_sums(theta, features, labels, index, n_hidden, n_classes, with_moments, total, moments):
    """Σ_i g_i into ``total`` (dim,) and, if ``with_moments``, Σ_i (g_i − ḡ)² into ``moments`` (dim,) (Welford's
    update over the examples), one gradient row at a time, for one chain's θ (dim,) and the examples ``index`` (b,)."""
    dim = theta.shape[0]
    weights_t, u_t, e_u, e_u_inverse, safe = _tables(theta, n_hidden, features.shape[1], n_classes)
    pre, a, a_inverse, sig, p, residual, hidden = _scratch(n_hidden, n_classes)
    row = np.empty(dim)
    mean = np.zeros(dim)
    for position in range(index.shape[0]):
        example = index[position]
        _example_gradient(theta, features[example], int(labels[example]), weights_t, u_t, e_u, e_u_inverse, safe,
                          pre, a, a_inverse, sig, p, residual, hidden, row)
        for q in range(dim):
            total[q] += row[q]
        if with_moments:  # Welford: the running mean and Σ(g − mean)² after position + 1 examples
            weight = 1.0 / (position + 1)
            for q in range(dim):
                delta = row[q] - mean[q]
                mean[q] += delta * weight
                moments[q] += delta * (row[q] - mean[q])


@numba.njit(**_JIT)
def per_example_gradients(theta, features, labels, index, n_hidden, n_classes, out):
    """g_i for θ (c, dim) and the examples ``index`` (c, b) of ``features`` (N, D) / ``labels`` (N,) into ``out``
    (c, b, dim)."""
    for chain in range(theta.shape[0]):
        _chain_gradients(theta[chain], features, labels, index[chain], n_hidden, n_classes, out[chain])
    return out


@numba.njit(**_JIT)
def gradient_sums(theta, features, labels, index, n_hidden, n_classes, with_moments):
    """(Σ_i g_i (c, dim), Σ_i (g_i − ḡ)² (c, dim), zeros unless ``with_moments``) over the examples ``index`` (c, b):
    the (c, b, dim) per-example array is never formed."""
    total = np.zeros(theta.shape)
    moments = np.zeros(theta.shape)
    for chain in range(theta.shape[0]):
        _chain_sums(theta[chain], features, labels, index[chain], n_hidden, n_classes, with_moments, total[chain],
                    moments[chain])
    return total, moments


# -- the engine's rows door (sgmcmc.engine.estimators): one chain's θ (dim,) and its minibatch's rows (m, D + 2),
# each x_i | y_i | C, the number of classes carried in the rows so that these are plain module functions (cached on
# disk with the blocks that call them) rather than closures over C. H follows from dim = H(D + C + 1) + C.
@numba.njit(**_JIT)
def _shape_of(theta, rows):
    """(D, H, C) of the rows door's θ (dim,) and rows (m, D + 2)."""
    n_features = rows.shape[1] - 2
    n_classes = int(rows[0, n_features + 1])
    return n_features, (theta.shape[0] - n_classes) // (n_features + n_classes + 1), n_classes


@numba.njit(**_JIT)
def row_gradients(theta, rows):
    """g_i = ∇_θ log p(y_i | x_i) (m, dim) of one chain's θ (dim,) on the rows x_i | y_i | C (m, D + 2)."""
    n_features, n_hidden, n_classes = _shape_of(theta, rows)
    out = np.empty((rows.shape[0], theta.shape[0]))
    _chain_gradients(theta, rows[:, :n_features], rows[:, n_features], np.arange(rows.shape[0]), n_hidden,
                     n_classes, out)
    return out


@numba.njit(**_JIT)
def row_log_likelihoods(theta, rows):
    """log p(y_i | x_i) (m,) of one chain's θ (dim,) on the rows x_i | y_i | C (m, D + 2), by the gradient's forward
    pass (:func:`_logits`, O(H(D + C)) a row) and a log-softmax: the terms of −Σ_i in U (:meth:`~sgmcmc.targets.drbm.
    DiscriminativeRBM.potential`) for a Metropolis–Hastings test."""
    n_features, n_hidden, n_classes = _shape_of(theta, rows)
    weights_t, u_t, e_u, e_u_inverse, safe = _tables(theta, n_hidden, n_features, n_classes)
    pre, a, a_inverse, sig, p, _, _ = _scratch(n_hidden, n_classes)
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        out[i] = _example_log_likelihood(theta, rows[i, :n_features], int(rows[i, n_features]), weights_t, u_t, e_u,
                                         e_u_inverse, safe, pre, a, a_inverse, sig, p)
    return out


@numba.njit(**_JIT)
def row_gradient_sums(theta, rows, with_scatter):
    """(Σ_i g_i (dim,), Σ_i (g_i − ḡ)² (dim,), zeros unless ``with_scatter``) of one chain's θ (dim,) on the rows
    x_i | y_i | C (m, D + 2), without the (m, dim) per-example array (d = 4,326 on letter)."""
    n_features, n_hidden, n_classes = _shape_of(theta, rows)
    total = np.zeros(theta.shape[0])
    moments = np.zeros(theta.shape[0])
    _chain_sums(theta, rows[:, :n_features], rows[:, n_features], np.arange(rows.shape[0]), n_hidden, n_classes,
                with_scatter, total, moments)
    return total, moments
