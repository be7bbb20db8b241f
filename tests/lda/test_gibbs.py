"""Collapsed Gibbs sampler with φ fixed (SPEC §2 T10): exact moments, discrimination, determinism, packing, errors."""

import numba
import numpy as np
import pytest

from sgmcmc.lda.gibbs import document_seeds, pack, topic_counts
from tests.lda import exact_document, numba_threads, reference_gibbs

PHI = np.array([[0.55, 0.25, 0.15, 0.05],
                [0.10, 0.20, 0.30, 0.40],
                [0.25, 0.05, 0.45, 0.25]])
DOC = np.array([0, 1, 2, 1, 3], dtype=np.int32)
ALPHA = 0.5
N_SWEEPS = 20
Z_LIMIT = 5.0  # largest |estimate − exact| / Monte Carlo standard error allowed over all the moments


def _max_z(topic_word_samples, topic_samples, exact_topic_word, exact_topics):
    """Largest |z| of the sample means of iid replicates (rows) against the exact E[n_kw] and E[n_k]."""
    n = topic_samples.shape[0]
    z_topics = (topic_samples.mean(axis=0) - exact_topics) / (topic_samples.std(axis=0, ddof=1) / np.sqrt(n))
    present = exact_topic_word > 0  # words absent from the document have n_kw = 0 exactly
    words = topic_word_samples[:, present]
    z_words = (words.mean(axis=0) - exact_topic_word[present]) / (words.std(axis=0, ddof=1) / np.sqrt(n))
    return float(np.max(np.abs(np.concatenate([z_topics, z_words]))))


@pytest.fixture(scope="module")
def exact():
    topic_word, topics, _ = exact_document(DOC, PHI, ALPHA)
    assert np.isclose(topics.sum(), DOC.size) and np.isclose(topic_word.sum(), DOC.size)
    return topic_word, topics


# K = 10 spans two groups of the sampler's two-level draw (8 topics per group) and padding topics.
WIDE_PHI = np.random.default_rng(8).dirichlet(np.full(5, 0.7), size=10)
WIDE_DOC = np.array([4, 0, 4, 2], dtype=np.int32)


@pytest.mark.parametrize("phi, doc, alpha", [(PHI, DOC, ALPHA), (WIDE_PHI, WIDE_DOC, 0.3)], ids=["K3", "K10"])
def test_gibbs_averages_match_exact_enumeration(phi, doc, alpha):
    exact_topic_word, exact_topics, _ = exact_document(doc, phi, alpha)
    # 100 independent batches of 200 identical documents (each its own chain): batch means are iid replicates.
    copies = 200
    word_ids, offsets = pack([doc] * copies)
    topic_word, topics = [], []
    with numba_threads(1):  # many small calls: no thread wake-ups (results do not depend on the thread count)
        for seed in range(100):
            batch_topic_word, doc_topic = topic_counts(word_ids, offsets, phi, alpha, N_SWEEPS, seed)
            topic_word.append(batch_topic_word / copies)
            topics.append(doc_topic.mean(axis=0))
    assert _max_z(np.array(topic_word), np.array(topics), exact_topic_word, exact_topics) < Z_LIMIT


def test_the_check_rejects_wrong_conditionals(exact):
    """The same moments and limit: a correct numpy reference passes; a wrong conditional fails by far."""
    rng = np.random.default_rng(7)
    n_chains = 20_000

    def z_of(alpha, exclude_self=True):
        topic_word, topics = reference_gibbs(DOC, PHI, alpha, N_SWEEPS, n_chains, rng, exclude_self)
        return _max_z(topic_word, topics, *exact)

    assert z_of(ALPHA) < Z_LIMIT
    assert z_of(ALPHA, exclude_self=False) > 4 * Z_LIMIT  # token i not removed from n_dk
    assert z_of(0.0) > 4 * Z_LIMIT  # α omitted
    assert z_of(2 * ALPHA) > 4 * Z_LIMIT  # α off by a factor of 2
    assert z_of(ALPHA / 2) > 4 * Z_LIMIT


def _corpus(seed=3, n_docs=23, n_words=40):
    rng = np.random.default_rng(seed)
    documents = [rng.integers(0, n_words, size=rng.integers(0, 60)).astype(np.int32) for _ in range(n_docs)]
    phi = rng.dirichlet(np.ones(n_words), size=5)
    return documents, phi


def test_counts_are_consistent():
    documents, phi = _corpus()
    word_ids, offsets = pack(documents)
    topic_word, doc_topic = topic_counts(word_ids, offsets, phi, 0.1, 6, seed=1)
    assert topic_word.shape == phi.shape and doc_topic.shape == (len(documents), phi.shape[0])
    assert topic_word.dtype == np.float64 and doc_topic.dtype == np.float64
    np.testing.assert_allclose(topic_word.sum(axis=0), np.bincount(word_ids, minlength=phi.shape[1]))
    np.testing.assert_allclose(doc_topic.sum(axis=1), [len(d) for d in documents])
    np.testing.assert_allclose(topic_word.sum(axis=1), doc_topic.sum(axis=0))
    assert np.all(topic_word >= 0) and np.all(doc_topic >= 0)


