"""Tests of :mod:`sgmcmc.lda`, with the exact enumeration of topic assignments of tiny documents they share."""

import itertools
from contextlib import contextmanager

import numba
import numpy as np
from scipy.special import gammaln, logsumexp


def exact_document(doc, phi, alpha):
    """Exact posterior moments of one tiny document by enumerating all K^L topic assignments.

    With π_d ~ Dir(α) marginalised, p(z, w | φ) = Γ(Kα)/Γ(Kα + L) · Π_k Γ(α + n_k)/Γ(α) · Π_i φ_{z_i w_i}.

    Returns (E[n_kw] (K, W), E[n_k] (K,), log p(w | φ)).
    """
    doc = np.asarray(doc)
    n_topics, n_words = phi.shape
    length = doc.size
    z = np.array(list(itertools.product(range(n_topics), repeat=length)), dtype=int).reshape(-1, length)
    one_hot = z[:, :, None] == np.arange(n_topics)  # (n_assignments, L, K)
    counts = one_hot.sum(axis=1)
    log_weight = (gammaln(n_topics * alpha) - gammaln(n_topics * alpha + length)
                  + np.sum(gammaln(alpha + counts) - gammaln(alpha), axis=1)
                  + np.sum(np.log(phi[z, doc[None, :]]), axis=1))
    log_marginal = logsumexp(log_weight)
    posterior = np.exp(log_weight - log_marginal)
    word_one_hot = doc[:, None] == np.arange(n_words)  # (L, W)
    topic_word = np.einsum("a,alk,lw->kw", posterior, one_hot, word_one_hot)
    return topic_word, posterior @ counts, log_marginal


def reference_gibbs(doc, phi, alpha, n_sweeps, n_chains, rng, exclude_self=True):
    """Pure-numpy collapsed Gibbs sampler on one document, vectorised over independent chains.

    p(z_i = k | ·) ∝ (alpha + n_k^{¬i}) φ_{k, w_i}, or with n_k including token i itself when ``exclude_self`` is
    False (a deliberately wrong conditional); z starts uniform; counts averaged over sweeps >= n_sweeps // 2.
    Returns per-chain averaged (n_kw (n_chains, K, W), n_k (n_chains, K)).
    """
    doc = np.asarray(doc)
    n_topics, n_words = phi.shape
    chains = np.arange(n_chains)
    z = rng.integers(n_topics, size=(n_chains, doc.size))
    counts = np.zeros((n_chains, n_topics))
    np.add.at(counts, (chains[:, None], z), 1.0)
    sum_counts = np.zeros((n_chains, n_topics))
    sum_topic_word = np.zeros((n_chains, n_topics, n_words))
    burn_in = n_sweeps // 2
    for sweep in range(n_sweeps):
        for i, word in enumerate(doc):
            if exclude_self:
                counts[chains, z[:, i]] -= 1.0
            cumulative = np.cumsum((alpha + counts) * phi[:, word], axis=1)
            u = rng.random(n_chains) * cumulative[:, -1]
            new = np.minimum((cumulative <= u[:, None]).sum(axis=1), n_topics - 1)
            if not exclude_self:
                counts[chains, z[:, i]] -= 1.0
            counts[chains, new] += 1.0
            z[:, i] = new
        if sweep >= burn_in:
            sum_counts += counts
            np.add.at(sum_topic_word, (chains[:, None], z, doc[None, :]), 1.0)
    n_averaged = n_sweeps - burn_in
    return sum_topic_word / n_averaged, sum_counts / n_averaged


@contextmanager
def numba_threads(n):
    """Run the block with ``numba.set_num_threads(n)``, restoring the previous count afterwards."""
    before = numba.get_num_threads()
    numba.set_num_threads(n)
    try:
        yield
    finally:
        numba.set_num_threads(before)
