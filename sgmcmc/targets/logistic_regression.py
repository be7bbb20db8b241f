"""T8, Bayesian logistic regression on MNIST 7 vs 9 (Shang et al. 2015 §4.2; SPEC §2 T8, §3 E5, §4.9).

Weights w ∈ R^d (no intercept), features x_i ∈ R^d, labels y_i ∈ {−1, +1}, likelihood p(y | x, w) = σ(y wᵀx),
prior N(0, s²I) (s² = ``prior_variance``, 1 in SPEC T8). With the margins m_i = y_i wᵀx_i, up to a constant

    U(w)  = −Σ_i log σ(m_i) + wᵀw/(2s²) = Σ_i log(1 + e^{−m_i}) + wᵀw/(2s²),
    ∇U(w) = −Σ_i (1 − σ(m_i)) y_i x_i + w/s²,

per datum g(w; x_i, y_i) = ∇_w log σ(m_i) = (1 − σ(m_i)) y_i x_i = σ(−m_i) y_i x_i, and ∇log p(w) = −w/s². The
minibatch ∇Ũ (n = 500 drawn without replacement) and its noise covariance come from
:class:`sgmcmc.targets.data.DataTarget`; the compiled blocks get g_i and ∇log p through the engine's rows door
(:meth:`LogisticRegression.engine_functions`: :func:`signed_row_gradients` on the rows y_i x_i, and the exact U of a
Metropolis–Hastings test from :func:`signed_row_log_likelihoods` and the prior's −θᵀθ/(2s²)). −log σ(m) is
computed as ``np.logaddexp(0, −m)`` and 1 − σ(m) as ``scipy.special.expit(−m)``, both finite without warnings for any
finite margin (|m| ~ 1e3 included).

The posterior has no closed form (``has_exact_density`` is False); the metrics of SPEC §3 E5 are the test-set log
likelihood Σ_test log σ(y wᵀx) (a sum over the 2,037 test points) and the test accuracy, evaluated at the running
posterior mean of every chain (:meth:`LogisticRegression.trace_metrics`).

The data (:func:`logistic_mnist79`, SPEC §4.9): all MNIST training 7s and 9s (12,214) and test 7s and 9s (2,037),
in the original order, pixels/255, a Gaussian random projection 784 → 100 by scikit-learn
(``GaussianRandomProjection(n_components=100, random_state=projection_seed)`` fitted on the training images, applied
to train and test), labels 7 → +1, 9 → −1. The projected arrays are cached as an ``.npz`` in the cache folder, never
in the data folder (see :func:`logistic_mnist79`).
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import zipfile
from pathlib import Path
from typing import Optional

import numba
import numpy as np
from scipy.special import expit

from sgmcmc.targets.data import DataTarget, _check_count, check_features, positive_number
from sgmcmc.targets.gaussian_prior import prior_gradient_of, prior_log_density_of

# The digits of T8 and their labels (SPEC §4.9): 7 → +1, 9 → −1.
DIGITS = (7, 9)
LABEL_OF_DIGIT = {7: 1, 9: -1}

# Bumped when the preprocessing changes, so that old caches are never reused.
_CACHE_VERSION = 1


def _check_data(prefix: str, features, labels, dim: Optional[int] = None) -> tuple[np.ndarray, np.ndarray]:
    """(features (N, d) float64, labels (N,) float64 in {−1, +1}), or a ValueError naming ``prefix``."""
    features, labels = check_features(prefix, features, labels, dim)
    if not np.all((labels == 1) | (labels == -1)):
        raise ValueError(f"{prefix}labels must be -1 or +1")
    return features, labels.astype(float)


class LogisticRegression(DataTarget):
    """The posterior of Bayesian logistic regression without intercept (module docstring; SPEC T8).

    Parameters
    ----------
    features : (N, d) array
        The training inputs x_i (N >= 2).
    labels : (N,) array
        The training labels y_i ∈ {−1, +1}.
    test_features, test_labels : arrays, optional
        A held-out set for :meth:`test_log_likelihood`, :meth:`test_accuracy` and :meth:`trace_metrics`
        (both or neither).
    batch_size : int, optional
        n, the minibatch size, 1 <= n <= N (default: N, the full data).
    prior_variance : float
        s² of the prior N(0, s²I) (default 1, SPEC T8).
    initial_scale : float
        θ₀ ~ N(0, initial_scale² I) (default 0.01, SPEC §4.9).
    name : str
        The target's name (default "logistic_regression").
    """

    has_exact_density = False

    def __init__(self, features, labels, test_features=None, test_labels=None, batch_size: Optional[int] = None,
                 prior_variance: float = 1.0, initial_scale: float = 0.01, name: str = "logistic_regression"):
        features, labels = _check_data("", features, labels)
        super().__init__(features.shape[0], features.shape[0] if batch_size is None else batch_size)
        self.name = str(name)
        self.dim = features.shape[1]
        self.features, self.labels = features, labels
        # y_i x_i, the only form in which the data enter U, ∇U and g: the margins are m = θ (y x)ᵀ.
        self._signed = labels[:, None] * features
        if (test_features is None) != (test_labels is None):
            raise ValueError("test_features and test_labels must be given together")
        if test_features is None:
            self.test_features = self.test_labels = self._test_signed = None
        else:
            self.test_features, self.test_labels = _check_data("test_", test_features, test_labels, self.dim)
            self._test_signed = self.test_labels[:, None] * self.test_features
        self.prior_variance = positive_number("prior_variance", prior_variance)
        self.initial_scale = positive_number("initial_scale", initial_scale)

    @property
    def has_test_set(self) -> bool:
        return self._test_signed is not None

    # -- helpers ---------------------------------------------------------------------------------------
    def _chain_blocks(self, n_chains: int, n_rows: int):
        """Slices of the chain axis such that a (chains, n_rows) margin block stays below the chunk size."""
        per_block = max(1, self._chunk_elements // max(1, n_rows))
        for start in range(0, n_chains, per_block):
            yield slice(start, min(start + per_block, n_chains))

    @staticmethod
    def _theta(theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if theta.ndim != 2:
            raise ValueError(f"theta must have shape (n_chains, dim); got {theta.shape}")
        return theta

    # -- potential and gradients -----------------------------------------------------------------------
    def potential(self, theta):
        """U(θ) = Σ_i log(1 + e^{−y_i θᵀx_i}) + θᵀθ/(2s²), shape (c,) (``np.logaddexp``, stable)."""
        theta = self._theta(theta)
        out = 0.5 * np.sum(theta**2, axis=1) / self.prior_variance
        for block in self._chain_blocks(theta.shape[0], self.n_data):
            margins = theta[block] @ self._signed.T  # (c, N)
            out[block] += np.logaddexp(0.0, -margins).sum(axis=1)
        return out

    def gradient(self, theta):
        """Exact ∇U(θ) = −Σ_i σ(−m_i) y_i x_i + θ/s² by matrix products, shape (c, d)."""
        theta = self._theta(theta)
        out = theta / self.prior_variance
        for block in self._chain_blocks(theta.shape[0], self.n_data):
            margins = theta[block] @ self._signed.T  # (c, N)
            out[block] -= expit(-margins) @ self._signed
        return out

    def log_likelihood_gradients(self, theta, index):
        """g_i = σ(−y_i θᵀx_i) y_i x_i for θ (c, d) and indices (c, b); shape (c, b, d)."""
        theta = self._theta(theta)
        signed = self._signed[np.asarray(index)]  # (c, b, d)
        margins = np.einsum("cbd,cd->cb", signed, theta)
        return expit(-margins)[:, :, None] * signed

    def log_prior_gradient(self, theta):
        """∇log N(θ | 0, s²I) = −θ/s², shape (c, d)."""
        return -self._theta(theta) / self.prior_variance

    def engine_functions(self) -> dict:
        """The rows door of the engine (:func:`sgmcmc.engine.estimators.source_of`): :func:`signed_row_gradients` on
        the rows y_i x_i, the prior's −θ/s² (:func:`prior_gradient_of`), N, and the exact U's terms
        (:func:`signed_row_log_likelihoods`, the prior's −θᵀθ/(2s²), :func:`prior_log_density_of`: its constant dropped,
        as in :meth:`potential`)."""
        return {"row_gradients": signed_row_gradients, "row_gradient_sums": signed_row_gradient_sums,
                "minibatch_sums": False, "prior_gradient": prior_gradient_of(self.prior_variance),
                "row_log_likelihoods": signed_row_log_likelihoods,
                "prior_log_density": prior_log_density_of(self.prior_variance), "data": self._signed,
                "n_data": self.n_data}

    def initial_position(self, n_chains, rng):
        """θ₀ = initial_scale · ``rng.standard_normal((n_chains, d))`` (SPEC §4.9: N(0, 0.01² I))."""
        return self.initial_scale * rng.standard_normal((int(n_chains), self.dim))

    # -- test-set metrics (SPEC §3 E5) -------------------------------------------------------------------
    def _require_test_set(self):
        if not self.has_test_set:
            raise TypeError(f"target {self.name!r} has no test set")

    def test_log_likelihood(self, w) -> np.ndarray:
        """Σ_{test} log σ(y_i wᵀx_i) for every row of w (c, d): a sum over the test points, shape (c,)."""
        self._require_test_set()
        w = self._theta(w)
        out = np.empty(w.shape[0])
        for block in self._chain_blocks(w.shape[0], self._test_signed.shape[0]):
            out[block] = -np.logaddexp(0.0, -(w[block] @ self._test_signed.T)).sum(axis=1)
        return out

    def test_accuracy(self, w) -> np.ndarray:
        """The fraction of test points with ŷ = y, ŷ = +1 where wᵀx >= 0 (σ >= ½) else −1; shape (c,)."""
        self._require_test_set()
        w = self._theta(w)
        out = np.empty(w.shape[0])
        for block in self._chain_blocks(w.shape[0], self._test_signed.shape[0]):
            predicted = np.where(w[block] @ self.test_features.T >= 0.0, 1.0, -1.0)
            out[block] = np.mean(predicted == self.test_labels, axis=1)
        return out

    def trace_metrics(self, mean_theta) -> dict:
        """The E5 metrics at each chain's running posterior mean (c, d):
        {"test_log_likelihood": mean over chains, "test_log_likelihood_sd": sd over chains (ddof 1; 0 for one
        chain), "test_accuracy": mean over chains}, as floats; {} when there is no test set."""
        if not self.has_test_set:
            return {}
        log_likelihood = self.test_log_likelihood(mean_theta)
        sd = float(np.std(log_likelihood, ddof=1)) if log_likelihood.size > 1 else 0.0
        return {"test_log_likelihood": float(np.mean(log_likelihood)), "test_log_likelihood_sd": sd,
                "test_accuracy": float(np.mean(self.test_accuracy(mean_theta)))}


# -- the engine's functions (sgmcmc.engine.estimators: the rows door) --------------------------------------------
@numba.njit(cache=True)
def signed_row_gradients(theta, rows):
    """g_i = σ(−θᵀr_i) r_i (m, d) of one chain's θ (d,) on the rows r_i = y_i x_i (m, d), σ(−m) = 1/(1 + e^m) (scipy's
    ``expit(−m)``, to rounding, finite for any finite margin): one pass over each row, and the result the only array
    made (the rows are not written: the control variates hand the same rows over twice)."""
    out = np.empty(rows.shape)
    for i in range(rows.shape[0]):
        margin = 0.0
        for j in range(rows.shape[1]):
            margin += rows[i, j] * theta[j]
        if margin > 0.0:  # e^{−m}/(1 + e^{−m}): no overflow, also when the block runs as plain Python
            weight = math.exp(-margin)
            weight = weight / (1.0 + weight)
        else:
            weight = 1.0 / (1.0 + math.exp(margin))
        for j in range(rows.shape[1]):
            out[i, j] = weight * rows[i, j]
    return out


@numba.njit(cache=True)
def signed_row_gradient_sums(theta, rows, with_scatter):
    """(Σ_i g_i, Σ_i (g_i − ḡ)²) (d,) each, g_i = σ(−θᵀr_i) r_i, of one chain's θ on the rows r_i = y_i x_i (m, d), by
    two BLAS products (m = θ·R, Σ_i g_i = σ(−m)ᵀR) and no (m, d) array; the second sum, where asked for, is
    Σ_i σ_i² r_i² − m ḡ², one more product. The engine takes it for every row (HMC's exact ∇U: measured on MNIST 7
    vs 9, N = 12,000, d = 100, 0.3 ms a gradient against 1.4 ms by :func:`signed_row_gradients`); the minibatches keep
    the rows door (``"minibatch_sums": False``), whose sums the committed runs were made with."""
    margins = np.dot(rows, theta)
    weights = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):  # σ(−m) as signed_row_gradients computes it
        if margins[i] > 0.0:
            weight = math.exp(-margins[i])
            weights[i] = weight / (1.0 + weight)
        else:
            weights[i] = 1.0 / (1.0 + math.exp(margins[i]))
    total = np.dot(weights, rows)
    scatter = np.zeros(rows.shape[1])
    if with_scatter and rows.shape[0] > 0:
        mean = total / rows.shape[0]
        scatter = np.dot(weights * weights, rows * rows) - rows.shape[0] * mean * mean
    return total, scatter


@numba.njit(cache=True)
def signed_row_log_likelihoods(theta, rows):
    """log σ(m_i) = −log(1 + e^{−m_i}) (m,) of one chain's θ (d,) on the rows r_i = y_i x_i (m, d), m_i = θᵀr_i, as
    −(max(−m, 0) + log1p(e^{−|m|})) (``−np.logaddexp(0, −m)`` of :meth:`LogisticRegression.potential`, to rounding;
    finite for any finite margin)."""
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        margin = 0.0
        for j in range(rows.shape[1]):
            margin += rows[i, j] * theta[j]
        out[i] = -(max(-margin, 0.0) + math.log1p(math.exp(-abs(margin))))
    return out


# -- MNIST 7 vs 9 (SPEC §4.9) ------------------------------------------------------------------------------
def _fingerprint(source, projection_seed: int, n_components: int) -> str:
    """The cache key: preprocessing version, projection settings, scikit-learn version and a SHA-256 of the
    source images and labels (with their shapes), so a different seed, size or data set never reuses a cache."""
    import sklearn

    digest = hashlib.sha256()
    for name in ("train_images", "train_labels", "test_images", "test_labels"):
        array = np.ascontiguousarray(getattr(source, name))
        digest.update(f"{name}:{array.shape}:{array.dtype.str};".encode())
        digest.update(array.tobytes())
    return (f"v{_CACHE_VERSION};proj{projection_seed};d{n_components};sklearn{sklearn.__version__};"
            f"sha256:{digest.hexdigest()}")


def _project(source, projection_seed: int, n_components: int) -> dict:
    """pixels/255, Gaussian random projection fitted on the training images, labels 7 → +1, 9 → −1."""
    from sklearn.random_projection import GaussianRandomProjection

    train = np.asarray(source.train_images, dtype=float).reshape(len(source.train_images), -1) / 255.0
    test = np.asarray(source.test_images, dtype=float).reshape(len(source.test_images), -1) / 255.0
    projection = GaussianRandomProjection(n_components=n_components, random_state=projection_seed).fit(train)
    arrays = {"features": np.asarray(projection.transform(train), dtype=np.float64),
              "test_features": np.asarray(projection.transform(test), dtype=np.float64)}
    for key, labels in (("labels", source.train_labels), ("test_labels", source.test_labels)):
        labels = np.asarray(labels).astype(int)
        unknown = sorted(set(np.unique(labels).tolist()) - set(LABEL_OF_DIGIT))
        if unknown:
            raise ValueError(f"MNIST 7 vs 9: unexpected digits {unknown} in the {key.replace('_', ' ')}")
        arrays[key] = np.where(labels == 7, 1, -1).astype(np.int8)
    return arrays


def _read_cache(path: Path, key: str) -> Optional[dict]:
    """The cached arrays if ``path`` holds a cache with this key, else None (missing or damaged: a miss)."""
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["key"]) != key:
                return None
            return {name: stored[name] for name in ("features", "labels", "test_features", "test_labels")}
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        return None


def _write_cache(folder: Path, filename: str, key: str, arrays: dict) -> Optional[Path]:
    """Write the cache atomically (temp file in ``folder``, then ``os.replace``); None if that fails."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(dir=folder, prefix=f".{filename}.", suffix=".tmp")
    except OSError:
        return None
    try:
        with os.fdopen(handle, "wb") as stream:
            np.savez(stream, key=np.array(key), **arrays)
        os.replace(temp, folder / filename)
    except OSError:
        Path(temp).unlink(missing_ok=True)
        return None
    return folder / filename


