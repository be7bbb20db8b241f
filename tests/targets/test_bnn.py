"""T11, the SGHMC paper's Bayesian neural network on MNIST (SPEC §2 T11; Chen, Fox & Guestrin 2014 §4.2): gradients
against finite differences (and a wrong gradient caught by the same check), the fused minibatch gradient against the
per-example reference, chunking, the Gamma precisions' Gibbs steps, the test-set predictions and metrics, on tiny
synthetic data; the factory on a fake MNIST and, if present, on the real one."""

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from scipy.special import expit, log_softmax

import sgmcmc.data.mnist as mnist_module
from sgmcmc.data import resolve_data_dir
from sgmcmc.targets.base import Target
from sgmcmc.targets.bnn import PRECISION_NAMES, BayesianNeuralNetwork, bnn_mnist, parameter_count
from sgmcmc.targets.data import DataTarget
from tests.helpers import numerical_gradient

# D, H, K all different (a transposed block does not fit).
N, D, H, K, N_TEST = 30, 5, 3, 4, 12
DIM = D * H + H + H * K + K


def _data(seed, n):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, D)), rng.integers(0, K, size=n)


def _target(batch_size=7, **options):
    return BayesianNeuralNetwork(*_data(0, N), *_data(1, N_TEST), n_hidden=H, batch_size=batch_size, n_classes=K,
                                 **options)


def _points(seed, n=3, scale=0.7):
    return scale * np.random.default_rng(seed).normal(size=(n, DIM))


def _with_precisions(target, n_chains=3):
    """Distinct precisions per group and chain, so that a mixed-up group or chain shows."""
    values = {name: 0.5 + g + 0.25 * np.arange(n_chains) for g, name in enumerate(PRECISION_NAMES)}
    target.set_hyperparameters(values)
    return values


def _direct_log_p(target, theta_row, x):
    """log p(· | x) (m, K) for one parameter vector, written out from the model's definition."""
    w1 = theta_row[: D * H].reshape(D, H)
    b1 = theta_row[D * H: D * H + H]
    w2 = theta_row[D * H + H: D * H + H + H * K].reshape(H, K)
    b2 = theta_row[D * H + H + H * K:]
    return log_softmax(expit(x @ w1 + b1) @ w2 + b2, axis=1)


