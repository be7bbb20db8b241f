"""T12, BPMF (SPEC §2 T12, §3 E8): the gradients against finite differences of the potential, the compiled kernels
against the numpy reference, the sparse minibatch gradient, the Gibbs conditionals in closed form, and the
predictions and RMSE against hand computations; on a small synthetic ratings.dat and tiny hand-made sets."""

import inspect
from pathlib import Path

import numpy as np
import pytest
import yaml

from sgmcmc.data.synthetic_ratings import draw_ratings, write_ratings_dat
from sgmcmc.targets.bpmf import BASE, BPMF, bpmf_movielens
from tests.targets.test_drbm import _central_differences

CONFIG = Path(__file__).parents[2] / "configs" / "target" / "bpmf_movielens.yaml"
K = 3


@pytest.fixture(scope="module")
def ratings_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ratings") / "ratings.dat"
    write_ratings_dat(draw_ratings(30, 25, 700, latent_dim=K, seed=5), path)
    return path


def _target(ratings_file, batch_size=50, **options):
    return bpmf_movielens(ratings_file=ratings_file, latent_dim=K, batch_size=batch_size, **options)


def _hyper(target, n_chains=2):
    """Distinct precisions per chain, so that a mix-up of groups or chains shows."""
    target.set_hyperparameters({"precision_user": np.array([1.5, 2.0])[:n_chains],
                                "precision_item": np.array([3.0, 0.5])[:n_chains],
                                "precision_user_bias": np.array([4.0, 7.0])[:n_chains],
                                "precision_item_bias": np.array([0.25, 2.5])[:n_chains],
                                "precision_rating": np.array([6.0, 11.0])[:n_chains]})
    return target


def _theta(target, n_chains=2, seed=0, scale=0.3):
    return scale * np.random.default_rng(seed).standard_normal((n_chains, target.dim))


# -- the target's shape and the factory ----------------------------------------------------------------
def test_layout_fold_and_defaults(ratings_file):
    target = bpmf_movielens(ratings_file=ratings_file, batch_size=100)
    from sgmcmc.data.movielens import fold_mask, read_ratings

    data = read_ratings(ratings_file)
    test = fold_mask(len(data), 1)
    assert target.name == "bpmf_movielens" and not target.has_exact_density
    assert target.dim == (data.n_users + data.n_items) * 21
    assert target.n_data == int((~test).sum()) and target.test_users.size == int(test.sum())
    np.testing.assert_array_equal(target.y, (data.ratings[~test] - 1) / 4)
    np.testing.assert_array_equal(target.test_ratings, data.ratings[test])
    assert target.gibbs_every == 2000 and target.predict_every == target.n_data // 100
    assert target.base == BASE == 0.645391
    assert all(np.array_equal(v, [1.0]) for v in target.hyperparameters().values())
    assert sorted(target.hyperparameters()) == sorted(["precision_user", "precision_item", "precision_user_bias",
                                                       "precision_item_bias", "precision_rating"])
    theta = target.initial_position(3, np.random.default_rng(0))
    U, V, a, b = target.unpack(theta)
    assert np.all(a == 0) and np.all(b == 0)
    assert abs(np.std(np.concatenate([U.ravel(), V.ravel()])) - 0.03) < 0.002


def test_evaluate_on_validation_leaves_the_test_fold_out(ratings_file):
    """evaluate_on=validation: the test fold's ratings are in neither set; the other ratings' fold 2 (by the same
    mknfold rule, in their order) is scored and the rest trains."""
    from sgmcmc.data.movielens import fold_mask, read_ratings

    data = read_ratings(ratings_file)
    outside = ~fold_mask(len(data), 2)
    scored = fold_mask(int(outside.sum()), 2)
    target = bpmf_movielens(ratings_file=ratings_file, batch_size=100, fold=2, evaluate_on="validation")
    np.testing.assert_array_equal(target.test_ratings, data.ratings[outside][scored])
    np.testing.assert_array_equal(target.y, (data.ratings[outside][~scored] - 1) / 4)


