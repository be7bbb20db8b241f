"""T10, online LDA (SPEC §2 T10, §3 E3, §4.11; Patterson & Teh 2013; Ma, Chen & Fox 2015 §4.2) as a target: the
stochastic gradient is the negated Gibbs-based gradient of SPEC T10, the SGRLD step with G(θ) = diag(θ)⁻¹
is exactly Patterson & Teh's code form, the stream, and an end-to-end run (perplexity falls below a
uniform model's, topics.txt), all on a small corpus generated from known topics."""

import json

import numpy as np
import pytest
from scipy import stats

from sgmcmc.data.documents import DocumentStream
from sgmcmc.engine.driver import BACKENDS
from sgmcmc.experiment import run_experiment
from sgmcmc.lda.gibbs import pack, topic_counts
from sgmcmc.lda.gradient import log_posterior_gradient
from sgmcmc.samplers import make_sampler
from sgmcmc.targets.lda import SEED_BOUND, OnlineLDA

N_TOPICS, WORDS_PER_TOPIC, N_DOCS, DOC_LENGTH = 3, 6, 300, 40
WORDS = [f"w{chr(97 + k)}{chr(97 + j)}" for k in range(N_TOPICS) for j in range(WORDS_PER_TOPIC)]  # waa..wcf


def _corpus(seed=0, n_docs=N_DOCS):
    """Documents whose words come mostly from one of three disjoint topics (plus a little of the others)."""
    rng = np.random.default_rng(seed)
    docs = []
    for _ in range(n_docs):
        mix = rng.dirichlet([0.1] * N_TOPICS)
        topics = rng.choice(N_TOPICS, size=DOC_LENGTH, p=mix)
        words = topics * WORDS_PER_TOPIC + rng.integers(0, WORDS_PER_TOPIC, size=DOC_LENGTH)
        docs.append(" ".join(WORDS[w] for w in words))
    return docs


def _target(n_topics=N_TOPICS, batch_size=10, n_held_out=40, **options):
    docs = _corpus()
    vocabulary = {word: i for i, word in enumerate(WORDS)}

    def make_stream():
        return DocumentStream(lambda: iter(docs), vocabulary, seed=0, n_held_out=n_held_out, buffer_size=64)

    return OnlineLDA(make_stream, WORDS, n_topics=n_topics, batch_size=batch_size, corpus_size=len(docs) - n_held_out, **options)


def test_shapes_initial_position_and_reflection():
    target = _target()
    assert target.dim == N_TOPICS * len(WORDS) and target.documents_per_step == 10
    theta = target.initial_position(200, np.random.default_rng(0))
    assert theta.shape == (200, target.dim) and (theta > 0).all()
    assert stats.kstest(theta.ravel(), stats.gamma(1.0).cdf).pvalue > 0.01  # Gamma(1, 1), 21,600 draws
    assert stats.kstest(theta.ravel(), stats.gamma(2.0, scale=0.5).cdf).pvalue < 1e-6  # the test can tell shapes apart
    reflected, mask = target.reflect(np.array([[-0.5, 0.25, -1e-3]]))
    np.testing.assert_array_equal(reflected, [[0.5, 0.25, 1e-3]])
    np.testing.assert_array_equal(mask, [[True, False, True]])
    with pytest.raises(TypeError, match="no potential"):
        target.potential(theta)