def _relative_error(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _finite_difference_error(gradient, target, theta):
    """The finite-difference check of a full-data gradient: its relative error against central differences of U."""
    return _relative_error(gradient, numerical_gradient(target.potential, theta, step=1e-5))


# -- shape and parameters --------------------------------------------------------------------------------
def test_dimension_and_layout():
    target = _target()
    assert target.dim == DIM == parameter_count(D, H, K)
    assert parameter_count(784, 100, 10) == 79_510
    assert isinstance(target, DataTarget) and target.name == "bnn_mnist" and not target.has_exact_density
    theta = np.arange(2 * DIM, dtype=float).reshape(2, DIM)
    w1, b1, w2, b2 = target.unpack(theta)
    assert w1.shape == (2, D, H) and b1.shape == (2, H) and w2.shape == (2, H, K) and b2.shape == (2, K)
    assert w1[1, 0, 1] == theta[1, 1] and w1[0, 1, 0] == theta[0, H]  # W1 row-major (D×H) first
    assert b1[0, 0] == theta[0, D * H] and w2[0, 0, 1] == theta[0, D * H + H + 1] and b2[1, -1] == theta[1, -1]
    np.testing.assert_array_equal(target.pack(w1, b1, w2, b2), theta)
    with pytest.raises(ValueError, match="w2"):
        target.pack(w1, b1, w2[:, :, :-1], b2)
    with pytest.raises(ValueError, match="theta"):
        target.potential(np.zeros((2, DIM + 1)))


def test_potential_against_the_definition():
    target = _target()
    values = _with_precisions(target)
    theta = _points(0)
    features, labels = target.features, target.labels
    groups = np.split(np.arange(DIM), np.cumsum([D * H, H, H * K]))
    for c in range(3):
        log_likelihood = _direct_log_p(target, theta[c], features)[np.arange(N), labels].sum()
        prior = sum(0.5 * values[name][c] * np.sum(theta[c, g] ** 2) for name, g in zip(PRECISION_NAMES, groups))
        assert target.potential(theta)[c] == pytest.approx(-log_likelihood + prior, rel=1e-12)


# -- gradients ---------------------------------------------------------------------------------------------
def test_full_gradient_matches_finite_differences():
    target = _target()
    _with_precisions(target)
    theta = _points(1)
    assert _finite_difference_error(target.gradient(theta), target, theta) < 1e-6


def test_finite_difference_check_catches_a_wrong_gradient():
    """The check above fails on a gradient with one block's sign flipped (b1, the smallest), or with one group's
    precision term missing: it can tell a wrong gradient from a right one."""
    target = _target()
    _with_precisions(target)
    theta = _points(2)
    right = target.gradient(theta)
    assert _finite_difference_error(right, target, theta) < 1e-6
    flipped = right.copy()
    _, b1, _, _ = target.unpack(flipped)
    b1 *= -1.0
    assert _finite_difference_error(flipped, target, theta) > 1e-3
    no_prior_b2 = right.copy()
    no_prior_b2[:, -K:] += target.log_prior_gradient(theta)[:, -K:]
    assert _finite_difference_error(no_prior_b2, target, theta) > 1e-4


def test_per_example_gradients_match_finite_differences_of_log_p():
    target = _target()
    theta = _points(3, n=2)
    index = np.array([[0, 4, 17], [29, 4, 8]])
    per_example = target.log_likelihood_gradients(theta, index)
    assert per_example.shape == (2, 3, DIM)
    for c in range(2):
        for j, i in enumerate(index[c]):
            def log_p(points, i=i):
                return np.array([_direct_log_p(target, row, target.features[i:i + 1])[0, target.labels[i]]
                                 for row in points])

            reference = numerical_gradient(log_p, theta[c:c + 1], step=1e-5)[0]
            assert _relative_error(per_example[c, j], reference) < 1e-6


def test_full_gradient_is_the_sum_of_the_per_example_gradients():
    target = _target()
    _with_precisions(target)
    theta = _points(4)
    per_example = target.log_likelihood_gradients(theta, np.tile(np.arange(N), (3, 1)))
    expected = -per_example.sum(axis=1) - target.log_prior_gradient(theta)
    np.testing.assert_allclose(target.gradient(theta), expected, rtol=1e-12, atol=1e-12)


def test_stochastic_gradient_equals_the_base_minibatch_gradient():
    target = _target()
    _with_precisions(target)
    theta = _points(5)
    fused_rng, base_rng = np.random.default_rng(11), np.random.default_rng(11)
    for _ in range(3):
        fused = target.stochastic_gradient(theta, fused_rng)
        base = DataTarget.minibatch_gradient(target, theta, base_rng)[0]
        np.testing.assert_allclose(fused, base, rtol=1e-12, atol=1e-12)
    assert fused_rng.random() == base_rng.random()  # the same random numbers used: one minibatch draw per call


def test_stochastic_gradient_with_the_whole_data_is_the_full_gradient():
    target = _target(batch_size=N)
    _with_precisions(target)
    theta = _points(6)
    np.testing.assert_allclose(target.stochastic_gradient(theta, np.random.default_rng(0)), target.gradient(theta),
                               rtol=1e-12, atol=1e-12)


def test_stochastic_gradient_is_unbiased_over_all_minibatches():
    """Averaged over many draws the minibatch gradient approaches ∇U (a loose Monte Carlo check)."""
    target = _target(batch_size=10)
    theta = _points(7, n=1)
    rng = np.random.default_rng(3)
    mean = np.mean([target.stochastic_gradient(theta, rng) for _ in range(4000)], axis=0)
    assert _relative_error(mean, target.gradient(theta)) < 0.05


def test_chunking_does_not_change_the_results():
    whole, chunked = _target(), _target()
    chunked._chunk_elements = 5  # blocks of one chain and one or two examples
    theta = _points(9)
    np.testing.assert_allclose(chunked.potential(theta), whole.potential(theta), rtol=1e-12)
    np.testing.assert_allclose(chunked.gradient(theta), whole.gradient(theta), rtol=1e-11, atol=1e-12)
    np.testing.assert_allclose(chunked.predict(theta), whole.predict(theta), rtol=1e-12)
    np.testing.assert_allclose(chunked.stochastic_gradient(theta, np.random.default_rng(1)),
                               whole.stochastic_gradient(theta, np.random.default_rng(1)), rtol=1e-11, atol=1e-12)


def test_noise_covariance_is_unknown():
    """d×d is 50 GB at full size: the samplers get None (B̂ = 0, the authors' choice), as for a target that does not
    know it."""
    target = _target()
    assert target.noise_covariance(_points(0)) is None
    assert type(target).noise_covariance is Target.noise_covariance


def test_large_potentials_stay_finite():
    target = _target()
    theta = 200.0 * _points(10)
    with np.errstate(over="raise", divide="raise", invalid="raise"):  # underflow (σ'(a) ≈ 0) is harmless
        assert np.all(np.isfinite(target.potential(theta)))
        assert np.all(np.isfinite(target.gradient(theta)))


# -- hyperparameters -------------------------------------------------------------------------------------------
def test_gibbs_update_draws_the_conditional_and_moves_the_prior_gradient():
    target = _target(hyper_shape=2.0, hyper_rate=3.0)
    theta = _points(11)
    before = target.hyperparameters()
    assert set(before) == set(PRECISION_NAMES) and all(np.array_equal(v, [1.0]) for v in before.values())
    np.testing.assert_allclose(target.log_prior_gradient(theta), -theta)
    target.gibbs_update(theta, np.random.default_rng(4))
    after = target.hyperparameters()
    sizes = [D * H, H, H * K, K]
    groups = np.split(np.arange(DIM), np.cumsum(sizes[:-1]))
    rng = np.random.default_rng(4)
    shape = np.array([2.0 + n / 2 for n in sizes])
    rate = np.stack([3.0 + np.sum(theta[:, g] ** 2, axis=1) / 2 for g in groups], axis=1)
    expected = rng.gamma(np.broadcast_to(shape, rate.shape), 1.0 / rate)
    for g, name in enumerate(PRECISION_NAMES):
        assert after[name].shape == (3,)
        np.testing.assert_allclose(after[name], expected[:, g])
        np.testing.assert_allclose(target.log_prior_gradient(theta)[:, groups[g]],
                                   -expected[:, g, None] * theta[:, groups[g]])
    assert not np.allclose(target.log_prior_gradient(theta), -theta)


def test_gibbs_update_mode():
    target = _target()
    theta = _points(12)
    target.gibbs_update(theta, None, mode=True)  # no random numbers
    norm = np.sum(theta[:, D * H: D * H + H] ** 2, axis=1)
    np.testing.assert_allclose(target.hyperparameters()["precision_b1"], (1.0 + H / 2 - 1.0) / (1.0 + norm / 2))


def test_set_hyperparameters_round_trip_and_errors():
    target, other = _target(), _target()
    target.gibbs_update(_points(13), np.random.default_rng(0))
    other.set_hyperparameters(target.hyperparameters())
    theta = _points(14)
    np.testing.assert_array_equal(other.log_prior_gradient(theta), target.log_prior_gradient(theta))
    np.testing.assert_array_equal(other.potential(theta), target.potential(theta))
    with pytest.raises(ValueError, match="precision_w1"):
        other.set_hyperparameters({"precision_w1": np.ones(3)})
    with pytest.raises(ValueError, match="positive"):
        other.set_hyperparameters({name: -np.ones(3) for name in PRECISION_NAMES})


def test_every_defaults_to_one_epoch():
    target = _target(batch_size=7)
    assert target.gibbs_every == target.predict_every == N // 7
    assert _target(gibbs_every=0, predict_every=3).gibbs_every == 0
    assert _target(gibbs_every=0, predict_every=3).predict_every == 3


# -- initial position ----------------------------------------------------------------------------------------
def test_initial_position():
    target = _target(initial_scale=0.5)
    theta = target.initial_position(4, np.random.default_rng(2))
    w1, b1, w2, b2 = target.unpack(theta)
    rng = np.random.default_rng(2)
    np.testing.assert_array_equal(w1, 0.5 * rng.standard_normal((4, D, H)))
    np.testing.assert_array_equal(w2, 0.5 * rng.standard_normal((4, H, K)))
    assert not b1.any() and not b2.any()


# -- predictions ---------------------------------------------------------------------------------------------
def test_predict_gives_the_class_probabilities():
    target = _target()
    theta = _points(15)
    prediction = target.predict(theta)
    assert prediction.shape == (3, N_TEST, K)
    np.testing.assert_allclose(prediction.sum(axis=2), 1.0, rtol=1e-12)
    for c in range(3):
        np.testing.assert_allclose(prediction[c], np.exp(_direct_log_p(target, theta[c], target.test_features)),
                                   rtol=1e-12)


def test_predictive_metrics_by_hand():
    target = _target()
    labels = target.test_labels
    prediction = np.full((2, N_TEST, K), 0.1)
    # chain 0: every example right with probability 0.7; chain 1: the first three wrong (0.7 on another class, 0.1 on y)
    prediction[0, np.arange(N_TEST), labels] = 0.7
    wrong = (labels + 1) % K
    prediction[1, np.arange(N_TEST), labels] = 0.7
    prediction[1, np.arange(3), labels[:3]] = 0.1
    prediction[1, np.arange(3), wrong[:3]] = 0.7
    metrics = target.predictive_metrics(prediction)
    np.testing.assert_allclose(metrics["test_error"], [0.0, 3 / N_TEST])
    np.testing.assert_allclose(metrics["test_log_likelihood"],
                               [np.log(0.7), (9 * np.log(0.7) + 3 * np.log(0.1)) / N_TEST])
    # of the target's own predictions, against a direct count
    theta = _points(16)
    probabilities = target.predict(theta)
    metrics = target.predictive_metrics(probabilities)
    for c in range(3):
        assert metrics["test_error"][c] == np.mean(np.argmax(probabilities[c], axis=1) != labels)
        true_class = probabilities[c, np.arange(N_TEST), labels]
        assert metrics["test_log_likelihood"][c] == pytest.approx(np.mean(np.log(true_class)))
    with pytest.raises(ValueError, match="prediction"):
        target.predictive_metrics(np.ones((2, N_TEST, K + 1)))


# -- bad values ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("options, name", [
    (dict(n_hidden=0), "n_hidden"), (dict(batch_size=0), "batch_size"), (dict(batch_size=N + 1), "batch_size"),
    (dict(n_classes=1), "n_classes"), (dict(initial_scale=0.0), "initial_scale"), (dict(hyper_shape=-1), "hyper_shape"),
    (dict(hyper_rate="x"), "hyper_rate"), (dict(gibbs_every=-1), "gibbs_every"),
    (dict(predict_every=1.5), "predict_every"),
])
def test_bad_values_name_the_parameter(options, name):
    options = {"n_hidden": H, "batch_size": 7, "n_classes": K, **options}
    with pytest.raises(ValueError, match=name):
        BayesianNeuralNetwork(*_data(0, N), *_data(1, N_TEST), **options)


