"""T8, Bayesian logistic regression (SPEC §2 T8, §3 E5, §4.9; Shang et al. 2015 §4.2): U, gradients, minibatches,
test metrics, and the MNIST 7 vs 9 factory (on a fake MNIST; the real data only if present)."""

import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import expit

import sgmcmc.targets.logistic_regression as lr
from sgmcmc.keys import validate_config
from sgmcmc.targets import TARGETS, make_target
from sgmcmc.targets.data import DataTarget
from sgmcmc.targets.logistic_regression import LogisticRegression
from tests.helpers import fake_mnist_source, numerical_gradient

N, D, N_TEST = 60, 5, 25


def _data(seed=0, n=N, d=D):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d))
    labels = np.where(features @ rng.normal(size=d) + rng.normal(size=n) > 0, 1, -1)
    return features, labels


@pytest.fixture(scope="module")
def target():
    features, labels = _data(0)
    test_features, test_labels = _data(1, N_TEST)
    return LogisticRegression(features, labels, test_features, test_labels, batch_size=10)


def _points(seed, n=6, scale=0.5):
    return scale * np.random.default_rng(seed).normal(size=(n, D))


def _direct_potential(target, theta):
    margins = target.labels[None, :] * (theta @ target.features.T)
    return -np.sum(np.log(expit(margins)), axis=1) + 0.5 * np.sum(theta**2, axis=1) / target.prior_variance


# -- construction ---------------------------------------------------------------------------------------------
def test_attributes(target):
    assert target.dim == D and target.n_data == N and target.batch_size == 10
    assert target.has_exact_density is False and target.has_test_set
    with pytest.raises(TypeError):
        target.log_density(_points(0))
    with pytest.raises(TypeError):
        target.exact_moments()


def test_default_batch_is_the_full_data():
    assert LogisticRegression(*_data(0)).batch_size == N


