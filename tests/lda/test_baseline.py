"""The online-VB baseline (scikit-learn) on a corpus generated from known topics: count matrices, its trace
and that it learns (perplexity of its topics well below a uniform model's W)."""

import numpy as np

from sgmcmc.lda.baseline import count_matrix, online_variational_lda
from sgmcmc.lda.perplexity import HeldOutPerplexity


def _documents(rng, n_docs, n_words=12, n_topics=3, length=40):
    per_topic = n_words // n_topics
    docs = []
    for _ in range(n_docs):
        topics = rng.choice(n_topics, size=length, p=rng.dirichlet([0.1] * n_topics))
        docs.append((topics * per_topic + rng.integers(0, per_topic, size=length)).astype(np.int32))
    return docs


def test_count_matrix():
    matrix = count_matrix([np.array([0, 2, 2], np.int32), np.array([], np.int32), np.array([1], np.int32)], 4)
    np.testing.assert_array_equal(matrix.toarray(), [[1, 0, 2, 0], [0, 0, 0, 0], [0, 1, 0, 0]])


def test_online_vb_learns_the_topics():
    rng = np.random.default_rng(0)
    held_out, train = _documents(rng, 50), _documents(rng, 400)
    scorer = HeldOutPerplexity(held_out, alpha=0.1, n_sweeps=10)
    batches = (train[i:i + 20] for i in range(0, 400, 20))
    trace, seconds = online_variational_lda(batches, 12, scorer, n_topics=3, alpha=0.1, beta=0.01, corpus_size=400,
                                            evaluate_every=5, seed=0)
    assert [row["documents"] for row in trace] == [100, 200, 300, 400] and seconds > 0
    assert trace[-1]["perplexity"] < 0.75 * 12  # the generating topics give about 6.5; a uniform model 12
