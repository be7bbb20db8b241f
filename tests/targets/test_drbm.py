"""T9, the discriminative RBM (SPEC §2 T9, §3 E6, §4.10; Shang et al. 2015 §4.3): the closed-form p(y | x) against a
brute-force sum over the hidden units, gradients against finite differences, chunking, minibatches, stability and
the test-set metrics, on tiny synthetic data."""

import itertools
import warnings

import numpy as np
import pytest

from sgmcmc.targets.data import DataTarget
from sgmcmc.targets.drbm import DiscriminativeRBM, parameter_count

# Two shapes with H, D, C all different (transposes do not fit), the second with many classes.
SHAPES = {"small": dict(n=30, d=5, c=3, h=4), "many_classes": dict(n=30, d=4, c=26, h=3)}
N_TEST = 12


def _data(seed, n, d, c):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(n, d))
    labels = rng.integers(0, c, size=n)
    return features, labels


def _target(shape="small", batch_size=None, with_test=True, **options):
    s = SHAPES[shape]
    features, labels = _data(0, s["n"], s["d"], s["c"])
    test = _data(1, N_TEST, s["d"], s["c"]) if with_test else (None, None)
    return DiscriminativeRBM(features, labels, s["c"], s["h"], *test, batch_size=batch_size, **options)


def _points(target, seed, n=3, scale=0.5):
    return scale * np.random.default_rng(seed).normal(size=(n, target.dim))


def _central_differences(function, theta, step=1e-5):
    """(function(θ + h e_j) − function(θ − h e_j)) / 2h for every coordinate j; function maps (c, d) → (c, ...)."""
    columns = []
    for j in range(theta.shape[1]):
        shift = np.zeros(theta.shape[1])
        shift[j] = step
        columns.append((function(theta + shift) - function(theta - shift)) / (2 * step))
    return np.stack(columns, axis=-1)


