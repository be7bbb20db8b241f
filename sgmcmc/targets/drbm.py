"""T9, the discriminative restricted Boltzmann machine (Larochelle & Bengio 2008; Shang et al. 2015 §4.3; SPEC §2 T9,
§3 E6, §4.10).

H binary hidden units h, D inputs x, C classes y (one-hot e_y). The energy E(y, x, h) = −hᵀWx − bᵀx − cᵀh − d_y − hᵀU e_y
gives, with the hidden units summed out (b cancels and is not a parameter),

    o_{yj}(x) = c_j + U_{jy} + Σ_k W_{jk} x_k,
    log p(y | x) = d_y + Σ_j softplus(o_{yj}) − logsumexp_{y*}(d_{y*} + Σ_j softplus(o_{y*j})).

The parameters θ = (W (H×D), c (H), U (H×C), d (C)) are flattened in that order (row-major) into a vector of length
H·D + H + H·C + C (:func:`parameter_count`, :meth:`DiscriminativeRBM.unpack`, :meth:`DiscriminativeRBM.pack`). With
p_y = p(y | x), s_{yj} = σ(o_{yj}) and s̄_j = Σ_{y*} p_{y*} s_{y*j}, the exact per-example gradients of log p(y | x) are

    ∂/∂d_{y'} = 1[y = y'] − p_{y'},         ∂/∂c_j = s_{yj} − s̄_j,
    ∂/∂U_{jy'} = s_{y'j} (1[y = y'] − p_{y'}),   ∂/∂W_{jk} = x_k (s_{yj} − s̄_j).

The prior is N(0, s² I) on all parameters (s² = ``prior_variance``, 1 by SPEC §4.10), so
U(θ) = −Σ_i log p(y_i | x_i) + θᵀθ/(2s²); θ₀ ~ N(0, 0.01² I). Everything is vectorised over the chains and the
examples: the pre-activations o have shape (chains, examples, C, H). The full-data sums (:meth:`potential`,
:meth:`gradient`, the test metrics) run over blocks of chains and examples so that at most ~``_chunk_elements``
(2²² floats) of any (chains, examples, ·) intermediate exist at once; ∇U is accumulated in closed form (matrix
products over the examples), never as the (chains, N, dim) array of per-example gradients. softplus is
max(o, 0) + log1p(e^{−|o|}) (the value of ``np.logaddexp(0, o)``, three times faster), σ is ``scipy.special.expit``,
the class normaliser is ``scipy.special.log_softmax``: finite without warnings for any finite θ.

The metric of SPEC §3 E6 is the test error of argmax_y p(y | x, θ̄) at each chain's posterior mean θ̄
(:meth:`DiscriminativeRBM.trace_metrics`).

Minibatches (``kernels``, the default): the per-example gradients and their sum (:meth:`stochastic_gradient`)
come from fused numba kernels (:mod:`sgmcmc.targets.drbm_kernels`), one example at a time, without the
(chains, examples, C, H) intermediates; the numpy methods here are the reference they are tested against.
"""

from __future__ import annotations

from functools import cached_property
from typing import Optional

import numpy as np
from scipy.special import expit, log_softmax

from sgmcmc.targets import drbm_kernels
from sgmcmc.targets.data import DataTarget, _check_count, check_class_data, positive_number
from sgmcmc.targets.flat_parameters import FlatParameters, FlatParameterTarget
from sgmcmc.targets.gaussian_prior import prior_gradient_of, prior_log_density_of


def parameter_count(n_features: int, n_classes: int, n_hidden: int) -> int:
    """H·D + H + H·C + C = H(D + C + 1) + C: connect-4 (126, 3, 20) → 2603, letter (16, 26, 100) → 4326,
    acoustic (50, 3, 20) → 1083 (SPEC T9)."""
    n_features = _check_count("n_features", n_features, 1)
    n_classes = _check_count("n_classes", n_classes, 2)
    n_hidden = _check_count("n_hidden", n_hidden, 1)
    return n_hidden * (n_features + n_classes + 1) + n_classes


def _softplus(o: np.ndarray) -> np.ndarray:
    """log(1 + e^o) = max(o, 0) + log1p(e^{−|o|}) elementwise: the value of ``np.logaddexp(0, o)`` (to rounding), finite
    for any finite o, computed in place in one temporary (about three times faster than ``np.logaddexp``)."""
    out = np.abs(o)
    np.negative(out, out=out)
    np.exp(out, out=out)
    np.log1p(out, out=out)
    out += np.maximum(o, 0.0)
    return out