def test_stochastic_gradient_is_the_negated_gibbs_gradient_of_the_next_minibatch():
    """Replays the target's draws: the minibatch is the stream's next batch, the Gibbs seed the next
    integer of the generator, the gradient SPEC T10's (negated), for each chain."""
    target, replay = _target(), _target()
    theta = target.initial_position(2, np.random.default_rng(1))
    rng, replay_rng = np.random.default_rng(7), np.random.default_rng(7)
    gradient = target.stochastic_gradient(theta, rng)
    batch = replay.next_minibatch()
    word_ids, offsets = pack(batch)
    topics = theta.reshape(2, N_TOPICS, len(WORDS))
    for chain in range(2):
        phi = topics[chain] / topics[chain].sum(axis=1, keepdims=True)
        counts, _ = topic_counts(word_ids, offsets, phi, target.alpha, target.n_sweeps, int(replay_rng.integers(SEED_BOUND)),
                                 n_vocab=len(WORDS))
        expected = -log_posterior_gradient(topics[chain], counts, target.beta, target.corpus_size, len(batch))
        np.testing.assert_allclose(gradient[chain], expected.reshape(-1), rtol=1e-12)
    assert target.documents_seen == 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_sgrld_step_is_patterson_and_teh_code_form(backend):
    """SGRLD with the target's G(θ) = diag(θ)⁻¹ (Γ = 1), one step of the engine's blocks, gives
    θ ← |θ + ε(β − θ + (D/|D_t|)(B̄ − B̄_k·φ)) + √(2εθ) ξ| (SPEC T10), the update of Patterson & Teh's code, with B̄
    from the stream's next minibatch and the Gibbs seed of the bits of the step's first gradient-noise normal."""
    target, replay = _target(), _target()
    sampler = make_sampler("sgrld", target, noise_estimate="zero")
    theta = target.initial_position(1, np.random.default_rng(2))
    step = 0.01
    blocks = sampler.engine_blocks(backend)
    block = blocks(np.random.default_rng(3), sampler.init(theta, np.random.default_rng(0)), np.array([step]), 0)

    normals = np.random.default_rng(3).standard_normal((2, target.dim))  # the step's slots: gradient noise, injected
    batch = replay.next_minibatch()
    word_ids, offsets = pack(batch)
    topics = theta.reshape(N_TOPICS, len(WORDS))
    phi = topics / topics.sum(axis=1, keepdims=True)
    seed = int(normals[0, :1].view(np.uint64)[0])
    counts, _ = topic_counts(word_ids, offsets, phi, target.alpha, target.n_sweeps, seed, n_vocab=len(WORDS))
    scale = target.corpus_size / len(batch)
    drift = target.beta - topics + scale * (counts - counts.sum(axis=1, keepdims=True) * phi)
    expected = np.abs(topics + step * drift + np.sqrt(2 * step * topics) * normals[1].reshape(topics.shape))
    np.testing.assert_allclose(block.state.theta.reshape(N_TOPICS, len(WORDS)), expected, rtol=1e-9, atol=1e-12)
    assert target.documents_seen == replay.documents_seen == 10
    assert block.reflected.sum() == np.count_nonzero(topics + step * drift + np.sqrt(2 * step * topics)
                                                     * normals[1].reshape(topics.shape) < 0)


def test_stream_restarts_without_training_on_held_out_documents():
    target = _target(batch_size=100, n_held_out=40)
    held = {tuple(doc) for doc in target.held_out}
    seen = []
    for _ in range(4):  # 260 training documents: the third batch is short, the fourth starts a new pass
        seen.extend(tuple(doc) for doc in target.next_minibatch())
    assert not held & set(seen)
    assert len(seen) == 260 + 100