def _relative_error(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _brute_force_log_p(target, theta_row, x):
    """log p(y | x) for every class by enumerating all 2^H hidden configurations with the energy of SPEC T9
    (b = 0): p(y | x) ∝ Σ_h exp(hᵀWx + cᵀh + d_y + hᵀU e_y)."""
    W, c, U, d = (p[0] for p in target.unpack(theta_row[None, :]))
    scores = np.zeros(target.n_classes)
    for y in range(target.n_classes):
        terms = [h @ W @ x + c @ h + d[y] + h @ U[:, y]
                 for h in map(np.array, itertools.product([0.0, 1.0], repeat=target.n_hidden))]
        scores[y] = np.log(np.sum(np.exp(terms)))
    return scores - np.log(np.sum(np.exp(scores)))


# -- construction and parameters ------------------------------------------------------------------------------
@pytest.mark.parametrize("args, expected", [((126, 3, 20), 2603), ((16, 26, 100), 4326), ((50, 3, 20), 1083)])
def test_parameter_counts_of_the_paper(args, expected):
    assert parameter_count(*args) == expected


def test_attributes():
    target = _target()
    assert (target.n_features, target.n_classes, target.n_hidden) == (5, 3, 4)
    assert target.dim == parameter_count(5, 3, 4) == 4 * 5 + 4 + 4 * 3 + 3
    assert target.n_data == 30 and target.batch_size == 30  # default: the full data
    assert target.has_test_set and not target.has_exact_density
    assert _target(batch_size=7).batch_size == 7
    assert not _target(with_test=False).has_test_set


def test_pack_and_unpack_follow_the_flat_order():
    target = _target()
    theta = np.arange(2 * target.dim, dtype=float).reshape(2, target.dim)
    W, c, U, d = target.unpack(theta)
    assert W.shape == (2, 4, 5) and c.shape == (2, 4) and U.shape == (2, 4, 3) and d.shape == (2, 3)
    # W row-major first, then c, then U row-major (H × C), then d
    np.testing.assert_array_equal(W[1, 1, 2], theta[1, 1 * 5 + 2])
    np.testing.assert_array_equal(c[0], theta[0, 20:24])
    np.testing.assert_array_equal(U[0, 2, 1], theta[0, 24 + 2 * 3 + 1])
    np.testing.assert_array_equal(d[1], theta[1, 36:39])
    np.testing.assert_array_equal(target.pack(W, c, U, d), theta)
    with pytest.raises(ValueError, match="label_weights"):
        target.pack(W, c, np.swapaxes(U, 1, 2), d)


@pytest.mark.parametrize("change, message", [
    (lambda f, y: (f, y + 1), "labels"),                    # label 3 with C = 3
    (lambda f, y: (f, y - 1), "labels"),                    # label −1
    (lambda f, y: (f, y + 0.5), "labels"),
    (lambda f, y: (f, y[:-1]), "labels"),
    (lambda f, y: (f[:, 0], y), "features"),
    (lambda f, y: (np.where(f > 2, np.nan, f), y), "finite"),
])
def test_invalid_data_are_rejected(change, message):
    features, labels = change(*_data(0, 30, 5, 3))
    with pytest.raises(ValueError, match=message):
        DiscriminativeRBM(features, labels, 3, 4)


def test_invalid_options_are_rejected():
    features, labels = _data(0, 30, 5, 3)
    DiscriminativeRBM(features, labels.astype(float), 3, 4)  # integral floats are labels too
    with pytest.raises(ValueError, match="together"):
        DiscriminativeRBM(features, labels, 3, 4, test_features=features)
    with pytest.raises(ValueError, match="columns"):
        DiscriminativeRBM(features, labels, 3, 4, features[:, :2], labels)
    with pytest.raises(ValueError, match="n_classes"):
        DiscriminativeRBM(features, labels * 0, 1, 4)
    with pytest.raises(ValueError, match="n_hidden"):
        DiscriminativeRBM(features, labels, 3, 0)
    with pytest.raises(ValueError, match="prior_variance"):
        DiscriminativeRBM(features, labels, 3, 4, prior_variance=-1.0)
    with pytest.raises(ValueError, match="batch_size"):
        DiscriminativeRBM(features, labels, 3, 4, batch_size=31)
    with pytest.raises(ValueError, match="theta"):
        _target().potential(np.zeros((2, 7)))


def test_initial_position_is_a_small_gaussian():
    target = _target()
    theta = target.initial_position(500, np.random.default_rng(3))
    np.testing.assert_array_equal(theta, 0.01 * np.random.default_rng(3).standard_normal((500, target.dim)))


# -- the model -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", list(SHAPES))
def test_closed_form_matches_the_sum_over_hidden_units(shape):
    target = _target(shape)
    theta = _points(target, 1, n=2, scale=0.8)
    x = target.features[:6]
    proba = target.predict_proba(theta, x)
    assert proba.shape == (2, 6, target.n_classes)
    np.testing.assert_allclose(proba.sum(axis=2), 1.0, rtol=1e-13)
    for c in range(2):
        for m in range(6):
            np.testing.assert_allclose(np.log(proba[c, m]), _brute_force_log_p(target, theta[c], x[m]),
                                       rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("shape", list(SHAPES))
def test_potential_is_the_negative_log_likelihood_plus_prior(shape):
    target = _target(shape, prior_variance=2.0)
    theta = _points(target, 2)
    log_p = np.log(target.predict_proba(theta, target.features))
    expected = -log_p[:, np.arange(target.n_data), target.labels].sum(axis=1) + np.sum(theta**2, axis=1) / 4.0
    np.testing.assert_allclose(target.potential(theta), expected, rtol=1e-12)
    # θ = 0: every class equally likely
    np.testing.assert_allclose(target.potential(np.zeros((1, target.dim))), [target.n_data * np.log(target.n_classes)])


@pytest.mark.parametrize("shape", list(SHAPES))
def test_gradient_matches_finite_differences(shape):
    target = _target(shape, prior_variance=2.0)
    theta = _points(target, 3, n=2)
    gradient = target.gradient(theta)
    assert gradient.shape == theta.shape
    assert _relative_error(gradient, _central_differences(target.potential, theta)) < 1e-6


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_per_example_gradients_match_finite_differences(shape, kernels):
    """Each g_i against central differences of log p(y_i | x_i, θ) (independent of the summed gradient), from the
    compiled kernel and from the numpy reference."""
    target = _target(shape, kernels=kernels)
    theta = _points(target, 4, n=2)
    index = np.array([[0, 7, 7, 29], [3, 11, 0, 18]])
    per_example = target.log_likelihood_gradients(theta, index)
    assert per_example.shape == (2, 4, target.dim)
    for c in range(2):
        for b in range(4):
            i = index[c, b]
            log_p = lambda t: np.log(target.predict_proba(t, target.features[i:i + 1]))[:, 0, target.labels[i]]
            reference = _central_differences(log_p, theta[c:c + 1])[0]
            assert _relative_error(per_example[c, b], reference) < 1e-6


@pytest.mark.parametrize("shape", list(SHAPES))
def test_per_example_gradients_sum_to_the_gradient(shape):
    target = _target(shape)
    theta = _points(target, 5)
    per_example = target.log_likelihood_gradients(theta, np.broadcast_to(np.arange(target.n_data), (3, target.n_data)))
    np.testing.assert_allclose(-per_example.sum(axis=1) - target.log_prior_gradient(theta), target.gradient(theta),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(DataTarget.gradient(target, theta), target.gradient(theta), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(target.log_prior_gradient(theta), -theta / target.prior_variance)


def _assert_relative(actual, expected, tolerance=1e-12):
    """|actual − expected| <= tolerance · max|expected|, entry by entry (relative to the largest entry: single
    entries such as 1 − p_y or σ(o_y) − s̄ cancel, and differ in more digits whatever computes them)."""
    np.testing.assert_allclose(actual, expected, rtol=0, atol=tolerance * np.abs(expected).max())


def _kernel_cases():
    """(shape, θ scale, what it exercises): moderate θ (e^{o} from e^{pre}·e^{U}), large U or large pre (e^{−|o|}
    computed directly for the chain or the example), and θ = 0."""
    return [("small", 0.5, "products"), ("many_classes", 0.5, "products"), ("small", 0.0, "zero"),
            ("many_classes", 400.0, "direct"), ("small", 40.0, "mixed")]


@pytest.mark.parametrize("shape, scale, case", _kernel_cases())
def test_the_compiled_per_example_gradients_equal_the_numpy_reference(shape, scale, case):
    target = _target(shape)
    theta = _points(target, 20, n=4, scale=scale)
    if case == "mixed":  # one chain with U beyond the kernel's safe range, the others with some large pre
        weights, hidden_bias, label_weights, class_bias = (np.array(p) for p in target.unpack(theta / scale * 0.5))
        label_weights[0, 0, 0] = 350.0
        weights[1:, 0, :] = 100.0
        theta = target.pack(weights, hidden_bias, label_weights, class_bias)
    index = np.random.default_rng(21).integers(0, target.n_data, size=(4, 11))
    _assert_relative(target.log_likelihood_gradients(theta, index), target.log_likelihood_gradients_numpy(theta, index))


def test_the_kernel_folds_the_product_over_many_hidden_units():
    """H = 1,200 > 1,000 hidden units: the product of the 1 + e^{−|o|} is folded into the log every 1,000 units."""
    features, labels = _data(0, 8, 3, 3)
    target = DiscriminativeRBM(features, labels, 3, 1200)
    theta = _points(target, 22, n=2, scale=0.5)
    index = np.tile(np.arange(8), (2, 1))
    _assert_relative(target.log_likelihood_gradients(theta, index), target.log_likelihood_gradients_numpy(theta, index))


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_compiled_minibatch_sums_equal_the_numpy_reference(shape):
    """∇Ũ (``stochastic_gradient``) from the kernel's running sums equals the numpy reference's per-example array
    (same minibatch draw) to 1e-12."""
    target, reference = _target(shape, batch_size=12), _target(shape, batch_size=12, kernels=False)
    theta = _points(target, 23, n=3)
    gradient, per_example = reference.minibatch_gradient(theta, np.random.default_rng(4))
    _assert_relative(target.stochastic_gradient(theta, np.random.default_rng(4)), gradient)
    _assert_relative(target.minibatch_gradient(theta, np.random.default_rng(4))[1], per_example)


def test_full_data_sums_never_build_per_example_gradients(monkeypatch):
    target = _target()
    theta = _points(target, 6)

    def forbidden(*args, **kwargs):
        raise AssertionError("per-example gradients requested")

    monkeypatch.setattr(target, "log_likelihood_gradients", forbidden)
    target.potential(theta), target.gradient(theta), target.trace_metrics(theta)


@pytest.mark.parametrize("chunk", [1, 3 * 12 * 4, 2 * 30 * 12])  # one row per block; 3 rows; 2 chains
def test_chunking_does_not_change_the_results(monkeypatch, chunk):
    target = _target()
    theta = _points(target, 7, n=5)
    index = np.random.default_rng(0).integers(0, target.n_data, size=(5, 9))

    def everything():
        return (target.potential(theta), target.gradient(theta), target.log_likelihood_gradients_numpy(theta, index),
                target.predict_proba(theta, target.test_features), target.test_error(theta),
                target.test_log_likelihood(theta))

    expected = everything()
    blocks = list(target._blocks(5, 30, target._width))
    assert len(blocks) == 1  # the default chunk holds everything here
    monkeypatch.setattr(target, "_chunk_elements", chunk)
    assert len(list(target._blocks(5, 30, target._width))) > 1
    for a, b in zip(expected, everything()):
        np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-13)


def test_blocks_cover_every_chain_and_row_once(monkeypatch):
    target = _target()
    for chunk, width in [(1, 5), (7, 3), (40, 4), (10**6, 3)]:
        monkeypatch.setattr(target, "_chunk_elements", chunk)
        covered = np.zeros((6, 11), dtype=int)
        for chains, rows in target._blocks(6, 11, width):
            assert (chains.stop - chains.start) * (rows.stop - rows.start) * width <= max(chunk, width)
            covered[chains, rows] += 1
        np.testing.assert_array_equal(covered, 1)


def test_minibatch_gradient_is_unbiased():
    """E ∇Ũ = ∇U: the mean over 4,000 independent minibatches of 5 (one per chain, all at the same θ) is within
    5 standard errors sqrt(diag(noise_covariance)/M) of ∇U in every coordinate."""
    target = _target(batch_size=5)
    n_draws = 4000
    theta = np.tile(_points(target, 8, n=1), (n_draws, 1))
    gradient, per_example = target.minibatch_gradient(theta, np.random.default_rng(1))
    assert per_example.shape == (n_draws, 5, target.dim)
    exact = target.gradient(theta[:1])[0]
    covariance = target.noise_covariance(theta[:1])[0]
    standard_error = np.sqrt(np.diag(covariance) / n_draws)
    assert np.all(standard_error > 0)
    assert np.all(np.abs(gradient.mean(axis=0) - exact) < 5 * standard_error)
    np.testing.assert_allclose(np.var(gradient, axis=0, ddof=1), np.diag(covariance), rtol=0.15)


@pytest.mark.parametrize("kernels", [True, False])
@pytest.mark.parametrize("shape", list(SHAPES))
def test_huge_weights_are_finite_without_warnings(shape, kernels):
    target = _target(shape, batch_size=10, kernels=kernels)
    theta = 1e3 * _points(target, 9, scale=1.0)
    with warnings.catch_warnings(), np.errstate(over="raise", divide="raise", invalid="raise"):
        warnings.simplefilter("error")
        values = [target.potential(theta), target.gradient(theta),
                  target.log_likelihood_gradients(theta, np.broadcast_to(np.arange(30), (3, 30))),
                  target.predict_proba(theta, target.test_features), target.test_error(theta),
                  target.test_log_likelihood(theta), target.stochastic_gradient(theta, np.random.default_rng(0)),
                  np.array(list(target.trace_metrics(theta).values()))]
    assert all(np.all(np.isfinite(v)) for v in values)
    np.testing.assert_allclose(values[3].sum(axis=2), 1.0)
    # the gradient is still −Σ g_i + θ (here dominated by confident, mostly wrong, predictions)
    np.testing.assert_allclose(-values[2].sum(axis=1) + theta, values[1], rtol=1e-12)


# -- test-set metrics ------------------------------------------------------------------------------------------
def _class_bias_only(target, class_biases):
    """θ with W = 0, c = 0, U = 0 and the given d per chain: p(y | x) = softmax(d) for every x."""
    n = len(class_biases)
    H, D, C = target.n_hidden, target.n_features, target.n_classes
    return target.pack(np.zeros((n, H, D)), np.zeros((n, H)), np.zeros((n, H, C)), np.asarray(class_biases, float))


def test_metrics_on_a_hand_made_case():
    features, labels = _data(0, 30, 5, 3)
    test_labels = np.array([0, 0, 1, 2])
    target = DiscriminativeRBM(features, labels, 3, 4, np.ones((4, 5)), test_labels)
    theta = _class_bias_only(target, [[2.0, 0.0, 0.0], [0.0, 1.0, -1.0]])  # predicts class 0, class 1
    np.testing.assert_allclose(target.test_error(theta), [0.5, 0.75])
    log_softmax = theta[:, -3:] - np.log(np.exp(theta[:, -3:]).sum(axis=1, keepdims=True))
    expected_ll = log_softmax[:, test_labels].sum(axis=1)
    np.testing.assert_allclose(target.test_log_likelihood(theta), expected_ll, rtol=1e-12)
    metrics = target.trace_metrics(theta)
    assert set(metrics) == {"test_error", "test_error_sd", "test_log_likelihood"}
    assert all(type(v) is float for v in metrics.values())
    assert metrics["test_error"] == pytest.approx(0.625)
    assert metrics["test_error_sd"] == pytest.approx(np.std([0.5, 0.75], ddof=1))
    assert metrics["test_log_likelihood"] == pytest.approx(expected_ll.mean())
    one = target.trace_metrics(theta[:1])
    assert one["test_error"] == 0.5 and one["test_error_sd"] == 0.0


def test_test_error_is_the_argmax_of_predict_proba():
    target = _target("many_classes")
    theta = _points(target, 10, n=4, scale=2.0)
    predicted = np.argmax(target.predict_proba(theta, target.test_features), axis=2)
    np.testing.assert_allclose(target.test_error(theta), np.mean(predicted != target.test_labels, axis=1))


def test_a_separating_model_has_zero_test_error():
    """x = one-hot of the class, hidden unit j fires for class j (W = U = 10 I, c = −15): o_yj = 5 only for
    j = y = class(x), so every test point is classified correctly and confidently."""
    eye = np.eye(3)
    labels, test_labels = np.array([0, 1, 2, 2, 1]), np.array([2, 0, 1, 1])
    target = DiscriminativeRBM(eye[labels], labels, 3, 3, eye[test_labels], test_labels)
    good = target.pack(10 * eye[None], np.full((1, 3), -15.0), 10 * eye[None], np.zeros((1, 3)))
    assert target.test_error(good)[0] == 0.0
    assert target.test_log_likelihood(good)[0] > -4 * 0.05
    bad = target.pack(-10 * eye[None], np.full((1, 3), -15.0), 10 * eye[None], np.zeros((1, 3)))
    assert target.trace_metrics(np.vstack([good, bad]))["test_error"] > 0.25


def test_without_a_test_set():
    target = _target(with_test=False)
    theta = _points(target, 11)
    assert target.trace_metrics(theta) == {}
    with pytest.raises(TypeError):
        target.test_error(theta)
    with pytest.raises(TypeError):
        target.test_log_likelihood(theta)
    assert target.predict_proba(theta, target.features[:2]).shape == (3, 2, 3)


def test_softplus_equals_logaddexp():
    from sgmcmc.targets.drbm import _softplus

    o = np.concatenate([np.linspace(-800, 800, 4001), [-1e300, 1e300, -40.0, 40.0, 0.0, 1e-20]])
    with np.errstate(over="raise", divide="raise", invalid="raise"):
        np.testing.assert_allclose(_softplus(o), np.logaddexp(0.0, o), rtol=1e-15, atol=0)


def test_factory_uses_the_papers_sizes_and_the_loader(monkeypatch):
    """``drbm(dataset)`` (the registered target): the loader's split, 20/100/20 hidden units and minibatches
    of 1000/500/1000 unless configured (SPEC §4.10); an unknown data set is a clear error."""
    import sgmcmc.data.libsvm as libsvm
    from sgmcmc.targets import make_target
    from sgmcmc.targets.drbm import drbm

    rng = np.random.default_rng(0)

    def fake(name, data_dir=None, split_seed=0):
        classes = {"letter": 26, "connect4": 3, "acoustic": 3}[name]
        width = {"letter": 16, "connect4": 126, "acoustic": 50}[name]
        return libsvm.LabelledSplit(rng.normal(size=(1200, width)), rng.integers(0, classes, 1200), rng.normal(size=(30, width)),
                                    rng.integers(0, classes, 30), classes, name, tuple(range(classes)))

    monkeypatch.setattr(libsvm, "load_libsvm", fake)
    letter = make_target("drbm", dataset="letter")
    assert (letter.dim, letter.batch_size, letter.n_hidden, letter.name) == (4326, 500, 100, "drbm_letter")
    connect4 = drbm("connect4", n_hidden=5, batch_size=100)
    assert (connect4.dim, connect4.batch_size) == (parameter_count(126, 3, 5), 100)
    assert drbm("acoustic").dim == 1083 and drbm("acoustic").batch_size == 1000
    with pytest.raises(ValueError, match="connect4, letter, acoustic"):
        drbm("mnist")


def test_sample_test_errors_average_the_predictive_not_the_parameters():
    """Identical samples give the error at that θ three times; the predictive error of two samples is the argmax of
    their averaged p(y | x, θ_s), computed here by hand."""
    target = _target()
    theta = _points(target, 5, n=2)
    same = target.sample_test_errors(np.repeat(theta[:1], 3, axis=0))
    expected = target.test_error(theta[:1])[0]
    assert same == {"predictive_error": expected, "sample_error_median": expected, "sample_error_mean": expected}
    two = target.sample_test_errors(theta)
    averaged = target.predict_proba(theta, target.test_features).mean(axis=0)
    assert two["predictive_error"] == np.mean(np.argmax(averaged, axis=1) != target.test_labels)
    assert two["sample_error_median"] == np.median(target.test_error(theta))