class DiscriminativeRBM(FlatParameterTarget, DataTarget):
    """The posterior of a discriminative RBM classifier (module docstring; SPEC T9).

    Parameters
    ----------
    features : (N, D) array
        The training inputs x_i (N >= 2).
    labels : (N,) array of int
        The training labels y_i ∈ {0, …, C−1}.
    n_classes : int
        C >= 2.
    n_hidden : int
        H >= 1, the number of hidden units.
    test_features, test_labels : arrays, optional
        A held-out set for :meth:`test_error`, :meth:`test_log_likelihood` and :meth:`trace_metrics` (both or
        neither).
    batch_size : int, optional
        n, the minibatch size, 1 <= n <= N (default: N, the full data).
    prior_variance : float
        s² of the prior N(0, s²I) on all parameters (default 1, SPEC §4.10).
    initial_scale : float
        θ₀ ~ N(0, initial_scale² I) (default 0.01, SPEC §4.10).
    name : str
        The target's name (default "drbm").
    kernels : bool
        Minibatch gradients from the compiled kernels (default) or from the numpy reference (False).
    """

    has_exact_density = False

    def __init__(self, features, labels, n_classes: int, n_hidden: int, test_features=None, test_labels=None,
                 batch_size: Optional[int] = None, prior_variance: float = 1.0, initial_scale: float = 0.01,
                 name: str = "drbm", kernels: bool = True):
        self.n_classes = _check_count("n_classes", n_classes, 2)
        self.n_hidden = _check_count("n_hidden", n_hidden, 1)
        features, labels = check_class_data("", features, labels, self.n_classes)
        super().__init__(features.shape[0], features.shape[0] if batch_size is None else batch_size)
        self.name = str(name)
        self.n_features = features.shape[1]
        self.dim = parameter_count(self.n_features, self.n_classes, self.n_hidden)
        self.features, self.labels = np.ascontiguousarray(features), np.ascontiguousarray(labels)
        self.kernels = bool(kernels)
        if (test_features is None) != (test_labels is None):
            raise ValueError("test_features and test_labels must be given together")
        if test_features is None:
            self.test_features = self.test_labels = None
        else:
            self.test_features, self.test_labels = check_class_data("test_", test_features, test_labels, self.n_classes,
                                                               self.n_features)
            if self.test_features.shape[0] < 1:
                raise ValueError("the test set must have at least one point")
        self.prior_variance = positive_number("prior_variance", prior_variance)
        self.initial_scale = positive_number("initial_scale", initial_scale)
        H, D, C = self.n_hidden, self.n_features, self.n_classes
        # Where W, c, U, d start and end in the flat parameter vector.
        self._layout = FlatParameters(("weights", "hidden_bias", "label_weights", "class_bias"), [(H, D), (H,), (H, C), (C,)])
        self._offsets = self._layout.offsets

    @property
    def has_test_set(self) -> bool:
        return self.test_features is not None

    # -- parameters (unpack, pack, _blocks: FlatParameterTarget) ----------------------------------------------
    @property
    def _width(self) -> int:
        """Values per (chain, example) of the largest intermediate: o is C·H, a gathered input row D."""
        return max(self.n_classes * self.n_hidden, self.n_features)

    def _forward(self, params, x):
        """(o (c, n, C, H), log p(· | x) (c, n, C)) for parameters unpacked from c chains and inputs x, either
        shared (n, D) or per chain (c, n, D)."""
        weights, hidden_bias, label_weights, class_bias = params
        pre = np.matmul(x, np.swapaxes(weights, 1, 2)) + hidden_bias[:, None, :]  # (c, n, H)
        o = pre[:, :, None, :] + np.swapaxes(label_weights, 1, 2)[:, None, :, :]  # (c, n, C, H)
        logits = _softplus(o).sum(axis=3) + class_bias[:, None, :]  # (c, n, C)
        return o, log_softmax(logits, axis=2)

    @staticmethod
    def _slice(params, chains):
        return tuple(p[chains] for p in params)

    @staticmethod
    def _pick(values, labels):
        """values[..., y] along the class axis (axis 2) for labels (n,) or (c, n): shape values.shape[:2] (+ rest)."""
        labels = np.broadcast_to(labels, values.shape[:2])
        index = labels.reshape(labels.shape + (1,) * (values.ndim - 2))
        return np.take_along_axis(values, index, axis=2)[:, :, 0]

    def _class_terms(self, o, log_p, labels):
        """(1[y = ·] − p (c, n, C), σ(o) (c, n, C, H), σ(o_y) − Σ p σ(o) (c, n, H)) of the per-example gradients."""
        p = np.exp(log_p)
        labels = np.broadcast_to(labels, p.shape[:2])
        residual = -p
        # 1 − p_y as −expm1(log p_y): accurate when p_y is close to 1.
        np.put_along_axis(residual, labels[:, :, None], -np.expm1(self._pick(log_p, labels))[:, :, None], axis=2)
        sig = expit(o)
        hidden = self._pick(sig, labels) - np.einsum("cnk,cnkh->cnh", p, sig)
        return residual, sig, hidden

    # -- potential and gradients -----------------------------------------------------------------------
    def potential(self, theta):
        """U(θ) = −Σ_i log p(y_i | x_i) + θᵀθ/(2s²), shape (c,) (summed over blocks of chains and examples)."""
        theta = self._theta(theta)
        params = self.unpack(theta)
        out = 0.5 * np.sum(theta**2, axis=1) / self.prior_variance
        for chains, rows in self._blocks(theta.shape[0], self.n_data, self._width):
            _, log_p = self._forward(self._slice(params, chains), self.features[rows])
            out[chains] -= self._pick(log_p, self.labels[rows]).sum(axis=1)
        return out

    def gradient(self, theta):
        """Exact full-data ∇U(θ) = −Σ_i g_i + θ/s², shape (c, dim): the sums over the examples are matrix products
        per block (Σ_i x_i ⊗ (σ(o_{y_i}) − s̄_i) for W, …), never the (c, N, dim) per-example array."""
        theta = self._theta(theta)
        params = self.unpack(theta)
        total = np.zeros(theta.shape)
        g_w, g_c, g_u, g_d = self.unpack(total)  # views: writing them fills ``total``
        for chains, rows in self._blocks(theta.shape[0], self.n_data, self._width):
            x = self.features[rows]
            o, log_p = self._forward(self._slice(params, chains), x)
            residual, sig, hidden = self._class_terms(o, log_p, self.labels[rows])
            g_w[chains] += np.matmul(np.swapaxes(hidden, 1, 2), x)  # (c, H, D)
            g_c[chains] += hidden.sum(axis=1)
            g_u[chains] += np.einsum("cnkh,cnk->chk", sig, residual)
            g_d[chains] += residual.sum(axis=1)
        return -total + theta / self.prior_variance

    def _index(self, theta, index) -> np.ndarray:
        index = np.asarray(index)
        if index.ndim != 2 or index.shape[0] != theta.shape[0]:
            raise ValueError(f"index must have shape ({theta.shape[0]}, batch); got {index.shape}")
        return index

    def log_likelihood_gradients(self, theta, index):
        """g_i = ∇_θ log p(y_i | x_i) for θ (c, dim) and indices (c, b); shape (c, b, dim), packed like θ (the compiled
        kernel unless ``kernels`` is off)."""
        theta = self._theta(theta)
        index = self._index(theta, index)
        if not self.kernels:
            return self.log_likelihood_gradients_numpy(theta, index)
        out = np.empty(index.shape + (self.dim,))
        return drbm_kernels.per_example_gradients(np.ascontiguousarray(theta), self.features, self.labels,
                                     np.ascontiguousarray(index, dtype=np.int64), self.n_hidden, self.n_classes, out)

    def _kernel_sums(self, theta, rng, with_moments: bool):
        """(∇Ũ (c, dim), Σ_i (g_i − ḡ)² (c, dim)) of one minibatch draw from the compiled sums."""
        theta = self._theta(theta)
        index = self.minibatch(rng, theta.shape[0])
        total, moments = drbm_kernels.gradient_sums(np.ascontiguousarray(theta), self.features, self.labels,
                                       np.ascontiguousarray(index, dtype=np.int64), self.n_hidden, self.n_classes,
                                       with_moments)
        return -(self.n_data / self.batch_size) * total - self.log_prior_gradient(theta), moments

    def stochastic_gradient(self, theta, rng):
        """∇Ũ(θ) of one minibatch draw (the same draw as :meth:`minibatch_gradient`); with ``kernels`` the
        per-example gradients are summed as they are computed, never stored."""
        if not self.kernels:
            return super().stochastic_gradient(theta, rng)
        return self._kernel_sums(theta, rng, False)[0]

    def log_likelihood_gradients_numpy(self, theta, index):
        """The numpy reference of :meth:`log_likelihood_gradients` (blocks of chains and examples, module docstring)."""
        theta = self._theta(theta)
        index = self._index(theta, index)
        params = self.unpack(theta)
        n, b = index.shape
        H, D, C = self.n_hidden, self.n_features, self.n_classes
        out = np.empty((n, b, self.dim))
        o_ = self._offsets
        out_w = out[:, :, o_[0]:o_[1]].reshape(n, b, H, D)
        out_u = out[:, :, o_[2]:o_[3]].reshape(n, b, H, C)
        for chains, rows in self._blocks(n, b, self._width):
            batch = index[chains, rows]
            x = self.features[batch]  # (c, r, D)
            o, log_p = self._forward(self._slice(params, chains), x)
            residual, sig, hidden = self._class_terms(o, log_p, self.labels[batch])
            np.multiply(hidden[:, :, :, None], x[:, :, None, :], out=out_w[chains, rows])
            out[chains, rows, o_[1]:o_[2]] = hidden
            np.multiply(np.swapaxes(sig, 2, 3), residual[:, :, None, :], out=out_u[chains, rows])
            out[chains, rows, o_[3]:o_[4]] = residual
        return out

    def log_prior_gradient(self, theta):
        """∇log N(θ | 0, s²I) = −θ/s², shape (c, dim)."""
        return -self._theta(theta) / self.prior_variance

    def engine_functions(self) -> Optional[dict]:
        """The engine's rows and sums doors (:func:`sgmcmc.engine.estimators.source_of`): the compiled
        :func:`~sgmcmc.targets.drbm_kernels.row_gradients` and :func:`~sgmcmc.targets.drbm_kernels.row_gradient_sums`
        on the rows x_i | y_i | C (N, D + 2), the prior's −θ/s², N, and U's terms (the compiled
        :func:`~sgmcmc.targets.drbm_kernels.row_log_likelihoods`, the prior's −θᵀθ/(2s²) with its constant dropped, as
        in :meth:`potential`); None with ``kernels`` off (the numpy reference)."""
        if not self.kernels:
            return None
        return {"row_gradients": drbm_kernels.row_gradients, "row_gradient_sums": drbm_kernels.row_gradient_sums,
                "prior_gradient": prior_gradient_of(self.prior_variance),
                "row_log_likelihoods": drbm_kernels.row_log_likelihoods,
                "prior_log_density": prior_log_density_of(self.prior_variance), "data": self._rows,
                "n_data": self.n_data}

    @cached_property
    def _rows(self) -> np.ndarray:
        """The engine's rows x_i | y_i | C (N, D + 2), made once."""
        return np.column_stack([self.features, self.labels, np.full(self.n_data, self.n_classes)]).astype(float)

    def initial_position(self, n_chains, rng):
        """θ₀ = initial_scale · ``rng.standard_normal((n_chains, dim))`` (SPEC §4.10: N(0, 0.01² I))."""
        return self.initial_scale * rng.standard_normal((int(n_chains), self.dim))

    # -- predictions and test-set metrics (SPEC §3 E6) ----------------------------------------------------
    def log_predict_proba(self, theta, x) -> np.ndarray:
        """log p(y | x, θ) for θ (c, dim) and inputs x (m, D): shape (c, m, C)."""
        theta = self._theta(theta)
        x = np.asarray(x, dtype=float)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"x must have shape (m, {self.n_features}); got {x.shape}")
        params = self.unpack(theta)
        out = np.empty((theta.shape[0], x.shape[0], self.n_classes))
        for chains, rows in self._blocks(theta.shape[0], x.shape[0], self._width):
            out[chains, rows] = self._forward(self._slice(params, chains), x[rows])[1]
        return out

    def predict_proba(self, theta, x) -> np.ndarray:
        """p(y | x, θ) for θ (c, dim) and inputs x (m, D): shape (c, m, C), rows summing to 1."""
        return np.exp(self.log_predict_proba(theta, x))

    def _require_test_set(self):
        if not self.has_test_set:
            raise TypeError(f"target {self.name!r} has no test set")

    def test_error(self, theta) -> np.ndarray:
        """The fraction of test points with argmax_y p(y | x, θ) ≠ y (ties: the smallest class), shape (c,)."""
        self._require_test_set()
        predicted = np.argmax(self.log_predict_proba(theta, self.test_features), axis=2)
        return np.mean(predicted != self.test_labels[None, :], axis=1)

    def test_log_likelihood(self, theta) -> np.ndarray:
        """Σ_{test} log p(y_i | x_i, θ): a sum over the test points, shape (c,)."""
        self._require_test_set()
        log_p = self.log_predict_proba(theta, self.test_features)
        return self._pick(log_p, self.test_labels).sum(axis=1)

    def sample_test_errors(self, samples) -> dict:
        """Test errors from posterior samples (m, dim) rather than their mean: ``predictive_error`` of the posterior
        predictive argmax_y (1/m) Σ_s p(y | x, θ_s), and the median and mean ``sample_error`` of the samples one by one.
        Unlike the error at θ̄ (SPEC §3 E6) they do not suffer when the chain moves between the posterior's
        equivalent modes (e.g. permuted hidden units), whose average θ̄ predicts worse than any of them."""
        self._require_test_set()
        samples = self._theta(samples)
        total = np.zeros((self.test_features.shape[0], self.n_classes))
        errors = []
        for start in range(0, samples.shape[0], 8):
            probabilities = self.predict_proba(samples[start:start + 8], self.test_features)
            total += probabilities.sum(axis=0)
            errors.extend(np.mean(np.argmax(probabilities, axis=2) != self.test_labels[None, :], axis=1))
        return {"predictive_error": float(np.mean(np.argmax(total, axis=1) != self.test_labels)),
                "sample_error_median": float(np.median(errors)), "sample_error_mean": float(np.mean(errors))}

    def trace_metrics(self, mean_theta) -> dict:
        """The E6 metrics at each chain's posterior mean (c, dim): {"test_error": mean over chains,
        "test_error_sd": sd over chains (ddof 1; 0 for one chain), "test_log_likelihood": mean over chains}, as
        floats; {} when there is no test set."""
        if not self.has_test_set:
            return {}
        theta = self._theta(mean_theta)
        log_p = self.log_predict_proba(theta, self.test_features)
        error = np.mean(np.argmax(log_p, axis=2) != self.test_labels[None, :], axis=1)
        log_likelihood = self._pick(log_p, self.test_labels).sum(axis=1)
        sd = float(np.std(error, ddof=1)) if error.size > 1 else 0.0
        return {"test_error": float(np.mean(error)), "test_error_sd": sd,
                "test_log_likelihood": float(np.mean(log_likelihood))}


