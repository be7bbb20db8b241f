"""Gradient of the LDA log posterior in the expanded-mean parameterisation (SPEC §2 T10).

Model (Patterson & Teh 2013, §4): θ_kw ~ Gamma(β, 1) iid, φ_kw = θ_kw / θ_k· with θ_k· = Σ_w θ_kw; per document
π_d ~ Dir(α) (marginalised), z_di ~ π_d, w_di ~ φ_{z_di}. With the topic indicators integrated out by their
posterior given φ (Fisher's identity; Patterson & Teh §4), a minibatch D_t of a corpus of D documents gives
the unbiased estimate

    ∂log p(θ | w)/∂θ_kw ≈ (β − 1)/θ_kw − 1 + (D/|D_t|) Σ_{d∈D_t} E[n_dkw/θ_kw − n_dk·/θ_k·]
                        = (β − 1)/θ_kw − 1 + (D/|D_t|)(B̄_kw/θ_kw − B̄_k·/θ_k·),

B̄_kw = Σ_{d∈D_t} E[n_dkw | w_d, φ] (estimated by :func:`sgmcmc.lda.gibbs.topic_counts`), B̄_k· = Σ_w B̄_kw. With
the metric G(θ) = diag(θ)⁻¹ (Patterson & Teh §3–4; Ma et al. 2015 §4.2) the Riemannian drift is

    G⁻¹∇log p + Γ = θ·∇log p + 1 = β − θ_kw + (D/|D_t|)(B̄_kw − B̄_k·φ_kw),

Γ_i = Σ_j ∂_j G⁻¹_ij = 1 — the drift of the SGRLD code's update (SPEC T10; the code's comment calls it
"Equation 11 in paper").

Both functions take θ of shape (K, W) or (n_chains, K, W) (chains first) and B̄ of shape (K, W) (shared by every
chain) or the shape of θ.
"""

from __future__ import annotations

import numpy as np


def log_posterior_gradient(theta: np.ndarray, topic_word: np.ndarray, beta: float, corpus_size: float,
                           batch_size: int) -> np.ndarray:
    """∇_θ log p(θ | w) estimated from one minibatch (SPEC T10); the caller negates it for ∇Ũ.

    Parameters
    ----------
    theta : array (K, W) or (n_chains, K, W)
        Positive expanded-mean parameters.
    topic_word : array (K, W) or theta's shape
        B̄, the averaged topic–word counts summed over the minibatch's documents.
    beta : float
        Gamma(β, 1) prior shape (SPEC: β = 1e−4).
    corpus_size : float
        D, the number of documents in the corpus (SPEC: 3.3·10⁶).
    batch_size : int
        |D_t|, the number of documents B̄ was summed over.

    Returns
    -------
    array of theta's shape
        (β − 1)/θ − 1 + (D/|D_t|)(B̄/θ − B̄_k·/θ_k·).
    """
    theta, topic_word, scale = _check(theta, topic_word, beta, corpus_size, batch_size)
    row_counts = topic_word.sum(axis=-1, keepdims=True)
    row_mass = theta.sum(axis=-1, keepdims=True)
    return (beta - 1.0) / theta - 1.0 + scale * (topic_word / theta - row_counts / row_mass)


def riemannian_drift(theta: np.ndarray, topic_word: np.ndarray, beta: float, corpus_size: float,
                     batch_size: int) -> np.ndarray:
    """G(θ)⁻¹∇log p + Γ with G⁻¹ = diag(θ), Γ = 1: β − θ + (D/|D_t|)(B̄ − B̄_k·φ) (SPEC T10, code form).

    Same arguments as :func:`log_posterior_gradient`; equals ``theta * log_posterior_gradient(...) + 1``.
    """
    theta, topic_word, scale = _check(theta, topic_word, beta, corpus_size, batch_size)
    phi = theta / theta.sum(axis=-1, keepdims=True)
    return beta - theta + scale * (topic_word - topic_word.sum(axis=-1, keepdims=True) * phi)


def _check(theta, topic_word, beta, corpus_size, batch_size):
    """(θ, B̄, D/|D_t|) after shape and value checks; one-line ValueErrors."""
    theta = np.asarray(theta, dtype=float)
    topic_word = np.asarray(topic_word, dtype=float)
    if theta.ndim not in (2, 3):
        raise ValueError(f"theta must have shape (K, W) or (n_chains, K, W); got {theta.shape}")
    if topic_word.shape not in (theta.shape, theta.shape[-2:]):
        raise ValueError(f"topic_word must have shape {theta.shape[-2:]} or {theta.shape}; got {topic_word.shape}")
    if not np.isfinite(beta) or beta <= 0:
        raise ValueError(f"beta must be a positive finite number; got {beta!r}")
    if not np.isfinite(corpus_size) or corpus_size <= 0 or batch_size <= 0:
        raise ValueError(f"corpus_size and batch_size must be positive; got {corpus_size!r}, {batch_size!r}")
    return theta, topic_word, float(corpus_size) / float(batch_size)
