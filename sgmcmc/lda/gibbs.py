"""Collapsed Gibbs sampling of LDA topic indicators with the topics fixed (SPEC §2 T10).

For one document d with words w_d1..w_dL and the topic–word matrix φ (K × W) held fixed, the doc–topic weights
π_d ~ Dir(α) are marginalised and the indicators z_di are sampled from (Patterson & Teh 2013 §4; the SGRLD code's
``util_funcs.sample_z_ids``)

    p(z_di = k | z_d¬i, w_d, φ) ∝ (α + n_dk^{¬di}) · φ_{k, w_di},

n_dk^{¬di} = number of the other tokens of d currently assigned to topic k. The chain starts from z uniform over
the K topics and runs ``n_sweeps`` sweeps (one pass over the tokens of d in text order each). As in the code
(``burn_in = num_samples // 2``, averaging the counts after every sweep with index ``sim >= burn_in``), the
counts are averaged over the sweeps with index s >= n_sweeps // 2 (0-based), i.e. over the last
n_sweeps − n_sweeps // 2 sweeps (25 of the default 50, SPEC §4.11; 3 of 5 for an odd count).

The outputs are the averaged counts Ā_dk ≈ E[n_dk | w_d, φ] per document and their topic–word analogue summed
over the documents, B̄_kw ≈ Σ_d E[n_dkw | w_d, φ] — the expectations in the expanded-mean gradient
(:mod:`sgmcmc.lda.gradient`).

Implementation: one numba kernel, parallel over parts of the document list (one part per thread, split by
token count). Every document reseeds the generator of the thread that runs it with a seed derived from
(``seed``, document index) before its first draw, so the draws of a document — and therefore every output —
do not depend on the number of threads or on the scheduling. The averaged topic–word counts are accumulated as
integers in one (K, W) buffer per part and summed after the parallel loop (integer sums: exact, order-free).
"""

from __future__ import annotations

import numbers
from typing import Sequence

import numba
import numpy as np
from numba import njit, prange

_INT32_MAX = np.iinfo(np.int32).max
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_GROUP = 8  # topics per group of the two-level inverse-CDF draw