# SPEC T9, §4.10: hidden units and minibatch size per data set.
DATASET_DEFAULTS = {"connect4": (20, 1000), "letter": (100, 500), "acoustic": (20, 1000)}


def drbm(dataset: str = "letter", data_dir=None, n_hidden=None, batch_size=None, split_seed: int = 0,
         prior_variance: float = 1.0, initial_scale: float = 0.01, kernels: bool = True) -> DiscriminativeRBM:
    """The DRBM of SPEC T9 on a LIBSVM data set (``connect4``, ``letter`` or ``acoustic``), loaded by
    :func:`sgmcmc.data.libsvm.load_libsvm` (connect-4 split 80/20 by ``split_seed``); ``n_hidden`` and
    ``batch_size`` default to the paper's 20/100/20 and 1000/500/1000."""
    if dataset not in DATASET_DEFAULTS:
        raise ValueError(f"dataset must be one of {', '.join(DATASET_DEFAULTS)}; got {dataset!r}")
    from sgmcmc.data.libsvm import load_libsvm

    split = load_libsvm(dataset, data_dir, split_seed=split_seed)
    hidden, batch = DATASET_DEFAULTS[dataset]
    return DiscriminativeRBM(split.train_x, split.train_y, split.n_classes, n_hidden or hidden,
                             test_features=split.test_x, test_labels=split.test_y, batch_size=batch_size or batch,
                             prior_variance=prior_variance, initial_scale=initial_scale, name=f"drbm_{dataset}",
                             kernels=kernels)