def logistic_mnist79(data_dir=None, projection_seed: int = 0, n_components: int = 100, batch_size: int = 500,
                     prior_variance: float = 1.0, initial_scale: float = 0.01, cache_dir=None) -> LogisticRegression:
    """T8: logistic regression on MNIST 7 vs 9 (SPEC §2 T8, §4.9), named "logistic_mnist79".

    The images come from ``sgmcmc.data.mnist.load_mnist(resolve_data_dir(data_dir), digits=(7, 9))``; a
    :class:`sgmcmc.data.DataError` of the loader propagates unchanged. The projected float64 arrays are cached as
    ``<cache dir>/logistic_mnist79-proj<seed>-d<n_components>.npz`` (``resolve_cache_dir(cache_dir)``; nothing is
    written into the data folder, which may be shared or read-only); a cache is used only if its stored key
    (:func:`_fingerprint`: seed, n_components, scikit-learn version, hash of the source) matches, and one that cannot
    be written is projected again next time.
    """
    from sgmcmc.data import resolve_cache_dir, resolve_data_dir
    from sgmcmc.data.mnist import load_mnist

    projection_seed = _check_count("projection_seed", projection_seed, 0)
    n_components = _check_count("n_components", n_components, 1)
    source = load_mnist(Path(resolve_data_dir(data_dir)), digits=DIGITS)
    key = _fingerprint(source, projection_seed, n_components)
    cache = resolve_cache_dir(cache_dir)
    filename = f"logistic_mnist79-proj{projection_seed}-d{n_components}.npz"
    arrays = _read_cache(cache / filename, key)
    if arrays is None:
        arrays = _project(source, projection_seed, n_components)
        _write_cache(cache, filename, key, arrays)
    return LogisticRegression(arrays["features"], arrays["labels"], arrays["test_features"], arrays["test_labels"],
                              batch_size=batch_size, prior_variance=prior_variance, initial_scale=initial_scale,
                              name="logistic_mnist79")