@pytest.mark.parametrize("change, message", [
    (lambda f, y: (f, (y + 1) // 2), "labels"),                       # {0, 1} labels
    (lambda f, y: (f, y[:-1]), "labels"),
    (lambda f, y: (f[:, 0], y), "features"),
    (lambda f, y: (np.where(f > 2, np.nan, f), y), "finite"),
])
def test_invalid_data_are_rejected(change, message):
    with pytest.raises(ValueError, match=message):
        LogisticRegression(*change(*_data(0)))


def test_invalid_options_are_rejected():
    features, labels = _data(0)
    with pytest.raises(ValueError, match="together"):
        LogisticRegression(features, labels, test_features=features)
    with pytest.raises(ValueError, match="columns"):
        LogisticRegression(features, labels, features[:, :2], labels)
    with pytest.raises(ValueError, match="prior_variance"):
        LogisticRegression(features, labels, prior_variance=0.0)
    with pytest.raises(ValueError, match="batch_size"):
        LogisticRegression(features, labels, batch_size=N + 1)


# -- potential and gradients -----------------------------------------------------------------------------------
def test_potential_matches_the_formula(target):
    theta = _points(2)
    assert target.potential(theta).shape == (6,)
    np.testing.assert_allclose(target.potential(theta), _direct_potential(target, theta), rtol=1e-12)
    np.testing.assert_allclose(target.potential(np.zeros((1, D))), [N * np.log(2.0)], rtol=1e-12)


def test_prior_variance_enters_the_potential_and_gradient():
    features, labels = _data(0)
    wide = LogisticRegression(features, labels, prior_variance=4.0)
    theta = _points(3)
    np.testing.assert_allclose(wide.potential(theta), _direct_potential(wide, theta), rtol=1e-12)
    np.testing.assert_allclose(wide.gradient(theta), numerical_gradient(wide.potential, theta), atol=1e-6)
    np.testing.assert_allclose(wide.log_prior_gradient(theta), -theta / 4.0)


def test_gradient_matches_finite_differences(target):
    theta = _points(4)
    np.testing.assert_allclose(target.gradient(theta), numerical_gradient(target.potential, theta), atol=1e-6)


def test_per_example_gradients_sum_to_the_gradient(target):
    theta = _points(5)
    index = np.broadcast_to(np.arange(N), (theta.shape[0], N))
    per_example = target.log_likelihood_gradients(theta, index)
    assert per_example.shape == (6, N, D)
    np.testing.assert_allclose(-per_example.sum(axis=1) - target.log_prior_gradient(theta), target.gradient(theta),
                               rtol=1e-12, atol=1e-12)


def test_per_example_gradients_follow_the_formula_for_any_indices(target):
    theta = _points(6, n=3)
    index = np.random.default_rng(0).integers(0, N, size=(3, 7))
    per_example = target.log_likelihood_gradients(theta, index)
    for c in range(3):
        for b in range(7):
            x, y = target.features[index[c, b]], target.labels[index[c, b]]
            np.testing.assert_allclose(per_example[c, b], (1.0 - expit(y * x @ theta[c])) * y * x, rtol=1e-12)


def test_generic_chunked_gradient_equals_the_closed_form(target):
    theta = _points(7)
    np.testing.assert_allclose(DataTarget.gradient(target, theta), target.gradient(theta), rtol=1e-12, atol=1e-12)


def test_chain_blocks_do_not_change_the_results(monkeypatch):
    features, labels = _data(0)
    target = LogisticRegression(features, labels, *_data(1, N_TEST))
    theta = _points(8, n=7)
    expected = (target.potential(theta), target.gradient(theta), target.test_log_likelihood(theta),
                target.test_accuracy(theta))
    monkeypatch.setattr(target, "_chunk_elements", 2 * N)  # two chains per block, the last block a single one
    blocked = (target.potential(theta), target.gradient(theta), target.test_log_likelihood(theta),
               target.test_accuracy(theta))
    for a, b in zip(expected, blocked):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_minibatch_gradient_is_unbiased(target):
    """E ∇Ũ = ∇U: the mean over 20,000 independent minibatches (one per chain, all at the same θ) is within
    5 standard errors sqrt(diag(noise_covariance)/M) of ∇U in every coordinate."""
    n_draws = 20_000
    theta = np.tile(_points(9, n=1), (n_draws, 1))
    gradient = target.stochastic_gradient(theta, np.random.default_rng(1))
    exact = target.gradient(theta[:1])[0]
    standard_error = np.sqrt(np.diag(target.noise_covariance(theta[:1])[0]) / n_draws)
    assert np.all(standard_error > 0)
    assert np.all(np.abs(gradient.mean(axis=0) - exact) < 5 * standard_error)
    # and the spread of the draws is the noise covariance (finite-population factor included)
    covariance = target.noise_covariance(theta[:1])[0]
    np.testing.assert_allclose(np.cov(gradient.T), covariance, rtol=0.1, atol=0.05 * np.diag(covariance).max())


def test_huge_margins_are_finite_without_warnings(target):
    """|wᵀx| ~ 1e3: −log σ(m) is ~|m| on the wrong side and 0 on the right side, gradients stay finite."""
    theta = 1e3 * _points(10, scale=1.0)
    assert np.abs(theta @ target.features.T).max() > 500
    with warnings.catch_warnings(), np.errstate(over="raise", divide="raise", invalid="raise"):
        warnings.simplefilter("error")
        values = [target.potential(theta), target.gradient(theta),
                  target.log_likelihood_gradients(theta, np.broadcast_to(np.arange(N), (6, N))),
                  target.test_log_likelihood(theta), target.test_accuracy(theta),
                  target.stochastic_gradient(theta, np.random.default_rng(0))]
    assert all(np.all(np.isfinite(v)) for v in values)
    margins = target.labels[None, :] * (theta @ target.features.T)
    # log(1 + e^{−m}) = max(−m, 0) + log1p(e^{−|m|})
    expected = np.sum(np.maximum(-margins, 0) + np.log1p(np.exp(-np.abs(margins))), axis=1) + 0.5 * np.sum(theta**2, 1)
    np.testing.assert_allclose(target.potential(theta), expected, rtol=1e-12)


def test_initial_position_is_a_small_gaussian(target):
    theta = target.initial_position(4000, np.random.default_rng(3))
    assert theta.shape == (4000, D)
    np.testing.assert_allclose(theta, 0.01 * np.random.default_rng(3).standard_normal((4000, D)))
    assert abs(theta.std() - 0.01) < 5e-4


# -- test-set metrics ------------------------------------------------------------------------------------------
def test_test_log_likelihood_is_a_sum_over_the_test_points(target):
    w = _points(11)
    margins = target.test_labels[None, :] * (w @ target.test_features.T)
    np.testing.assert_allclose(target.test_log_likelihood(w), np.sum(np.log(expit(margins)), axis=1), rtol=1e-12)
    np.testing.assert_allclose(target.test_log_likelihood(np.zeros((1, D))), [-N_TEST * np.log(2.0)])


def test_test_accuracy(target):
    w = _points(12)
    predicted = np.where(w @ target.test_features.T >= 0, 1, -1)
    np.testing.assert_allclose(target.test_accuracy(w), np.mean(predicted == target.test_labels[None, :], axis=1))
    # the MAP-ish direction that generated the labels does better than its negative
    good = np.linalg.lstsq(target.features, target.labels, rcond=None)[0][None, :]
    assert target.test_accuracy(good)[0] > 0.7 and target.test_accuracy(-good)[0] < 0.3


def test_trace_metrics(target):
    w = _points(13, n=4)
    metrics = target.trace_metrics(w)
    assert set(metrics) == {"test_log_likelihood", "test_log_likelihood_sd", "test_accuracy"}
    assert all(type(v) is float for v in metrics.values())
    log_likelihood = target.test_log_likelihood(w)
    assert metrics["test_log_likelihood"] == pytest.approx(log_likelihood.mean())
    assert metrics["test_log_likelihood_sd"] == pytest.approx(log_likelihood.std(ddof=1))
    assert metrics["test_accuracy"] == pytest.approx(target.test_accuracy(w).mean())
    assert target.trace_metrics(w[:1])["test_log_likelihood_sd"] == 0.0


def test_no_test_set_means_no_trace_metrics():
    target = LogisticRegression(*_data(0))
    assert target.trace_metrics(_points(0)) == {}
    with pytest.raises(TypeError, match="test set"):
        target.test_log_likelihood(_points(0))


# -- the MNIST 7 vs 9 factory on a fake MNIST -----------------------------------------------------------------
@pytest.fixture
def fake_mnist(monkeypatch, tmp_path):
    """Route the factory's loader to a fake MNIST (``state.source``) and the cache folder into tmp_path.

    Patches ``sgmcmc.data.mnist.load_mnist`` (and ``resolve_data_dir``, to the identity); sets SGMCMC_CACHE.
    """
    state = SimpleNamespace(source=fake_mnist_source(), calls=[], projections=0, error=None,
                            data_dir=tmp_path / "data", cache_dir=tmp_path / "cache")
    state.data_dir.mkdir()

    def load_mnist(data_dir=None, digits=None):
        state.calls.append((Path(data_dir), tuple(digits)))
        if state.error is not None:
            raise state.error
        return state.source

    import sgmcmc.data as data_module
    import sgmcmc.data.mnist as mnist_module

    monkeypatch.setattr(data_module, "resolve_data_dir", lambda configured: Path(configured))
    monkeypatch.setattr(mnist_module, "load_mnist", load_mnist)
    state.DataError = data_module.DataError
    monkeypatch.setenv("SGMCMC_CACHE", str(state.cache_dir))
    project = lr._project

    def counting_project(*args):
        state.projections += 1
        return project(*args)

    monkeypatch.setattr(lr, "_project", counting_project)
    return state


def _build(state, **params):
    return lr.logistic_mnist79(data_dir=str(state.data_dir), batch_size=10, **params)


def test_factory_builds_the_target_from_the_loader(fake_mnist):
    target = make_target("logistic_mnist79", data_dir=str(fake_mnist.data_dir), batch_size=10)
    source = fake_mnist.source
    assert fake_mnist.calls == [(fake_mnist.data_dir, (7, 9))]
    assert isinstance(target, LogisticRegression) and target.name == "logistic_mnist79"
    assert target.features.shape == (40, 100) and target.test_features.shape == (16, 100) and target.dim == 100
    assert target.features.dtype == np.float64 and target.batch_size == 10
    np.testing.assert_array_equal(target.labels, np.where(source.train_labels == 7, 1.0, -1.0))
    np.testing.assert_array_equal(target.test_labels, np.where(source.test_labels == 7, 1.0, -1.0))
    # pixels/255, then scikit-learn's projection fitted on the training images
    from sklearn.random_projection import GaussianRandomProjection
    projection = GaussianRandomProjection(n_components=100, random_state=0).fit(source.train_images / 255.0)
    np.testing.assert_allclose(target.features, projection.transform(source.train_images / 255.0), rtol=1e-12)
    np.testing.assert_allclose(target.test_features, projection.transform(source.test_images / 255.0), rtol=1e-12)
    assert target.initial_scale == 0.01 and target.prior_variance == 1.0


def test_factory_options(fake_mnist):
    target = _build(fake_mnist, n_components=7, prior_variance=2.0, initial_scale=0.1)
    assert target.dim == 7 and target.prior_variance == 2.0 and target.initial_scale == 0.1
    with pytest.raises(ValueError, match="projection_seed"):
        _build(fake_mnist, projection_seed=-1)
    with pytest.raises(ValueError, match="batch_size"):
        lr.logistic_mnist79(data_dir=str(fake_mnist.data_dir))  # n = 500 > N = 40


def test_same_seed_same_features_other_seed_other_features(fake_mnist):
    first, again, other = _build(fake_mnist), _build(fake_mnist), _build(fake_mnist, projection_seed=1)
    np.testing.assert_array_equal(first.features, again.features)
    np.testing.assert_array_equal(first.test_features, again.test_features)
    assert not np.allclose(first.features, other.features)
    np.testing.assert_array_equal(first.labels, other.labels)


def test_cache_is_written_and_reused(fake_mnist):
    cache = fake_mnist.cache_dir
    first = _build(fake_mnist)
    assert fake_mnist.projections == 1
    assert sorted(p.name for p in cache.iterdir()) == ["logistic_mnist79-proj0-d100.npz"]  # no temp files left
    with np.load(cache / "logistic_mnist79-proj0-d100.npz") as stored:
        np.testing.assert_array_equal(stored["features"], first.features)
        assert "proj0;d100" in str(stored["key"])
    again = _build(fake_mnist)
    assert fake_mnist.projections == 1  # read from the cache
    np.testing.assert_array_equal(again.features, first.features)
    np.testing.assert_array_equal(again.labels, first.labels)
    # another seed or size gets its own file, never the cached one
    _build(fake_mnist, projection_seed=3)
    _build(fake_mnist, n_components=20)
    assert fake_mnist.projections == 3
    assert {p.name for p in cache.iterdir()} == {"logistic_mnist79-proj0-d100.npz", "logistic_mnist79-proj3-d100.npz",
                                                   "logistic_mnist79-proj0-d20.npz"}
    assert not any(fake_mnist.data_dir.iterdir())  # nothing written into the data folder


def test_cache_of_other_source_data_is_not_used(fake_mnist):
    first = _build(fake_mnist)
    fake_mnist.source = fake_mnist_source(seed=1)
    second = _build(fake_mnist)
    assert fake_mnist.projections == 2 and not np.allclose(first.features, second.features)
    _build(fake_mnist)
    assert fake_mnist.projections == 2  # the cache now holds the new source's projection


def test_damaged_cache_is_recomputed(fake_mnist):
    first = _build(fake_mnist)
    (fake_mnist.cache_dir / "logistic_mnist79-proj0-d100.npz").write_bytes(b"not a zip file")
    again = _build(fake_mnist)
    assert fake_mnist.projections == 2
    np.testing.assert_array_equal(again.features, first.features)


def test_read_only_data_dir_is_never_written(fake_mnist):
    fake_mnist.data_dir.chmod(0o555)
    try:
        first = _build(fake_mnist)
        again = _build(fake_mnist)
    finally:
        fake_mnist.data_dir.chmod(0o755)
    assert not any(fake_mnist.data_dir.iterdir())
    assert [p.name for p in fake_mnist.cache_dir.iterdir()] == ["logistic_mnist79-proj0-d100.npz"]
    assert fake_mnist.projections == 1
    np.testing.assert_array_equal(again.features, first.features)


def test_the_cache_dir_argument_wins_over_the_environment(fake_mnist, tmp_path):
    _build(fake_mnist, cache_dir=str(tmp_path / "mine"))
    assert [p.name for p in (tmp_path / "mine").iterdir()] == ["logistic_mnist79-proj0-d100.npz"]
    assert not fake_mnist.cache_dir.exists()


def test_a_cache_dir_that_cannot_be_made_only_costs_a_projection(fake_mnist, tmp_path):
    (tmp_path / "a-file").write_text("")
    first = _build(fake_mnist, cache_dir=str(tmp_path / "a-file" / "cache"))
    again = _build(fake_mnist, cache_dir=str(tmp_path / "a-file" / "cache"))
    assert fake_mnist.projections == 2 and not any(fake_mnist.data_dir.iterdir())
    np.testing.assert_array_equal(again.features, first.features)


def test_data_errors_propagate_unchanged(fake_mnist):
    error = fake_mnist.DataError("MNIST not found in /nowhere/mnist: run scripts/fetch_data.py")
    fake_mnist.error = error
    with pytest.raises(fake_mnist.DataError) as caught:
        _build(fake_mnist)
    assert caught.value is error
    assert not fake_mnist.cache_dir.exists()


# -- config ----------------------------------------------------------------------------------------------------
def test_registered_and_config_composes():
    assert TARGETS["logistic_mnist79"] is lr.logistic_mnist79
    from experiments.common import compose

    config = validate_config(compose(["target=logistic_mnist79", "data_dir=/some/where", "cache_dir=/a/cache"]))
    assert config["data_dir"] == "/some/where" and config["cache_dir"] == "/a/cache"
    assert config["target"] == {"name": "logistic_mnist79", "data_dir": "/some/where", "cache_dir": "/a/cache",
                                "projection_seed": 0, "n_components": 100, "batch_size": 500}


# -- the real data -------------------------------------------------------------------------------------------
REAL_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _real_loader_available():
    if not (REAL_DATA / "mnist").is_dir():
        return False
    try:
        import sgmcmc.data.mnist  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _real_loader_available(), reason="needs shared/data/mnist and sgmcmc.data.mnist")
def test_real_mnist79(monkeypatch, tmp_path):
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))  # never write into the repository
    target = lr.logistic_mnist79(data_dir=str(REAL_DATA))
    assert target.features.shape == (12_214, 100) and target.test_features.shape == (2_037, 100)
    assert target.dim == 100 and target.batch_size == 500 and target.name == "logistic_mnist79"
    assert int(np.sum(target.labels == 1)) == 6_265 and int(np.sum(target.labels == -1)) == 5_949
    assert int(np.sum(target.test_labels == 1)) == 1_028 and int(np.sum(target.test_labels == -1)) == 1_009
    assert target.test_log_likelihood(np.zeros((1, 100)))[0] == pytest.approx(-2_037 * np.log(2.0))