def test_bad_data():
    features, labels = _data(0, N)
    test_features, test_labels = _data(1, N_TEST)
    with pytest.raises(ValueError, match="labels"):
        BayesianNeuralNetwork(features, labels + K, test_features, test_labels, n_hidden=H, batch_size=7, n_classes=K)
    with pytest.raises(ValueError, match="test_features"):
        BayesianNeuralNetwork(features, labels, test_features[:, 1:], test_labels, n_hidden=H, batch_size=7,
                              n_classes=K)
    with pytest.raises(ValueError, match="validation"):
        BayesianNeuralNetwork(features, labels, test_features, test_labels, n_hidden=H, batch_size=7, n_classes=K,
                              validation_features=features)


# -- the factory ------------------------------------------------------------------------------------------------
@pytest.fixture
def fake_mnist(monkeypatch, tmp_path):
    """A fake MNIST of 60 training and 16 test images, 784 pixels, digits 0..9, in place of the loader."""
    rng = np.random.default_rng(0)
    source = SimpleNamespace(train_images=rng.integers(0, 256, (60, 784), dtype=np.uint8),
                             train_labels=rng.integers(0, 10, 60).astype(np.uint8),
                             test_images=rng.integers(0, 256, (16, 784), dtype=np.uint8),
                             test_labels=rng.integers(0, 10, 16).astype(np.uint8))
    calls = []

    def load_mnist(data_dir=None, digits=None):
        calls.append((Path(data_dir), digits))
        return source

    monkeypatch.setattr(mnist_module, "load_mnist", load_mnist)
    return SimpleNamespace(source=source, calls=calls, data_dir=tmp_path)


