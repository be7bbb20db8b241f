"""Expanded-mean LDA gradient (SPEC §2 T10): the formula, unbiasedness of the minibatch estimate, the drift."""

import numpy as np
import pytest

from sgmcmc.lda.gibbs import pack, topic_counts
from sgmcmc.lda.gradient import log_posterior_gradient, riemannian_drift
from tests.lda import exact_document, numba_threads

ALPHA = 0.5
BETA = 0.7  # β ≠ 1 so that the prior term (β − 1)/θ counts
CORPUS = [np.array(d, dtype=np.int32) for d in
          ([0, 1, 1], [2, 3, 3, 0], [1, 2, 0], [3, 3, 1, 2], [0, 0, 2], [1, 3, 2, 2])]
THETA = np.array([[1.3, 0.4, 0.9, 0.2],
                  [0.3, 1.1, 0.5, 1.6]])


def _exact_counts(theta):
    """Σ_d E[n_dkw] and Σ_d log p(w_d | φ) by enumeration, φ = θ/θ_k·."""
    phi = theta / theta.sum(axis=1, keepdims=True)
    moments = [exact_document(doc, phi, ALPHA) for doc in CORPUS]
    return sum(m[0] for m in moments), sum(m[2] for m in moments)


def _log_joint(theta, copies=1):
    """log Π Gamma(θ_kw; β, 1) + copies · Σ_d log p(w_d | θ), up to a constant."""
    return np.sum((BETA - 1.0) * np.log(theta) - theta) + copies * _exact_counts(theta)[1]


@pytest.mark.parametrize("copies", [1, 2])
def test_closed_form_is_the_derivative_of_the_log_joint(copies):
    """(β−1)/θ − 1 + (D/|D_t|)Σ_d E[n_dkw/θ_kw − n_dk·/θ_k·] = ∂/∂θ [log p(θ) + (D/|D_t|) Σ_d log p(w_d | θ)].

    copies = 2: a corpus of twice the documents seen (D = 12, |D_t| = 6) — catches a missing or doubled scale.
    """
    topic_word, _ = _exact_counts(THETA)
    analytic = log_posterior_gradient(THETA, topic_word, BETA, corpus_size=copies * len(CORPUS),
                                      batch_size=len(CORPUS))
    numeric = np.zeros_like(THETA)
    for index in np.ndindex(THETA.shape):
        step = 1e-6 * THETA[index]
        shift = np.zeros_like(THETA)
        shift[index] = step
        numeric[index] = (_log_joint(THETA + shift, copies) - _log_joint(THETA - shift, copies)) / (2 * step)
    np.testing.assert_allclose(analytic, numeric, rtol=1e-6, atol=1e-7)


def test_minibatch_gradient_with_gibbs_counts_is_unbiased():
    """Mean over random minibatches of 2 (Gibbs expectations, D/|D_t| = 3) = full-corpus gradient (exact)."""
    exact_counts, _ = _exact_counts(THETA)
    full = log_posterior_gradient(THETA, exact_counts, BETA, len(CORPUS), len(CORPUS))
    phi = THETA / THETA.sum(axis=1, keepdims=True)
    rng = np.random.default_rng(12)
    replicates, wrong = [], []
    with numba_threads(1):  # 2,000 tiny calls: no thread wake-ups (results do not depend on the thread count)
        for seed in range(2000):
            batch = rng.choice(len(CORPUS), size=2, replace=False)
            topic_word, _ = topic_counts(*pack([CORPUS[d] for d in batch]), phi, ALPHA, 20, seed)
            replicates.append(log_posterior_gradient(THETA, topic_word, BETA, len(CORPUS), 2))
            wrong.append(log_posterior_gradient(THETA, topic_word, BETA, len(CORPUS), 4))  # scale off by 2
    for samples, should_pass in ((np.array(replicates), True), (np.array(wrong), False)):
        standard_error = samples.std(axis=0, ddof=1) / np.sqrt(samples.shape[0])
        z = np.abs(samples.mean(axis=0) - full) / standard_error
        assert (z.max() < 5.0) == should_pass, z.max()


def test_chains_first_shapes():
    rng = np.random.default_rng(0)
    theta = rng.gamma(2.0, 1.0, size=(3, 2, 4))
    shared = rng.gamma(2.0, 1.0, size=(2, 4))
    per_chain = rng.gamma(2.0, 1.0, size=(3, 2, 4))
    for function in (log_posterior_gradient, riemannian_drift):
        stacked = function(theta, shared, BETA, 100, 5)
        assert stacked.shape == theta.shape
        for c in range(3):
            np.testing.assert_allclose(stacked[c], function(theta[c], shared, BETA, 100, 5), rtol=1e-14)
            np.testing.assert_allclose(function(theta, per_chain, BETA, 100, 5)[c],
                                       function(theta[c], per_chain[c], BETA, 100, 5), rtol=1e-14)


@pytest.mark.parametrize("shape", [(2, 4), (3, 2, 4)])
def test_riemannian_drift_is_theta_times_gradient_plus_one(shape):
    rng = np.random.default_rng(1)
    theta = rng.gamma(0.5, 1.0, size=shape) + 1e-3
    topic_word = rng.poisson(3.0, size=shape[-2:]).astype(float)
    gradient = log_posterior_gradient(theta, topic_word, 1e-4, 3.3e6, 50)
    drift = riemannian_drift(theta, topic_word, 1e-4, 3.3e6, 50)
    np.testing.assert_allclose(drift, theta * gradient + 1.0, rtol=1e-9, atol=1e-9 * np.abs(drift).max())
    phi = theta / theta.sum(axis=-1, keepdims=True)
    code_form = 1e-4 - theta + (3.3e6 / 50) * (topic_word - topic_word.sum(axis=-1, keepdims=True) * phi)
    np.testing.assert_allclose(drift, code_form, rtol=1e-12)


@pytest.mark.parametrize("arguments", [
    (np.ones(4), np.ones(4), BETA, 6, 2),
    (np.ones((2, 4)), np.ones((2, 3)), BETA, 6, 2),
    (np.ones((3, 2, 4)), np.ones((2, 2, 4)), BETA, 6, 2),
    (np.ones((2, 4)), np.ones((2, 4)), 0.0, 6, 2),
    (np.ones((2, 4)), np.ones((2, 4)), BETA, 0, 2),
    (np.ones((2, 4)), np.ones((2, 4)), BETA, 6, 0),
])
def test_bad_arguments_raise_value_error(arguments):
    for function in (log_posterior_gradient, riemannian_drift):
        with pytest.raises(ValueError):
            function(*arguments)