@pytest.mark.parametrize("name, value", [("fold", 0), ("fold", 6), ("n_folds", 1), ("latent_dim", 0),
                                         ("batch_size", 0), ("base", float("nan")), ("initial_scale", -1.0),
                                         ("hyper_shape", 0.0), ("hyper_rate", "x"), ("gibbs_every", -1),
                                         ("predict_every", 1.5), ("evaluate_on", "train")])
def test_bad_values_name_the_parameter(ratings_file, name, value):
    with pytest.raises(ValueError, match=name):
        bpmf_movielens(ratings_file=ratings_file, **{name: value})


def test_a_batch_larger_than_the_training_set_is_refused(ratings_file):
    with pytest.raises(ValueError, match="batch_size"):
        bpmf_movielens(ratings_file=ratings_file, batch_size=10**6)


def test_the_config_sets_only_keys_of_the_factory():
    config = yaml.safe_load(CONFIG.read_text())
    keys = set(config["target"]) - {"name"}
    assert config["target"]["name"] == "bpmf_movielens"
    assert keys <= set(inspect.signature(bpmf_movielens).parameters)
    run = config["run"]
    assert run["n_chains"] == 1 and run["burn_in"] < run["n_steps"]


# -- potential and gradients ---------------------------------------------------------------------------
def test_potential_by_hand_on_a_tiny_set():
    # two users, two items, k = 1
    target = BPMF([0, 1, 1], [0, 0, 1], [5, 1, 3], 2, 2, latent_dim=1)
    _hyper(target, 1)
    theta = np.array([[0.5, -0.2, 0.3, 0.1, 0.05, -0.1, 0.02, 0.2]])  # U0 U1 V0 V1 a0 a1 b0 b1
    y = np.array([1.0, 0.0, 0.5])
    y_hat = BASE + np.array([0.05 + 0.02 + 0.5 * 0.3, -0.1 + 0.02 - 0.2 * 0.3, -0.1 + 0.2 - 0.2 * 0.1])
    expected = 0.5 * 6.0 * np.sum((y - y_hat) ** 2) + 0.5 * (1.5 * 0.29 + 3.0 * 0.1 + 4.0 * 0.0125 + 0.25 * 0.0404)
    np.testing.assert_allclose(target.potential(theta), [expected], rtol=1e-13)


@pytest.mark.parametrize("kernels", [True, False])
def test_full_gradient_matches_central_differences_of_the_potential(ratings_file, kernels):
    target = _hyper(_target(ratings_file, kernels=kernels))
    theta = _theta(target)
    numeric = _central_differences(target.potential, theta)
    gradient = target.gradient(theta)
    assert np.max(np.abs(gradient - numeric)) < 1e-6 * max(1.0, np.max(np.abs(gradient)))


def test_per_rating_gradients_sum_to_the_full_gradient(ratings_file):
    target = _hyper(_target(ratings_file))
    theta = _theta(target, seed=1)
    index = np.tile(np.arange(target.n_data), (2, 1))
    per_rating = target.log_likelihood_gradients(theta, index)
    assert np.all(np.count_nonzero(per_rating, axis=2) <= 2 * K + 2)  # sparse: U_u, V_v, a_u, b_v
    np.testing.assert_allclose(-per_rating.sum(axis=1) - target.log_prior_gradient(theta), target.gradient(theta),
                               rtol=1e-12, atol=1e-12)