def _write_corpus(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    source = tmp_path / "docs.txt"
    source.write_text("\n".join(_corpus()) + "\n")
    vocabulary = tmp_path / "vocab.txt"
    vocabulary.write_text("\n".join(WORDS))
    return source, vocabulary


def _config(tmp_path, sampler, step_size, **run):
    source, vocabulary = _write_corpus(tmp_path)
    return {
        "seed": 0,
        "sampler": {"name": sampler, "step_size": step_size, "noise_estimate": "zero",
                    "integrator": "euler" if sampler == "sgrld" else "aboba", "metric": None},
        "target": {"name": "lda", "data_dir": None, "source": str(source), "vocabulary": str(vocabulary),
                   "source_format": "lines", "n_topics": N_TOPICS, "alpha": 0.1, "beta": 0.01, "batch_size": 10,
                   "n_sweeps": 20, "corpus_size": 260.0, "n_held_out": 40, "buffer_size": 64, "stream_seed": 0},
        "schedule": {"name": "polynomial", "b": 1000.0, "gamma": 0.55},
        # the engine's Python path: the small corpus's d = 54 costs nothing uncompiled, and the compiled LDA blocks
        # (about 10 s each to compile) are checked by test_sgrld_step_is_patterson_and_teh_code_form and the
        # headline command below
        "run": {"n_steps": 60, "n_chains": 1, "burn_in": 0, "thin": 20, "eval_every": 10, "progress": False,
                "figures": True, "results_dir": str(tmp_path / "runs"), "backend": "python", **run},
    }


@pytest.mark.parametrize("sampler", ["sgrld", "sgrhmc"])
def test_run_learns_the_topics(tmp_path, sampler):
    """A short run (60 minibatches, two passes) brings the held-out perplexity well below a uniform model's
    W = 18 (the generating topics give about 6) and writes the trace, topics.txt and the figure."""
    folder, status = run_experiment(_config(tmp_path, sampler, 0.01 if sampler == "sgrld" else 0.05))
    assert status == "completed"
    metrics = json.loads((folder / "metrics.json").read_text())
    trace = (folder / "trace.csv").read_text().splitlines()
    assert trace[0].split(",")[:4] == ["step", "n_samples", "step_size", "documents"] and "perplexity" in trace[0]
    last = dict(zip(trace[0].split(","), trace[-1].split(",")))
    assert metrics["final"]["perplexity"] == pytest.approx(float(last["perplexity"]))
    assert float(last["documents"]) == 600 and float(last["perplexity"]) < 12
    assert metrics["documents"] == 600 and metrics["seconds_per_100_documents"] > 0
    assert "topics.txt" in metrics["artifacts"]
    topics = (folder / "topics.txt").read_text().splitlines()[1:]
    assert len(topics) == N_TOPICS
    # each topic's six most probable words are exactly one generating topic's words
    groups = sorted({word[1] for word in line.split(": ")[1].split()[:WORDS_PER_TOPIC]} for line in topics)
    assert all(len(group) == 1 for group in groups) and sorted(g.pop() for g in groups) == ["a", "b", "c"]
    assert (folder / "figures" / "metrics.png").stat().st_size > 0


def test_same_seed_same_samples_and_trace(tmp_path):
    first, _ = run_experiment(_config(tmp_path / "a", "sgrld", 0.01, n_steps=20))
    second, _ = run_experiment(_config(tmp_path / "b", "sgrld", 0.01, n_steps=20))
    a, b = np.load(first / "samples.npz")["theta"], np.load(second / "samples.npz")["theta"]
    np.testing.assert_array_equal(a, b)
    assert (first / "trace.csv").read_text() == (second / "trace.csv").read_text()


@pytest.mark.parametrize("sampler, step_size, integrator", [("sgrhmc", 0.01, "aboba"), ("sgrld", 0.01, "euler"),
                                                            ("sghmc", 1e-2, "aboba"), ("sgld", 1e-3, "euler")])
def test_target_config_sets_what_a_streaming_run_needs(sampler, step_size, integrator):
    """``python run.py sampler=<s> target=lda`` composes one chain over 10,000 documents with the polynomial
    schedule, the sampler's a and integrator (SPEC §4.11), and command-line values still win."""
    from experiments.common import compose

    config = compose([f"sampler={sampler}", "target=lda"])
    assert config["sampler"]["step_size"] == step_size and config["sampler"]["integrator"] == integrator
    assert config["schedule"] == {"name": "polynomial", "b": 1000.0, "gamma": 0.55, "delay": 0}
    assert config["run"]["n_chains"] == 1 and config["run"]["n_steps"] * config["target"]["batch_size"] == 10_000
    override = compose([f"sampler={sampler}", "target=lda", "sampler.step_size=0.5", "run.n_steps=3"])
    assert override["sampler"]["step_size"] == 0.5 and override["run"]["n_steps"] == 3


from tests.test_ccadl_fig2 import DATA  # noqa: E402  (../shared/data or SGMCMC_DATA)


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
@pytest.mark.skipif(not (DATA / "wikipedia").is_dir(), reason="needs the Wikipedia sample (../shared/data)")
def test_headline_command_on_the_wikipedia_sample(tmp_path):
    """``python run.py sampler=sgrhmc target=lda`` (shortened) streams the real articles, traces the perplexity
    and writes topics.txt and the figure."""
    import subprocess
    import sys

    repo = __import__("pathlib").Path(__file__).resolve().parents[2]
    command = [sys.executable, str(repo / "run.py"), "sampler=sgrhmc", "target=lda", "run.n_steps=4", "run.eval_every=2",
               "target.n_held_out=20", "target.buffer_size=50", "target.n_sweeps=4", f"data_dir={DATA}",
               f"run.results_dir={tmp_path}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=repo, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    (folder,) = tmp_path.glob("2*")
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["status"] == "completed" and metrics["documents"] == 200
    assert 1000 < metrics["final"]["perplexity"] < 7702 * 2
    assert len((folder / "topics.txt").read_text().splitlines()) == 51
    assert (folder / "figures" / "metrics.png").stat().st_size > 0