def pack(documents: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """CSR-pack documents: ``(word_ids, offsets)``.

    Parameters
    ----------
    documents : sequence of 1-D integer arrays
        Word ids of each document in text order (any integer dtype, values in [0, 2³¹)).

    Returns
    -------
    word_ids : int32 array (T,)
        All tokens, document after document.
    offsets : int64 array (n_docs + 1,)
        Document d is ``word_ids[offsets[d]:offsets[d + 1]]``; ``offsets[0] = 0``, ``offsets[-1] = T``.
    """
    arrays = [np.asarray(doc) for doc in documents]
    if any(a.ndim != 1 or (a.size and a.dtype.kind not in "iu") for a in arrays):
        raise ValueError("every document must be a 1-D array of integer word ids")
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    np.cumsum([a.size for a in arrays], out=offsets[1:])
    if not arrays or offsets[-1] == 0:
        return np.zeros(0, dtype=np.int32), offsets
    word_ids = np.concatenate([a for a in arrays if a.size])
    if word_ids.dtype != np.int32 and (word_ids.min() < 0 or word_ids.max() > _INT32_MAX):
        raise ValueError(f"word ids must lie in [0, {_INT32_MAX}]; got values in "
                         f"[{word_ids.min()}, {word_ids.max()}]")
    return word_ids.astype(np.int32, copy=False), offsets


@njit(cache=True)
def document_seeds(seed, n_docs):
    """Per-document 32-bit seeds (n_docs,) derived from (``seed``, document index) by the splitmix64 mixer: seed d is
    the top 32 bits of splitmix64(splitmix64(seed) + (d + 1)·γ), γ the golden-ratio constant (integers wrap mod 2⁶⁴)."""
    base = _splitmix64(np.uint64(seed))
    out = np.empty(n_docs, dtype=np.int64)
    for d in range(n_docs):
        out[d] = np.int64(_splitmix64(base + np.uint64(d + 1) * _GOLDEN) >> np.uint64(32))
    return out


@njit(cache=True)
def _splitmix64(x):
    """Steele, Lea & Flood's splitmix64 output function of the uint64 ``x``."""
    x = x + _GOLDEN
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def topic_counts(word_ids: np.ndarray, offsets: np.ndarray, phi: np.ndarray, alpha: float, n_sweeps: int,
                 seed: int, n_vocab: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Averaged topic counts of collapsed Gibbs sampling with φ fixed (SPEC T10; module docstring), with its
    arguments checked: :func:`averaged_counts`.

    Parameters
    ----------
    word_ids, offsets : arrays
        The documents, CSR-packed as by :func:`pack` (integer dtypes; ids in [0, W)).
    phi : float array (K, W)
        Topic–word probabilities φ_kw = θ_kw/θ_k·, every entry positive and finite. Used as given: a common
        factor of all entries does not matter, but rows are not normalised here (pass φ, not θ).
    alpha : float
        Dirichlet doc–topic concentration α > 0.
    n_sweeps : int
        Number of Gibbs sweeps G >= 2; counts are averaged over sweeps G // 2, ..., G − 1.
    seed : int
        Non-negative integer; document d uses the seed ``document_seeds(seed, n_docs)[d]``.
    n_vocab : int, optional
        W, if the caller wants it checked against ``phi.shape[1]``.

    Returns
    -------
    topic_word : float64 array (K, W)
        B̄_kw = Σ_d (averaged number of tokens of word w in d assigned to topic k).
    doc_topic : float64 array (n_docs, K)
        Ā_dk = averaged number of tokens of d assigned to topic k (rows sum to the document lengths).
    """
    word_ids, offsets, phi, alpha, n_sweeps, seed = _validate(word_ids, offsets, phi, alpha, n_sweeps, seed,
                                                              n_vocab)
    return averaged_counts(word_ids, offsets, phi, alpha, n_sweeps, np.uint64(seed), numba.get_num_threads())


@njit(cache=True)
def averaged_counts(word_ids, offsets, phi, alpha, n_sweeps, seed, n_threads):
    """:func:`topic_counts` of arguments already checked (``seed`` a uint64), callable from compiled code (a target's
    gradient on the engine's blocks): the documents split by token count into ``n_threads`` parts (numba's threads:
    asked for by the caller, as a compiled function that asks for them cannot be cached), the Gibbs kernel, and the
    integer sums averaged over the last n_sweeps − n_sweeps // 2 sweeps. No output depends on ``n_threads``."""
    n_topics, n_words = phi.shape
    n_docs = offsets.shape[0] - 1
    burn_in = n_sweeps // 2
    n_averaged = n_sweeps - burn_in
    if n_docs == 0 or word_ids.shape[0] == 0:
        return np.zeros((n_topics, n_words)), np.zeros((n_docs, n_topics))
    n_parts = max(1, min(n_threads, n_docs))
    # Part boundaries (document indices) splitting the tokens as evenly as document boundaries allow.
    parts = np.searchsorted(offsets, np.linspace(0, word_ids.shape[0], n_parts + 1)).astype(np.int64)
    parts[0], parts[-1] = 0, n_docs
    for part in range(1, n_parts + 1):
        parts[part] = max(parts[part], parts[part - 1])
    phi_t = np.zeros((n_words, -(-n_topics // _GROUP) * _GROUP))
    phi_t[:, :n_topics] = phi.T
    word_sums, doc_sums = _gibbs_kernel(word_ids, offsets, phi_t, n_topics, alpha, n_sweeps, burn_in,
                                        document_seeds(seed, n_docs), parts)
    return word_sums.sum(axis=0) / n_averaged, doc_sums / n_averaged


@njit(parallel=True, cache=True)
def _gibbs_kernel(word_ids, offsets, phi_t, n_topics, alpha, n_sweeps, burn_in, doc_seeds, parts):
    """Integer sums over the averaged sweeps: per-part topic–word counts (n_parts, K, W), doc–topic (n_docs, K).

    Part p is documents ``parts[p]`` to ``parts[p + 1] − 1``; the parts run in parallel.

    ``phi_t`` is φᵀ zero-padded to (W, K_pad), K_pad a multiple of ``_GROUP``, C-contiguous (a token's weights
    adjacent in memory). A token's topic is drawn by inversion of the cumulative sum of the weights
    p_k = (α + n_dk^{¬di})φ_{k,w} with one uniform u ~ U(0, Σ_k p_k): first over the sums of groups of
    ``_GROUP`` consecutive topics, then within the chosen group (same distribution as one cumulative sum over
    all K, shorter dependency chain). Padding topics have p_k = 0 and are never drawn.
    """
    n_words, n_padded = phi_t.shape
    n_groups = n_padded // _GROUP
    n_docs = offsets.shape[0] - 1
    n_parts = parts.shape[0] - 1
    z = np.empty(word_ids.shape[0], dtype=np.int32)
    word_sums = np.zeros((n_parts, n_topics, n_words), dtype=np.int64)
    doc_sums = np.zeros((n_docs, n_topics), dtype=np.int64)
    for part in prange(n_parts):
        counts = np.zeros(n_padded, dtype=np.float64)  # n_dk (exact small integers)
        weights = np.empty(n_padded, dtype=np.float64)
        group_sums = np.empty(n_groups, dtype=np.float64)
        for d in range(parts[part], parts[part + 1]):
            start = offsets[d]
            stop = offsets[d + 1]
            np.random.seed(doc_seeds[d])
            counts[:] = 0.0
            uniforms = np.random.random(stop - start)
            for i in range(start, stop):  # z uniform over the K topics
                k = min(int(uniforms[i - start] * n_topics), n_topics - 1)
                z[i] = k
                counts[k] += 1.0
            for sweep in range(n_sweeps):
                uniforms = np.random.random(stop - start)  # one per token
                for i in range(start, stop):
                    w = word_ids[i]
                    counts[z[i]] -= 1.0  # n_dk^{¬di}
                    for k in range(n_padded):
                        weights[k] = (alpha + counts[k]) * phi_t[w, k]
                    total = 0.0
                    for g in range(n_groups):
                        partial = 0.0
                        for j in range(g * _GROUP, (g + 1) * _GROUP):
                            partial += weights[j]
                        group_sums[g] = partial
                        total += partial
                    u = uniforms[i - start] * total
                    g = 0
                    while g < n_groups - 1 and u >= group_sums[g]:
                        u -= group_sums[g]
                        g += 1
                    k = g * _GROUP
                    last = k + _GROUP - 1
                    while k < last and u >= weights[k]:
                        u -= weights[k]
                        k += 1
                    k = min(k, n_topics - 1)  # a padding topic only through rounding with u ≈ total
                    z[i] = k
                    counts[k] += 1.0
                if sweep >= burn_in:
                    for k in range(n_topics):
                        doc_sums[d, k] += int(counts[k])
                    for i in range(start, stop):
                        word_sums[part, z[i], word_ids[i]] += 1
    return word_sums, doc_sums


def _validate(word_ids, offsets, phi, alpha, n_sweeps, seed, n_vocab):
    """Checked and converted arguments of :func:`topic_counts`; one-line ValueErrors."""
    word_ids = np.asarray(word_ids)
    offsets = np.asarray(offsets)
    phi = np.asarray(phi)
    if word_ids.ndim != 1 or (word_ids.size and word_ids.dtype.kind not in "iu"):
        raise ValueError(f"word_ids must be a 1-D integer array; got shape {word_ids.shape}, dtype {word_ids.dtype}")
    if offsets.ndim != 1 or offsets.size < 1 or offsets.dtype.kind not in "iu":
        raise ValueError(f"offsets must be a 1-D integer array of length n_docs + 1; got shape {offsets.shape}, "
                         f"dtype {offsets.dtype}")
    if offsets[0] != 0 or offsets[-1] != word_ids.size or np.any(np.diff(offsets) < 0):
        raise ValueError(f"offsets must start at 0, be non-decreasing and end at len(word_ids) = {word_ids.size}")
    if phi.ndim != 2 or phi.shape[0] < 1 or phi.shape[1] < 1 or phi.dtype.kind not in "fiu":
        raise ValueError(f"phi must be a real (K, W) array with K, W >= 1; got shape {phi.shape}, dtype {phi.dtype}")
    phi = phi.astype(np.float64, copy=False)
    if not np.all(np.isfinite(phi)) or not np.all(phi > 0):
        raise ValueError("phi must be positive and finite everywhere")
    n_words = phi.shape[1]
    if n_vocab is not None and (isinstance(n_vocab, bool) or not isinstance(n_vocab, numbers.Integral)
                                or n_vocab != n_words):
        raise ValueError(f"n_vocab = {n_vocab!r} does not match phi.shape[1] = {n_words}")
    if word_ids.size and (word_ids.min() < 0 or word_ids.max() >= n_words):
        raise ValueError(f"word ids must lie in [0, {n_words}); got values in [{word_ids.min()}, {word_ids.max()}]")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not np.isfinite(alpha) or alpha <= 0:
        raise ValueError(f"alpha must be a positive finite number; got {alpha!r}")
    if isinstance(n_sweeps, bool) or not isinstance(n_sweeps, numbers.Integral) or n_sweeps < 2:
        raise ValueError(f"n_sweeps must be an integer >= 2; got {n_sweeps!r}")
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2**64:
        raise ValueError(f"seed must be an integer in [0, 2**64); got {seed!r}")
    return (word_ids.astype(np.int32, copy=False), offsets.astype(np.int64, copy=False), phi, float(alpha),
            int(n_sweeps), int(seed))
