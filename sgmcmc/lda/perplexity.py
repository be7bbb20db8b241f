"""Held-out perplexity of online LDA with a running average of the predictive (SPEC §3 "Perplexity (E3)", §4.11).

As the SGRLD code's ``holdout_log_pred``: each held-out document is split by word position — token i with
i % every == 0 (every = 10) is a test token, the others are its "train" part. At evaluation s, with the current
topics φ^{(s)} fixed, collapsed Gibbs sampling on the train parts (:func:`sgmcmc.lda.gibbs.topic_counts`) gives
the averaged doc–topic counts Ā_dk, and

    η̂_dk = (Ā_dk + α)/(n_d + Kα),      p^{(s)}(w | d) = Σ_k η̂_dk φ^{(s)}_kw,

n_d = number of train tokens of d. The predictive of every test token is averaged over the evaluations so far,
p̄(w | d) = (1/S) Σ_s p^{(s)}(w | d), and the perplexity is exp(−Σ_{test tokens} log p̄(w | d) / N_test) (the code's
sum over distinct words weighted by their test counts is the same sum).

Edge cases: a document with no train tokens (length 1 for every = 10) has Ā_d = 0, so η̂_d = 1/K and its test
tokens are predicted by the topic average Σ_k φ_kw / K — the code's value too; a document without test tokens (an
empty one) contributes nothing. A set of documents with no test token at all is refused.
"""

from __future__ import annotations

import numbers
from typing import Sequence

import numpy as np

from sgmcmc.lda.gibbs import pack, topic_counts


class HeldOutPerplexity:
    """Running-average held-out perplexity (SPEC §3 E3).

    Parameters
    ----------
    documents : sequence of 1-D integer arrays
        The held-out documents (word ids in text order).
    alpha : float
        Dirichlet doc–topic concentration α > 0 (SPEC: 0.01).
    n_sweeps : int
        Gibbs sweeps per evaluation (default 50; the last 25 averaged, see :mod:`sgmcmc.lda.gibbs`).
    every : int
        Token i of a document is a test token when i % every == 0 (default 10), >= 2.

    Attributes
    ----------
    n_updates : int
        Evaluations averaged so far.
    n_test_tokens : int
        N_test.
    n_train_tokens : int array (n_docs,)
        n_d.
    test_words, test_docs : int arrays (N_test,)
        Word id and document index of each test token.
    """

    def __init__(self, documents: Sequence[np.ndarray], alpha: float, n_sweeps: int = 50, every: int = 10):
        if isinstance(every, bool) or not isinstance(every, numbers.Integral) or every < 2:
            raise ValueError(f"every must be an integer >= 2; got {every!r}")
        # Check α and n_sweeps now rather than at the first update (an empty call returns at once).
        topic_counts(np.zeros(0, np.int32), np.zeros(1, np.int64), np.ones((1, 1)), alpha, n_sweeps, 0)
        word_ids, offsets = pack(documents)
        n_docs = offsets.size - 1
        lengths = np.diff(offsets)
        position = np.arange(word_ids.size) - np.repeat(offsets[:-1], lengths)
        is_test = position % every == 0
        doc_of_token = np.repeat(np.arange(n_docs), lengths)
        if not np.any(is_test):
            raise ValueError("the held-out documents have no test token (all are empty)")
        self.alpha = float(alpha)
        self.n_sweeps = int(n_sweeps)
        self.every = int(every)
        self.test_words = word_ids[is_test]
        self.test_docs = doc_of_token[is_test]
        self.n_train_tokens = np.bincount(doc_of_token[~is_test], minlength=n_docs)
        self._train_words = word_ids[~is_test]
        self._train_offsets = np.concatenate([[0], np.cumsum(self.n_train_tokens)]).astype(np.int64)
        self._sum = np.zeros(self.test_words.size)
        self.n_updates = 0

    @property
    def n_test_tokens(self) -> int:
        return int(self.test_words.size)

    def predictive(self, phi: np.ndarray, seed: int) -> np.ndarray:
        """p^{(s)}(w | d) of every test token under ``phi`` (K, W), without touching the running average.

        ``seed`` is passed to :func:`sgmcmc.lda.gibbs.topic_counts` on the packed train parts.
        """
        phi = np.asarray(phi, dtype=float)
        _, doc_topic = topic_counts(self._train_words, self._train_offsets, phi, self.alpha, self.n_sweeps, seed)
        n_topics = phi.shape[0]
        eta = (doc_topic + self.alpha) / (self.n_train_tokens[:, None] + n_topics * self.alpha)
        return np.einsum("tk,kt->t", eta[self.test_docs], phi[:, self.test_words])

    def update(self, phi: np.ndarray, seed: int) -> float:
        """Add the predictive under ``phi`` to the running average; return exp(−mean log p̄) over the test tokens."""
        self._sum += self.predictive(phi, seed)
        self.n_updates += 1
        return self.perplexity()

    def perplexity(self) -> float:
        """exp(−Σ log p̄(w | d)/N_test) of the running average (NaN before the first update)."""
        if self.n_updates == 0:
            return float("nan")
        return float(np.exp(-np.mean(np.log(self._sum / self.n_updates))))

    def state(self) -> dict:
        """The running average as ``{"sum_predictive": (N_test,) float array (a copy), "n_updates": int}``."""
        return {"sum_predictive": self._sum.copy(), "n_updates": self.n_updates}

    def load_state(self, state: dict) -> None:
        """Restore a :meth:`state` of an instance built on the same documents and ``every``."""
        total = np.asarray(state["sum_predictive"], dtype=float)
        count = state["n_updates"]
        if total.shape != self._sum.shape:
            raise ValueError(f"sum_predictive must have shape {self._sum.shape} (one entry per test token); "
                             f"got {total.shape}")
        if isinstance(count, bool) or not isinstance(count, numbers.Integral) or count < 0:
            raise ValueError(f"n_updates must be a non-negative integer; got {count!r}")
        self._sum = total.copy()
        self.n_updates = int(count)
