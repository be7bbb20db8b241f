"""The baseline a user would pick instead of SG-MCMC for LDA: online variational Bayes (Hoffman, Blei & Bach
2010) as scikit-learn implements it (``LatentDirichletAllocation(learning_method="online")``), fed the same
document stream and scored by the same held-out perplexity estimator (SPEC §3 "Perplexity (E3)") from its
topics φ_kw = λ_kw / λ_k·.
"""

from __future__ import annotations

import time
from typing import Iterable

import numpy as np
from scipy.sparse import csr_matrix


def count_matrix(documents: list, n_vocab: int) -> csr_matrix:
    """Documents (int32 word-id arrays) → their (n_docs, W) word-count matrix."""
    lengths = [len(doc) for doc in documents]
    rows = np.repeat(np.arange(len(documents)), lengths)
    words = np.concatenate(documents) if documents else np.zeros(0, dtype=np.int32)
    matrix = csr_matrix((np.ones(words.size), (rows, words)), shape=(len(documents), n_vocab))
    matrix.sum_duplicates()
    return matrix


def online_variational_lda(batches: Iterable[list], n_vocab: int, scorer, *, n_topics: int, alpha: float, beta: float,
                           corpus_size: float, evaluate_every: int = 10, seed: int = 0) -> tuple[list[dict], float]:
    """Run scikit-learn's online VB over ``batches`` (lists of documents), scoring its topics with ``scorer``
    (a :class:`~sgmcmc.lda.perplexity.HeldOutPerplexity`) after every ``evaluate_every`` minibatches and at the end.

    The model is the samplers' (document–topic prior α, topic–word prior β, K topics, D = ``corpus_size``);
    the learning rate is scikit-learn's default (τ₀ = 10, κ = 0.7). Returns the trace rows
    (``step``, ``documents``, ``perplexity``) and the seconds spent fitting (scoring excluded).
    """
    from sklearn.decomposition import LatentDirichletAllocation

    model = LatentDirichletAllocation(n_components=n_topics, doc_topic_prior=alpha, topic_word_prior=beta,
                                      learning_method="online", total_samples=corpus_size, random_state=seed)
    rng = np.random.default_rng(seed)
    trace, fitting, documents, step = [], 0.0, 0, 0
    for step, batch in enumerate(batches, start=1):
        counts = count_matrix(batch, n_vocab)
        start = time.perf_counter()
        model.partial_fit(counts)
        fitting += time.perf_counter() - start
        documents += len(batch)
        if step % evaluate_every == 0:
            trace.append(_score(model, scorer, rng, step, documents))
    if step and step % evaluate_every:
        trace.append(_score(model, scorer, rng, step, documents))
    return trace, fitting


def _score(model, scorer, rng, step: int, documents: int) -> dict:
    phi = model.components_ / model.components_.sum(axis=1, keepdims=True)
    return {"step": step, "documents": documents, "perplexity": scorer.update(phi, int(rng.integers(2**62)))}