def logistic_synthetic(n_data: int = 10_000, dim: int = 3, batch_size: int = 100, data_seed: int = 0,
                       weights=None, n_test: int = 1000, prior_variance: float = 1.0,
                       initial_scale: float = 0.01) -> LogisticRegression:
    """Bayesian logistic regression on data drawn from a known logistic model (the SGLD-CV scaling experiment,
    Baker et al. 2019 §5): features x_i ~ N(0, I_d), labels y_i = +1 with probability σ(w*ᵀx_i), else −1, with
    w* = ``weights`` (default (1, −1/2, 1/4, …, (−1/2)^{d−1})); ``n_test`` more points drawn alike are the test set.
    One generator seeded by ``data_seed`` draws the training points, then the test points."""
    n_data = _check_count("n_data", n_data, 2)
    dim = _check_count("dim", dim, 1)
    n_test = _check_count("n_test", n_test, 1)
    truth = (-0.5) ** np.arange(dim) if weights is None else np.asarray(weights, dtype=float)
    if truth.shape != (dim,):
        raise ValueError(f"weights must have {dim} entries; got {truth.size}")
    rng = np.random.default_rng(_check_count("data_seed", data_seed, 0))

    def draw(count):
        features = rng.standard_normal((count, dim))
        return features, np.where(rng.random(count) < expit(features @ truth), 1.0, -1.0)

    features, labels = draw(n_data)
    test_features, test_labels = draw(n_test)
    return LogisticRegression(features, labels, test_features, test_labels, batch_size=batch_size,
                              prior_variance=prior_variance, initial_scale=initial_scale, name="logistic_synthetic")