@pytest.mark.parametrize("n_sweeps, n_averaged", [(2, 1), (5, 3), (6, 3)])
def test_counts_are_averaged_over_the_last_sweeps(n_sweeps, n_averaged):
    """Averaged over sweeps n_sweeps // 2 .. n_sweeps − 1 (the code's burn_in = num_samples // 2)."""
    documents, phi = _corpus()
    _, doc_topic = topic_counts(*pack(documents), phi, 0.1, n_sweeps, seed=2)
    np.testing.assert_allclose(doc_topic * n_averaged, np.round(doc_topic * n_averaged), atol=1e-9)
    if n_averaged > 1:
        assert not np.allclose(doc_topic * (n_averaged - 1), np.round(doc_topic * (n_averaged - 1)))


def test_results_do_not_depend_on_the_number_of_threads():
    documents, phi = _corpus(seed=4, n_docs=37)
    word_ids, offsets = pack(documents)
    with numba_threads(numba.config.NUMBA_NUM_THREADS):
        many = topic_counts(word_ids, offsets, phi, 0.05, 8, seed=11)
    with numba_threads(1):
        one = topic_counts(word_ids, offsets, phi, 0.05, 8, seed=11)
    np.testing.assert_array_equal(many[0], one[0])
    np.testing.assert_array_equal(many[1], one[1])


def test_a_document_depends_only_on_its_words_its_index_and_the_seed():
    documents, phi = _corpus(seed=5)
    others, _ = _corpus(seed=6)
    mixed = others[:4] + documents[4:5] + others[5:]
    _, together = topic_counts(*pack(documents), phi, 0.05, 8, seed=11)
    _, with_others = topic_counts(*pack(mixed), phi, 0.05, 8, seed=11)
    np.testing.assert_array_equal(with_others[4], together[4])


def test_seed_controls_the_draws():
    documents, phi = _corpus()
    packed = pack(documents)
    first = topic_counts(*packed, phi, 0.1, 6, seed=5)
    np.testing.assert_array_equal(first[1], topic_counts(*packed, phi, 0.1, 6, seed=5)[1])
    assert not np.array_equal(first[1], topic_counts(*packed, phi, 0.1, 6, seed=6)[1])
    seeds = document_seeds(5, 1000)
    assert seeds.min() >= 0 and seeds.max() < 2**32 and np.unique(seeds).size == 1000


def test_pack():
    documents = [np.array([3, 1, 4]), np.array([], dtype=np.int64), np.array([1, 5], dtype=np.uint8), [9]]
    word_ids, offsets = pack(documents)
    assert word_ids.dtype == np.int32 and offsets.dtype == np.int64
    np.testing.assert_array_equal(offsets, [0, 3, 3, 5, 6])
    np.testing.assert_array_equal(word_ids, [3, 1, 4, 1, 5, 9])
    for d, doc in enumerate(documents):
        np.testing.assert_array_equal(word_ids[offsets[d]:offsets[d + 1]], doc)
    empty_ids, empty_offsets = pack([])
    assert empty_ids.shape == (0,) and np.array_equal(empty_offsets, [0])


@pytest.mark.parametrize("documents", [[np.zeros((2, 2), dtype=int)], [np.array([0.5, 1.0])],
                                       [np.array([2**31])]])
def test_pack_rejects_bad_documents(documents):
    with pytest.raises(ValueError):
        pack(documents)


def test_empty_input_gives_zeros():
    topic_word, doc_topic = topic_counts(*pack([np.zeros(0, np.int32)] * 3), PHI, ALPHA, 4, 0)
    assert topic_word.shape == PHI.shape and not topic_word.any()
    assert doc_topic.shape == (3, 3) and not doc_topic.any()


GOOD = dict(word_ids=np.array([0, 1, 3], dtype=np.int32), offsets=np.array([0, 1, 3]), phi=PHI, alpha=0.5,
            n_sweeps=4, seed=0)


@pytest.mark.parametrize("change", [
    dict(word_ids=np.array([[0, 1, 3]])),
    dict(word_ids=np.array([0.0, 1.0, 3.0])),
    dict(word_ids=np.array([0, 1, 4])),
    dict(word_ids=np.array([0, -1, 3])),
    dict(offsets=np.array([1, 3])),
    dict(offsets=np.array([0, 2])),
    dict(offsets=np.array([0, 2, 1, 3])),
    dict(offsets=np.array([0.0, 3.0])),
    dict(phi=PHI[0]),
    dict(phi=np.where(np.arange(4) == 2, 0.0, PHI)),
    dict(phi=np.where(np.arange(4) == 2, np.nan, PHI)),
    dict(phi=np.where(np.arange(4) == 2, np.inf, PHI)),
    dict(alpha=0.0), dict(alpha=-1.0), dict(alpha=np.nan), dict(alpha="1"),
    dict(n_sweeps=1), dict(n_sweeps=2.5), dict(n_sweeps=True),
    dict(seed=-1), dict(seed=1.5), dict(seed=2**64),
    dict(n_vocab=5),
])
def test_bad_inputs_raise_value_error(change):
    with pytest.raises(ValueError):
        topic_counts(**{**GOOD, **change})


def test_good_inputs_accepted_with_n_vocab():
    topic_word, doc_topic = topic_counts(**GOOD, n_vocab=4)
    assert topic_word.shape == (3, 4) and doc_topic.shape == (2, 3)