def test_factory_splits_and_scales(fake_mnist):
    target = bnn_mnist(data_dir=str(fake_mnist.data_dir), n_hidden=4, batch_size=5, split_seed=3, n_validation=20)
    source = fake_mnist.source
    assert fake_mnist.calls == [(fake_mnist.data_dir, None)]
    order = np.random.default_rng(3).permutation(60)
    np.testing.assert_array_equal(target.validation_features, source.train_images[order[:20]] / 256.0)
    np.testing.assert_array_equal(target.validation_labels, source.train_labels[order[:20]])
    np.testing.assert_array_equal(target.features, source.train_images[order[20:]] / 256.0)
    np.testing.assert_array_equal(target.labels, source.train_labels[order[20:]])
    np.testing.assert_array_equal(target.test_features, source.test_images / 256.0)
    assert target.n_data == 40 and target.dim == parameter_count(784, 4, 10) and target.gibbs_every == 8
    small = bnn_mnist(data_dir=str(fake_mnist.data_dir), n_hidden=4, batch_size=5, n_validation=20, max_train=10,
                      max_test=6)
    order = np.random.default_rng(0).permutation(60)
    np.testing.assert_array_equal(small.labels, source.train_labels[order[20:30]])
    assert small.test_features.shape == (6, 784) and small.validation_features.shape == (20, 784)


