"""T10, online LDA in the expanded-mean parameterisation (Patterson & Teh 2013; Ma, Chen & Fox 2015 §4.2,
Fig. 3; SPEC §2 T10, §3 E3, §4.11), streamed over documents.

θ ∈ R₊^{K×W} (flattened row-major to ``dim = K·W``) with θ_kw ~ Gamma(β, 1) and topics φ_kw = θ_kw / θ_k·.
Each step takes the next minibatch D_t of the document stream; collapsed Gibbs sampling of the topic
indicators with φ fixed (:func:`sgmcmc.lda.gibbs.averaged_counts`, compiled with numba) gives the averaged
topic–word counts B̄, and

    ∇Ũ(θ) = −[(β − 1)/θ_kw − 1 + (D/|D_t|) Σ_{d∈D_t} E(n_dkw/θ_kw − n_dk·/θ_k·)]      (SPEC T10)

(:func:`batch_gradient`, one chain on one packed minibatch: the function the target hands the engine). The Riemannian samplers use G(θ) = diag(θ)⁻¹
(:class:`sgmcmc.geometry.ExpandedMeanMetric`: G⁻¹ = diag(θ), Γ = 1), which turns SGRLD's step into
Patterson & Teh's θ ← |θ + ε(β − θ + (D/|D_t|)(B̄ − B̄_k·φ)) + √(2εθ) ξ|. After every step θ ← |θ| (the
boundary reflection of [R]). The exact potential and gradient need the whole corpus's marginal likelihood,
which nobody computes: this target has neither (the samplers here never call them).

Metric (SPEC §3 "Perplexity (E3)"): every evaluation, each chain's current φ scores the held-out documents
(the first ``n_held_out`` of the shuffled stream, never trained on) with :class:`HeldOutPerplexity`, whose
predictive is averaged over the evaluations. At the end ``topics.txt`` lists each topic's top words.

Every chain sees the same minibatch; Gibbs seeds come from the run's generator (on the engine's blocks, the
bits of the step's first gradient-noise normal: :func:`sgmcmc.engine.estimators.batch_estimate`), so a seed fixes
the run.
When the stream runs out it starts again: a new pass over the same shuffled stream, so the held-out
documents stay out of training.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Optional

import numba
import numpy as np

from sgmcmc.geometry import ExpandedMeanMetric
from sgmcmc.lda.gibbs import averaged_counts
from sgmcmc.lda.perplexity import HeldOutPerplexity
from sgmcmc.results import write_text
from sgmcmc.targets.base import Target

log = logging.getLogger(__name__)

SEED_BOUND = 2**62


def _positive(name: str, value, integer: bool = False):
    if integer and (isinstance(value, bool) or int(value) != value):
        raise ValueError(f"{name} must be an integer; got {value!r}")
    if not value > 0:
        raise ValueError(f"{name} must be > 0; got {value!r}")
    return int(value) if integer else float(value)


def packed_batch(documents: list) -> np.ndarray:
    """One minibatch as the int64 row :func:`batch_gradient` takes: (n_docs, the offsets (n_docs + 1) of
    :func:`sgmcmc.lda.gibbs.pack`, the word ids)."""
    lengths = [np.size(document) for document in documents]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    words = np.concatenate([np.asarray(document, dtype=np.int64) for document in documents]) if documents else []
    return np.concatenate([[len(documents)], offsets, words]).astype(np.int64)


@numba.njit(cache=True)
def batch_gradient(theta, batch, seed, parameters):
    """∇Ũ(θ) (K·W,) of one chain θ (K·W,) on one :func:`packed_batch` (SPEC T10, module docstring):
    −[(β − 1)/θ_kw − 1 + (D/|D_t|)(B̄_kw/θ_kw − B̄_k·/θ_k·)], B̄ the averaged counts of the Gibbs sweeps seeded by
    ``seed`` (uint64; :func:`sgmcmc.lda.gibbs.averaged_counts`); ``parameters`` = (K, W, α, β, D, sweeps, threads).
    A row may be padded after its words."""
    n_topics, n_vocab, n_sweeps = int(parameters[0]), int(parameters[1]), int(parameters[5])
    beta, n_docs = parameters[3], batch[0]
    # contiguous copies, the word ids as int32: the types topic_counts compiles the Gibbs kernel for, so that one
    # compilation of it (seconds: it is parallel) serves both
    offsets = batch[1:n_docs + 2].copy()
    word_ids = batch[n_docs + 2:n_docs + 2 + offsets[n_docs]].astype(np.int32)
    topics = theta.reshape((n_topics, n_vocab))
    mass, phi = np.empty(n_topics), np.empty((n_topics, n_vocab))
    for k in range(n_topics):
        mass[k] = np.sum(topics[k])
        for w in range(n_vocab):
            phi[k, w] = topics[k, w] / mass[k]
    topic_word, _ = averaged_counts(word_ids, offsets, phi, parameters[2], n_sweeps, seed, int(parameters[6]))
    scale = parameters[4] / n_docs
    out = np.empty(n_topics * n_vocab)
    for k in range(n_topics):
        row_counts = np.sum(topic_word[k])
        for w in range(n_vocab):
            value = topics[k, w]
            out[k * n_vocab + w] = -((beta - 1.0) / value - 1.0
                                     + scale * (topic_word[k, w] / value - row_counts / mass[k]))
    return out


@numba.njit(cache=True)
def reflect_positive(theta, momentum):
    """θ ← |θ| ([R]'s boundary reflection, :meth:`OnlineLDA.reflect`) for one chain θ (d,) in place, r's entries of
    the reflected coordinates flipped (r empty without momentum); returns how many it reflected."""
    count = 0
    for j in range(theta.shape[0]):
        if theta[j] < 0.0:
            theta[j] = -theta[j]
            if momentum.shape[0] > 0:
                momentum[j] = -momentum[j]
            count += 1
    return count


class OnlineLDA(Target):
    """Online LDA over a document stream (SPEC T10).

    Parameters
    ----------
    make_stream : callable
        ``make_stream()`` returns a :class:`sgmcmc.data.documents.DocumentStream`, the same one on every call
        (same seed: the held-out documents and the training order repeat on each pass).
    words : list of str
        The vocabulary (W words, ids in order), used for ``topics.txt``.
    n_topics, alpha, beta, batch_size, n_sweeps, corpus_size
        K, the document–topic Dirichlet α, the topic–word Gamma shape β, |D_t|, Gibbs sweeps per document
        (the last half averaged) and D in the gradient's D/|D_t| (SPEC §4.11 defaults).
    """

    name = "lda"
    random_metrics = True  # the held-out Gibbs sweeps of sample_metrics
    has_exact_density = False
    has_potential = False  # U(θ) and ∇U(θ) need the marginal likelihood of the whole corpus
    has_exact_gradient = False
    bounded = True  # θ > 0, reflected after every step ([R])

    def __init__(self, make_stream: Callable[[], object], words: list[str], n_topics: int = 50, alpha: float = 0.01,
                 beta: float = 1e-4, batch_size: int = 50, n_sweeps: int = 50, corpus_size: float = 3.3e6):
        self.n_topics = _positive("n_topics", n_topics, integer=True)
        self.alpha = _positive("alpha", alpha)
        self.beta = _positive("beta", beta)
        self.batch_size = _positive("batch_size", batch_size, integer=True)
        self.n_sweeps = _positive("n_sweeps", n_sweeps, integer=True)
        if self.n_sweeps < 2:
            raise ValueError(f"n_sweeps must be >= 2 (the last half is averaged); got {n_sweeps}")
        self.corpus_size = _positive("corpus_size", corpus_size)
        self.words = list(words)
        self.n_vocab = len(self.words)
        self.dim = self.n_topics * self.n_vocab
        self.documents_per_step = self.batch_size
        self._make_stream = make_stream
        self._pass = 0
        self._pass_start = 0  # documents seen when the current pass began
        stream = make_stream()
        self.held_out = list(stream.held_out)
        self._batches = iter(stream.batches(self.batch_size))
        self._scorers: Optional[list] = None
        self.documents_seen = 0

    # --- shapes -------------------------------------------------------------------------------------
    def topics(self, theta: np.ndarray) -> np.ndarray:
        """θ (n, K·W) → (n, K, W) view."""
        return np.asarray(theta).reshape(-1, self.n_topics, self.n_vocab)

    def phi(self, theta: np.ndarray) -> np.ndarray:
        """Topic–word distributions φ_kw = θ_kw / θ_k·, (n, K, W)."""
        topics = self.topics(theta)
        return topics / topics.sum(axis=2, keepdims=True)

    # --- the stream -----------------------------------------------------------------------------------
    def next_minibatch(self) -> list:
        """The next |D_t| documents (a new pass over the stream when it runs out)."""
        try:
            batch = next(self._batches)
        except StopIteration:
            self._pass += 1
            self._pass_start = self.documents_seen  # for checkpoint_state: documents of the current pass
            log.warning("document stream exhausted after %d documents: starting pass %d", self.documents_seen, self._pass)
            self._batches = iter(self._make_stream().batches(self.batch_size))
            try:
                batch = next(self._batches)
            except StopIteration:
                raise ValueError("the document stream has no training documents after the held-out set") from None
        self.documents_seen += len(batch)
        return batch

    # --- Target ---------------------------------------------------------------------------------------
    def potential(self, theta):
        raise TypeError("target 'lda' has no potential: U(θ) needs the marginal likelihood of the whole corpus")

    def gradient(self, theta):
        raise TypeError("target 'lda' has no exact gradient: it needs Gibbs expectations over the whole corpus")

    def stochastic_gradient(self, theta, rng):
        """∇Ũ(θ) on the next minibatch (SPEC T10), one Gibbs run per chain, shape (n, K·W)."""
        batch = packed_batch(self.next_minibatch())
        parameters = self._parameters()
        return np.stack([batch_gradient(np.ascontiguousarray(chain), batch, np.uint64(rng.integers(SEED_BOUND)),
                                        parameters) for chain in np.asarray(theta, dtype=float)])

    def _parameters(self) -> np.ndarray:
        """:func:`batch_gradient`'s parameters: (K, W, α, β, D, sweeps, numba's threads)."""
        return np.array([self.n_topics, self.n_vocab, self.alpha, self.beta, self.corpus_size, self.n_sweeps,
                         numba.get_num_threads()], dtype=float)

    def engine_functions(self) -> dict:
        """What the engine's blocks take (:func:`sgmcmc.engine.estimators.source_of`): the gradient of one chain on
        one packed minibatch (:func:`batch_gradient`) with its parameters, the stream's next minibatches
        (:meth:`engine_batches`), the reflection θ ← |θ| (:func:`reflect_positive`); no known gradient noise."""
        return {"batch_gradient": batch_gradient, "parameters": self._parameters(), "batches": self.engine_batches,
                "reflect": reflect_positive, "noise_covariance": None}

    def engine_batches(self, n_steps: int, n_chains: int, start: int) -> np.ndarray:
        """The stream's next ``n_steps`` minibatches as rows (n_steps, n_chains, n) of :func:`packed_batch`, padded
        with zeros to the longest; every chain has the same (``start``, the step count, is not read: the stream keeps
        its own place, checkpointed with it)."""
        packed = [packed_batch(self.next_minibatch()) for _ in range(n_steps)]
        rows = np.zeros((n_steps, n_chains, max(row.size for row in packed)), dtype=np.int64)
        for step, row in enumerate(packed):
            rows[step, :, :row.size] = row
        return rows

    def initial_position(self, n_chains, rng):
        """θ₀ ~ Gamma(1, 1) entrywise (SPEC T10)."""
        return rng.gamma(1.0, 1.0, size=(n_chains, self.dim))

    def reflect(self, theta):
        """θ ← |θ| ([R]'s boundary reflection), and the mask of reflected coordinates."""
        negative = theta < 0
        if not negative.any():
            return theta, negative
        return np.abs(theta), negative

    def default_metric(self):
        return ExpandedMeanMetric()

    # --- metrics ----------------------------------------------------------------------------------------
    def sample_metrics(self, theta: np.ndarray, rng: np.random.Generator) -> dict:
        """Held-out perplexity of each chain's current φ with the predictive averaged over evaluations
        (SPEC §3); the mean over chains, and ``documents`` seen so far."""
        phi = self.phi(theta)
        if self._scorers is None:
            self._scorers = [HeldOutPerplexity(self.held_out, self.alpha, n_sweeps=self.n_sweeps) for _ in range(phi.shape[0])]
        values = [scorer.update(phi[c], int(rng.integers(SEED_BOUND))) for c, scorer in enumerate(self._scorers)]
        out = {"perplexity": float(np.mean(values))}
        if len(values) > 1:
            out["perplexity_sd"] = float(np.std(values, ddof=1))
        return out

    # --- checkpoints (sgmcmc.checkpoint) -------------------------------------------------------------------
    def checkpoint_state(self) -> dict:
        """The stream position (documents seen, pass, documents of this pass) and each chain's held-out scorer
        (running sum of the predictive, number of evaluations), for :meth:`restore_state`."""
        state = {"documents_seen": self.documents_seen, "pass": self._pass,
                 "pass_documents": self.documents_seen - self._pass_start}
        if self._scorers is not None:
            saved = [scorer.state() for scorer in self._scorers]
            state["scorer_sums"] = np.stack([item["sum_predictive"] for item in saved])
            state["scorer_updates"] = [item["n_updates"] for item in saved]
        return state

    def restore_state(self, state: dict) -> None:
        """Continue where a :meth:`checkpoint_state` was taken: the stream of that pass, recreated and moved on
        by its documents (:meth:`DocumentStream.skip`), and the scorers' running averages."""
        stream = self._make_stream()
        stream.skip(int(state["pass_documents"]))
        self._batches = iter(stream.batches(self.batch_size))
        self._pass, self.documents_seen = int(state["pass"]), int(state["documents_seen"])
        self._pass_start = self.documents_seen - int(state["pass_documents"])
        self._scorers = None
        if "scorer_sums" in state:
            sums = np.asarray(state["scorer_sums"])
            self._scorers = [HeldOutPerplexity(self.held_out, self.alpha, n_sweeps=self.n_sweeps) for _ in range(sums.shape[0])]
            for scorer, total, count in zip(self._scorers, sums, state["scorer_updates"]):
                scorer.load_state({"sum_predictive": total, "n_updates": int(count)})

    def trace_position(self, step: int) -> dict:
        return {"documents": step * self.batch_size}

    def top_words(self, theta: np.ndarray, n_words: int = 10) -> list[list[str]]:
        """The ``n_words`` most probable words of each topic of the first chain."""
        phi = self.phi(theta)[0]
        order = np.argsort(-phi, axis=1, kind="stable")[:, :n_words]
        return [[self.words[i] for i in row] for row in order]

    def write_artifacts(self, folder: Path, theta: np.ndarray) -> list[str]:
        """``topics.txt``: each topic's top 10 words with their probabilities under the final φ (chain 0)."""
        phi = self.phi(theta)[0]
        lines = [f"# top words of the {self.n_topics} topics of the final sample (chain 0), by phi_kw"]
        for k, row in enumerate(np.argsort(-phi, axis=1, kind="stable")[:, :10]):
            lines.append(f"topic {k:3d}: " + " ".join(f"{self.words[i]}({phi[k, i]:.3f})" for i in row))
        write_text(Path(folder) / "topics.txt", "\n".join(lines) + "\n")
        return ["topics.txt"]


def lda(data_dir=None, source=None, vocabulary=None, source_format: str = "auto", n_topics: int = 50,
        alpha: float = 0.01, beta: float = 1e-4, batch_size: int = 50, n_sweeps: int = 50, corpus_size: float = 3.3e6,
        n_held_out: int = 1000, buffer_size: int = 2000, stream_seed: int = 0) -> OnlineLDA:
    """Online LDA (SPEC T10, §4.11) on the Wikipedia sample of the data folder, or on ``source`` (a WikiExtractor
    file, a Wikipedia XML dump or a text file with one document per line), with Hoffman's 7,702-word
    vocabulary or ``vocabulary`` (a word-per-line file). The stream is shuffled through a bounded buffer of
    ``buffer_size`` documents with ``stream_seed``; its first ``n_held_out`` documents are the held-out set
    (a run longer than the stream repeats it)."""
    from sgmcmc.data.corpora import vocabulary_path, wikipedia_stream
    from sgmcmc.data.documents import load_vocabulary

    n_held_out = _positive("n_held_out", n_held_out, integer=True)
    buffer_size = _positive("buffer_size", buffer_size, integer=True)
    path = vocabulary_path(data_dir, vocabulary)
    vocab = load_vocabulary(path)

    def make_stream():
        return wikipedia_stream(data_dir, source, vocabulary=path, seed=stream_seed, n_held_out=n_held_out,
                                buffer_size=buffer_size, format=source_format)

    words = sorted(vocab, key=vocab.get)
    return OnlineLDA(make_stream, words, n_topics=n_topics, alpha=alpha, beta=beta, batch_size=batch_size,
                     n_sweeps=n_sweeps, corpus_size=corpus_size)
