"""Held-out perplexity with the running-average predictive (SPEC §3 "Perplexity (E3)", §4.11)."""

import numpy as np
import pytest

from sgmcmc.lda.gibbs import pack, topic_counts
from sgmcmc.lda.perplexity import HeldOutPerplexity

ALPHA = 0.1
N_TOPICS, N_WORDS = 4, 40


def _synthetic_corpus(seed=0, n_docs=60, length=80):
    """Documents drawn from LDA with sparse true topics; returns (documents, true φ)."""
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(N_WORDS, 0.1), size=N_TOPICS)
    documents = []
    for _ in range(n_docs):
        topics = rng.choice(N_TOPICS, size=length, p=rng.dirichlet(np.full(N_TOPICS, 0.2)))
        documents.append(np.array([rng.choice(N_WORDS, p=phi[k]) for k in topics], dtype=np.int32))
    return documents, phi


@pytest.fixture(scope="module")
def corpus():
    return _synthetic_corpus()


def test_true_topics_have_lower_perplexity_than_random_ones(corpus):
    documents, true_phi = corpus
    random_phi = np.random.default_rng(1).dirichlet(np.ones(N_WORDS), size=N_TOPICS)
    true_value = HeldOutPerplexity(documents, ALPHA, n_sweeps=20).update(true_phi, seed=0)
    random_value = HeldOutPerplexity(documents, ALPHA, n_sweeps=20).update(random_phi, seed=0)
    assert 1.0 < true_value < 0.6 * random_value


def test_uniform_topics_give_the_vocabulary_size(corpus):
    documents, _ = corpus
    evaluator = HeldOutPerplexity(documents, ALPHA, n_sweeps=4)
    uniform = np.full((N_TOPICS, N_WORDS), 1.0 / N_WORDS)
    assert evaluator.update(uniform, seed=0) == pytest.approx(N_WORDS, rel=1e-12)
    assert evaluator.update(uniform, seed=1) == pytest.approx(N_WORDS, rel=1e-12)
    assert evaluator.n_updates == 2


def _split(documents, every):
    """Reference split with explicit per-document slicing: (train documents, test documents)."""
    test = [doc[::every] for doc in documents]
    train = [np.delete(doc, np.arange(0, doc.size, every)) for doc in documents]
    return train, test


def _reference_predictive(documents, phi, alpha, n_sweeps, seed, every):
    """Per-test-token p(w | d) with explicit loops over documents and tokens."""
    train, test = _split(documents, every)
    _, doc_topic = topic_counts(*pack(train), phi, alpha, n_sweeps, seed)
    values = []
    for d, words in enumerate(test):
        eta = (doc_topic[d] + alpha) / (train[d].size + phi.shape[0] * alpha)
        for w in words:
            values.append(sum(eta[k] * phi[k, w] for k in range(phi.shape[0])))
    return np.array(values)


def test_running_average_of_the_predictive(corpus):
    documents, true_phi = corpus
    other_phi = np.random.default_rng(2).dirichlet(np.ones(N_WORDS), size=N_TOPICS)
    evaluator = HeldOutPerplexity(documents, ALPHA, n_sweeps=6, every=10)
    first = evaluator.update(true_phi, seed=3)
    second = evaluator.update(other_phi, seed=4)
    p1 = _reference_predictive(documents, true_phi, ALPHA, 6, 3, 10)
    p2 = _reference_predictive(documents, other_phi, ALPHA, 6, 4, 10)
    assert evaluator.n_test_tokens == p1.size == sum(-(-d.size // 10) for d in documents)
    assert first == pytest.approx(np.exp(-np.mean(np.log(p1))), rel=1e-12)
    assert second == pytest.approx(np.exp(-np.mean(np.log((p1 + p2) / 2))), rel=1e-12)
    # the average is of the predictives, not of the perplexities (Jensen: strictly below their geometric mean)
    assert second < np.sqrt(first * np.exp(-np.mean(np.log(p2)))) * (1 - 1e-6)


def test_documents_without_train_or_test_tokens():
    rng = np.random.default_rng(5)
    phi = rng.dirichlet(np.ones(N_WORDS), size=N_TOPICS)
    documents = [np.array([7], dtype=np.int32), np.zeros(0, dtype=np.int32),
                 rng.integers(0, N_WORDS, 25).astype(np.int32)]
    evaluator = HeldOutPerplexity(documents, ALPHA, n_sweeps=4, every=10)
    assert evaluator.n_test_tokens == 1 + 0 + 3
    np.testing.assert_array_equal(evaluator.n_train_tokens, [0, 0, 22])
    predictive = evaluator.predictive(phi, seed=0)
    assert predictive[0] == pytest.approx(phi[:, 7].mean(), rel=1e-12)  # no train token: η̂ = 1/K
    np.testing.assert_allclose(predictive, _reference_predictive(documents, phi, ALPHA, 4, 0, 10), rtol=1e-12)
    assert np.isfinite(evaluator.update(phi, seed=0))


def test_state_round_trip(corpus):
    documents, true_phi = corpus
    rng = np.random.default_rng(3)
    phis = [rng.dirichlet(np.ones(N_WORDS), size=N_TOPICS) for _ in range(2)]
    original = HeldOutPerplexity(documents, ALPHA, n_sweeps=4)
    assert np.isnan(original.perplexity())
    for seed, phi in enumerate(phis):
        original.update(phi, seed)
    state = original.state()
    assert set(state) == {"sum_predictive", "n_updates"} and state["n_updates"] == 2
    restored = HeldOutPerplexity(documents, ALPHA, n_sweeps=4)
    restored.load_state(state)
    state["sum_predictive"][:] = 0.0  # the restored copy is independent of the dict it came from
    assert restored.perplexity() == original.perplexity()
    assert restored.update(true_phi, seed=9) == original.update(true_phi, seed=9)
    assert restored.n_updates == original.n_updates == 3


def test_load_state_rejects_a_foreign_state(corpus):
    evaluator = HeldOutPerplexity(corpus[0], ALPHA)
    with pytest.raises(ValueError):
        evaluator.load_state({"sum_predictive": np.ones(3), "n_updates": 1})
    with pytest.raises(ValueError):
        evaluator.load_state({"sum_predictive": np.ones(evaluator.n_test_tokens), "n_updates": -1})


@pytest.mark.parametrize("alpha, n_sweeps", [(0.0, 50), (ALPHA, 1)])
def test_constructor_checks_the_gibbs_settings(corpus, alpha, n_sweeps):
    with pytest.raises(ValueError):
        HeldOutPerplexity(corpus[0], alpha, n_sweeps=n_sweeps)


@pytest.mark.parametrize("documents, every", [([np.array([1, 2, 3])], 1), ([np.zeros(0, dtype=np.int32)], 10),
                                              ([], 10)])
def test_constructor_rejects(documents, every):
    with pytest.raises(ValueError):
        HeldOutPerplexity(documents, ALPHA, every=every)