def test_evaluate_on_validation_scores_the_validation_split(fake_mnist):
    """evaluate_on=validation: the predictive's images are the validation split's (the first max_test of them), so a
    step size chosen on the trace's test_error never sees the test set; the training set is the same."""
    source = fake_mnist.source
    scored = bnn_mnist(data_dir=str(fake_mnist.data_dir), n_hidden=4, batch_size=5, split_seed=3, n_validation=20,
                       max_test=12, evaluate_on="validation")
    order = np.random.default_rng(3).permutation(60)
    np.testing.assert_array_equal(scored.test_features, source.train_images[order[:12]] / 256.0)
    np.testing.assert_array_equal(scored.test_labels, source.train_labels[order[:12]])
    np.testing.assert_array_equal(scored.labels, source.train_labels[order[20:]])


@pytest.mark.parametrize("options, name", [
    (dict(n_validation=59), "n_validation"), (dict(split_seed=-1), "split_seed"), (dict(max_train=1), "max_train"),
    (dict(max_test=0), "max_test"), (dict(batch_size=100), "batch_size"), (dict(evaluate_on="train"), "evaluate_on"),
    (dict(evaluate_on="validation", n_validation=0), "evaluate_on"),
])
def test_factory_bad_values(fake_mnist, options, name):
    with pytest.raises(ValueError, match=name):
        bnn_mnist(data_dir=str(fake_mnist.data_dir), **{"n_hidden": 4, "batch_size": 5, "n_validation": 20, **options})


def _mnist_folder():
    folder = resolve_data_dir(None) / "mnist"
    return folder if all((folder / name).is_file() for name in mnist_module.FILE_NAMES.values()) else None


@pytest.mark.skipif(_mnist_folder() is None, reason="no MNIST in the data folder ($SGMCMC_DATA/mnist)")
def test_factory_on_real_mnist():
    target = bnn_mnist(max_train=1000, max_test=200, batch_size=100)
    assert target.dim == 79_510 and target.n_data == 1000 and target.test_features.shape == (200, 784)
    assert target.validation_features.shape == (10_000, 784)
    assert target.features.min() == 0.0 and target.features.max() == 255 / 256
    assert set(np.unique(target.labels)) == set(range(10))
    assert target.gibbs_every == target.predict_every == 10
    theta = target.initial_position(1, np.random.default_rng(0))
    gradient = target.stochastic_gradient(theta, np.random.default_rng(0))
    assert gradient.shape == (1, 79_510) and np.all(np.isfinite(gradient))
    metrics = target.predictive_metrics(target.predict(theta))
    # θ₀ is nearly 0: nearly uniform probabilities, log-likelihood ≈ log(1/10)
    assert metrics["test_log_likelihood"][0] == pytest.approx(np.log(0.1), abs=0.05)