def test_kernels_equal_the_numpy_reference(ratings_file):
    compiled, reference = _hyper(_target(ratings_file)), _hyper(_target(ratings_file, kernels=False))
    theta = _theta(compiled, seed=2)
    np.testing.assert_allclose(compiled.gradient(theta), reference.gradient(theta), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(compiled.potential(theta), reference.potential(theta), rtol=1e-13)
    np.testing.assert_allclose(compiled.squared_residuals(theta), reference.squared_residuals(theta), rtol=1e-13)
    np.testing.assert_allclose(compiled.predict(theta), reference.predict(theta), rtol=1e-14)
    for seed in range(3):  # the same rng: the same minibatches
        np.testing.assert_allclose(compiled.stochastic_gradient(theta, np.random.default_rng(seed)),
                                   reference.stochastic_gradient(theta, np.random.default_rng(seed)),
                                   rtol=1e-12, atol=1e-12)


def test_sparse_minibatch_gradient_equals_the_dense_per_rating_path(ratings_file):
    target = _hyper(_target(ratings_file))
    theta = _theta(target, seed=3)
    sparse = target.stochastic_gradient(theta, np.random.default_rng(7))
    dense, per_rating = target.minibatch_gradient(theta, np.random.default_rng(7))  # DataTarget's (c, n, d) path
    np.testing.assert_allclose(sparse, dense, rtol=1e-12, atol=1e-12)


def test_minibatches_are_distinct_training_ratings_one_draw_per_chain(ratings_file):
    target = _target(ratings_file)
    index = target.minibatch(np.random.default_rng(0), 3)
    assert index.shape == (3, 50) and index.min() >= 0 and index.max() < target.n_data
    assert all(np.unique(row).size == 50 for row in index)
    # all n-subsets equally likely: every rating is drawn with probability n/N
    counts = np.bincount(target.minibatch(np.random.default_rng(1), 4000).ravel(), minlength=target.n_data)
    expected = 4000 * 50 / target.n_data
    assert abs(counts.mean() - expected) < 1e-9 and np.all(np.abs(counts - expected) < 6 * np.sqrt(expected))


def test_stochastic_gradient_with_the_whole_training_set_is_the_full_gradient(ratings_file):
    n_train = _target(ratings_file).n_data
    target = _hyper(_target(ratings_file, batch_size=n_train))
    theta = _theta(target, seed=4)
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    np.testing.assert_array_equal(target.stochastic_gradient(theta, rng), target.gradient(theta))
    assert rng.bit_generator.state == state  # nothing drawn


def test_the_minibatch_gradient_is_unbiased(ratings_file):
    target = _hyper(_target(ratings_file, batch_size=40), 1)
    theta = _theta(target, n_chains=1, seed=5)
    rng = np.random.default_rng(8)
    draws = np.stack([target.stochastic_gradient(theta, rng)[0] for _ in range(3000)])
    error = draws.mean(axis=0) - target.gradient(theta)[0]
    standard_error = draws.std(axis=0) / np.sqrt(len(draws)) + 1e-12
    assert np.max(np.abs(error) / standard_error) < 5.5


# -- hyperparameters --------------------------------------------------------------------------------------
def test_gibbs_conditionals_in_closed_form(ratings_file):
    target = _target(ratings_file)
    theta = _theta(target, seed=6)
    U, V, a, b = target.unpack(theta)
    y_hat = (BASE + a[:, target.users] + b[:, target.items]
             + np.einsum("cik,cik->ci", U[:, target.users], V[:, target.items]))
    squares = np.sum((target.y - y_hat) ** 2, axis=1)
    shape, rate = target.rating_conditional(theta)
    assert shape == 1.0 + target.n_data / 2
    np.testing.assert_allclose(rate, 1.0 + squares / 2, rtol=1e-12)
    norms = [np.sum(U**2, axis=(1, 2)), np.sum(V**2, axis=(1, 2)), np.sum(a**2, axis=1), np.sum(b**2, axis=1)]
    sizes = [U[0].size, V[0].size, a[0].size, b[0].size]
    # the draw: one rng.gamma call for the four λ's (c, 4), then one for τ (c,)
    target.gibbs_update(theta, np.random.default_rng(9))
    rng = np.random.default_rng(9)
    lambdas = rng.gamma(np.broadcast_to(1.0 + np.array(sizes) / 2, (2, 4)), 1.0 / (1.0 + np.stack(norms, 1) / 2))
    tau = rng.gamma(shape, 1.0 / (1.0 + squares / 2))
    values = target.hyperparameters()
    np.testing.assert_allclose(values["precision_rating"], tau, rtol=1e-12)
    for g, name in enumerate(["precision_user", "precision_item", "precision_user_bias", "precision_item_bias"]):
        np.testing.assert_allclose(values[name], lambdas[:, g], rtol=1e-12)
    # the mode (optimisers): (shape − 1) / rate, nothing drawn
    target.gibbs_update(theta, None, mode=True)
    np.testing.assert_allclose(target.hyperparameters()["precision_rating"], (shape - 1) / (1.0 + squares / 2),
                               rtol=1e-12)
    np.testing.assert_allclose(target.hyperparameters()["precision_user"], (sizes[0] / 2) / (1.0 + norms[0] / 2),
                               rtol=1e-12)


def test_the_precisions_enter_the_gradient_per_chain(ratings_file):
    target = _target(ratings_file)
    theta = _theta(target, seed=7)
    target.gibbs_update(theta, np.random.default_rng(0))
    values = target.hyperparameters()
    assert all(v.shape == (2,) for v in values.values())
    other = _target(ratings_file)
    other.set_hyperparameters({name: v[1:] for name, v in values.items()})
    np.testing.assert_allclose(target.gradient(theta)[1:], other.gradient(theta[1:]), rtol=1e-13)
    np.testing.assert_allclose(target.potential(theta)[1:], other.potential(theta[1:]), rtol=1e-13)
    with pytest.raises(ValueError, match="chains"):
        target.gradient(_theta(target, n_chains=3))
    with pytest.raises(ValueError, match="expected"):
        target.set_hyperparameters({"precision_user": np.ones(2)})


# -- predictions ------------------------------------------------------------------------------------------
def test_predict_and_rmse_by_hand():
    target = BPMF([0, 1], [0, 1], [3, 4], 2, 2, test_users=[0, 1, 1], test_items=[1, 0, 1], test_ratings=[5, 1, 2],
                  latent_dim=1, base=0.5)
    # U0 U1 V0 V1 a0 a1 b0 b1
    theta = np.array([[1.0, 2.0, 0.5, 0.25, 0.1, -0.2, 0.0, 0.05],
                      [0.0, 0.0, 0.0, 0.0, 0.7, -0.9, 0.0, 0.0]])
    y_hat = np.array([[0.5 + 0.1 + 0.05 + 0.25, 0.5 - 0.2 + 0.0 + 1.0, 0.5 - 0.2 + 0.05 + 0.5],
                      [1.2, -0.4, -0.4]])
    expected = np.clip(1 + 4 * y_hat, 1, 5)  # chain 0: 4.6, 6.2 → 5, 4.4; chain 1: 5.8 → 5, −0.6 → 1, 1
    prediction = target.predict(theta)
    assert prediction.shape == (2, 3, 1)
    np.testing.assert_allclose(prediction[:, :, 0], expected, rtol=1e-14)
    np.testing.assert_allclose(prediction[:, :, 0], [[4.6, 5.0, 4.4], [5.0, 1.0, 1.0]], rtol=1e-14)
    rmse = target.predictive_metrics(prediction)["rmse"]
    np.testing.assert_allclose(rmse, [np.sqrt((0.4**2 + 4.0**2 + 2.4**2) / 3), np.sqrt((0 + 0 + 1) / 3)], rtol=1e-14)


def test_without_a_test_set_there_are_no_predictions():
    target = BPMF([0, 1], [0, 1], [3, 4], 2, 2, latent_dim=1)
    assert target.predict_every == 0
    with pytest.raises(TypeError, match="test set"):
        target.predict(np.zeros((1, target.dim)))
