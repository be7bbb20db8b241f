"""T11, the Bayesian neural network on MNIST of the SGHMC paper (Chen, Fox & Guestrin 2014 §4.2; SPEC §2 T11; the
authors' code tqchen/ML-SGHMC ``bayesnn/``).

A D–H–K network, D inputs x (pixels/256), H sigmoid hidden units, K softmax classes (784–100–10 on MNIST):

    a = x W1 + b1,   s = σ(a),   z = s W2 + b2,   log p(y | x, θ) = z_y − logsumexp_k z_k.

The parameters θ = (W1 (D×H), b1 (H), W2 (H×K), b2 (K)) are flattened in that order (row-major) into a vector of length
d = D·H + H + H·K + K (79,510 for 784–100–10; :func:`parameter_count`, :meth:`BayesianNeuralNetwork.unpack`,
:meth:`BayesianNeuralNetwork.pack`). With p = softmax(z) and the residual r = e_y − p, the per-example gradients are

    ∂/∂b2 = r,   ∂/∂W2 = s ⊗ r,   δ = (W2 r) ⊙ s ⊙ (1 − s),   ∂/∂b1 = δ,   ∂/∂W1 = x ⊗ δ.

The prior (the code's ``gibbs-sep``): each of the four arrays g ∈ {W1, b1, W2, b2} is its own group with
θ_g ~ N(0, λ_g⁻¹ I) and λ_g ~ Gamma(a, b) (shape, rate; Gamma(1, 1) in the paper), λ_g = 1 before the first Gibbs step
(the code's weight decay 2·10⁻⁵ times N = 50,000). Given λ the potential is

    U(θ) = −Σ_{i=1}^N log p(y_i | x_i, θ) + ½ Σ_g λ_g ‖θ_g‖²,

and between the SG-MCMC steps the precisions are redrawn from λ_g | θ ~ Gamma(a + n_g/2, b + ‖θ_g‖²/2) once per
``gibbs_every`` steps (one epoch, N/n steps, by default; :class:`sgmcmc.hyperparameters.GammaPrecisions`).

The metrics are those of the paper (:meth:`BayesianNeuralNetwork.predict`, :meth:`~BayesianNeuralNetwork.
predictive_metrics`): the test error of argmax_y of the predictive probabilities averaged over the post-burn-in samples
(one per ``predict_every`` steps, an epoch by default), and the mean over the test examples of their log probability of
the true class (the code's ``nlik`` is its negative).

Everything is vectorised with the chain dimension first and done by BLAS matrix products: the full-data sums
(:meth:`~BayesianNeuralNetwork.potential`, :meth:`~BayesianNeuralNetwork.gradient`, the predictions) run over blocks of
chains and examples holding at most ~``_chunk_elements`` (2²²) values of any (chains, examples, ·) intermediate, and the
minibatch gradient (:meth:`~BayesianNeuralNetwork.stochastic_gradient`) is one forward and backward pass over the
gathered minibatch, never the (chains, n, d) per-example array (which :meth:`~BayesianNeuralNetwork.
log_likelihood_gradients` gives as the readable reference, for small sizes and tests). The d×d noise covariance is not
formed (d² floats is 50 GB per chain): :meth:`noise_covariance` is unknown (None), as in the authors' code, which takes
B̂ = 0; the diagonal running estimate takes its diagonal from the engine's sums door (:meth:`engine_functions`).
"""

from __future__ import annotations

from functools import cached_property
from typing import Optional

import numpy as np
from scipy.special import expit, log_softmax

from sgmcmc.hyperparameters import GammaPrecisions
from sgmcmc.targets import bnn_kernels
from sgmcmc.targets.base import Target
from sgmcmc.targets.data import DataTarget, _check_count, check_class_data, positive_number
from sgmcmc.targets.flat_parameters import FlatParameters, FlatParameterTarget
from sgmcmc.targets.gaussian_prior import grouped_prior_gradient, grouped_prior_log_density

# λ of every group before the first Gibbs step: the authors' weight decay wd = 2e-5 times N_train = 50,000.
INITIAL_PRECISION = 1.0
PRECISION_NAMES = ("precision_w1", "precision_b1", "precision_w2", "precision_b2")
# How the engine's blocks take the minibatches: drawn at random each step, or the training set swept in its (shuffled)
# order, as the authors' code does (DataTarget.sweep_batches)
MINIBATCH_ORDERS = ("random", "sweep")
# The MNIST shape of SPEC T11.
N_PIXELS, N_DIGITS = 784, 10


def parameter_count(n_features: int, n_hidden: int, n_classes: int) -> int:
    """D·H + H + H·K + K: 784–100–10 → 79,510 (SPEC T11)."""
    n_features = _check_count("n_features", n_features, 1)
    n_hidden = _check_count("n_hidden", n_hidden, 1)
    n_classes = _check_count("n_classes", n_classes, 2)
    return n_features * n_hidden + n_hidden + n_hidden * n_classes + n_classes


def _check_every(name: str, value, default: int) -> int:
    """Steps between two Gibbs updates or predictions: ``default`` (one epoch) for None, 0 for never."""
    return default if value is None else _check_count(name, value, 0)


class BayesianNeuralNetwork(FlatParameterTarget, DataTarget):
    """The posterior of a one-hidden-layer sigmoid network with a softmax output and Gamma precisions per parameter
    array (module docstring; SPEC T11).

    Parameters
    ----------
    features : (N, D) array
        The training inputs x_i (N >= 2).
    labels : (N,) array of int
        The training labels y_i ∈ {0, …, K−1}.
    test_features, test_labels : arrays
        The test set of :meth:`predict` (at least one example).
    n_hidden : int
        H >= 1, the hidden units (100 in the paper).
    batch_size : int
        n, the minibatch size, 1 <= n <= N (500 in the paper).
    n_classes : int
        K >= 2 (10 digits).
    initial_scale : float
        The weights start at N(0, initial_scale² I) (0.01), the biases at 0.
    hyper_shape, hyper_rate : float
        a and b of the hyperprior λ_g ~ Gamma(a, b) of every group (1 and 1).
    gibbs_every : int, optional
        Steps between two Gibbs updates of the precisions; None: one epoch (N // n steps); 0: never (λ stays 1).
    predict_every : int, optional
        Steps between two predictions of the test set; None: one epoch (N // n steps); 0: never.
    validation_features, validation_labels : arrays, optional
        The held-out validation split, kept on the target (``validation_features``/``validation_labels``) and used
        by nothing here.
    name : str
        The target's name (default "bnn_mnist").
    """

    has_exact_density = False
    # The d×d covariance of ∇Ũ is not formed (d = 79,510: 50 GB per chain): Target's "unknown" (None), not DataTarget's
    # exact one, so that the samplers run with B̂ = 0 like the authors' code (and know that the target does not
    # know it).
    noise_covariance = Target.noise_covariance

    def __init__(self, features, labels, test_features, test_labels, n_hidden: int = 100, batch_size: int = 500,
                 n_classes: int = N_DIGITS, initial_scale: float = 0.01, hyper_shape: float = 1.0,
                 hyper_rate: float = 1.0, gibbs_every: Optional[int] = None, predict_every: Optional[int] = None,
                 validation_features=None, validation_labels=None, name: str = "bnn_mnist",
                 minibatch_order: str = "random"):
        self.n_classes = _check_count("n_classes", n_classes, 2)
        self.n_hidden = _check_count("n_hidden", n_hidden, 1)
        features, labels = check_class_data("", features, labels, self.n_classes)
        super().__init__(features.shape[0], batch_size)
        self.name = str(name)
        self.n_features = features.shape[1]
        self.dim = parameter_count(self.n_features, self.n_hidden, self.n_classes)
        self.features, self.labels = features, labels
        self.test_features, self.test_labels = check_class_data("test_", test_features, test_labels, self.n_classes,
                                                           self.n_features)
        if self.test_features.shape[0] < 1:
            raise ValueError("the test set must have at least one example")
        if (validation_features is None) != (validation_labels is None):
            raise ValueError("validation_features and validation_labels must be given together")
        if validation_features is None:
            self.validation_features = self.validation_labels = None
        else:
            self.validation_features, self.validation_labels = check_class_data(
                "validation_", validation_features, validation_labels, self.n_classes, self.n_features)
        self.initial_scale = positive_number("initial_scale", initial_scale)
        self.hyper_shape = positive_number("hyper_shape", hyper_shape)
        self.hyper_rate = positive_number("hyper_rate", hyper_rate)
        epoch = max(1, self.n_data // self.batch_size)
        self.gibbs_every = _check_every("gibbs_every", gibbs_every, epoch)
        self.predict_every = _check_every("predict_every", predict_every, epoch)
        if minibatch_order not in MINIBATCH_ORDERS:
            raise ValueError(f"minibatch_order must be one of {', '.join(MINIBATCH_ORDERS)}; got {minibatch_order!r}")
        self.minibatch_order = minibatch_order
        D, H, K = self.n_features, self.n_hidden, self.n_classes
        # Where W1, b1, W2, b2 start and end in the flat parameter vector.
        self._layout = FlatParameters(("w1", "b1", "w2", "b2"), [(D, H), (H,), (H, K), (K,)])
        groups = self._layout.slices()
        self.precisions = GammaPrecisions(PRECISION_NAMES, groups, self.dim, shape=self.hyper_shape,
                                          rate=self.hyper_rate, initial=INITIAL_PRECISION)

    # -- parameters (unpack, pack, _blocks: FlatParameterTarget) ----------------------------------------------
    @property
    def _width(self) -> int:
        """Values per (chain, example) of the intermediates of a pass over shared inputs (hidden units, classes)."""
        return max(self.n_hidden, self.n_classes)

    @staticmethod
    def _forward(params, x):
        """(s = σ(x W1 + b1) (c, n, H), log p(· | x) (c, n, K)) for parameters of c chains and inputs x, shared (n, D)
        or per chain (c, n, D)."""
        w1, b1, w2, b2 = params
        hidden = expit(np.matmul(x, w1) + b1[:, None, :])
        return hidden, log_softmax(np.matmul(hidden, w2) + b2[:, None, :], axis=2)

    @staticmethod
    def _backward(params, hidden, log_p, labels):
        """(r = e_y − p (c, n, K), δ = (r W2ᵀ) ⊙ s(1 − s) (c, n, H)): the output and hidden units' error signals."""
        residual = -np.exp(log_p)
        true_class = np.broadcast_to(labels, residual.shape[:2])[:, :, None]
        np.put_along_axis(residual, true_class, np.take_along_axis(residual, true_class, axis=2) + 1.0, axis=2)
        delta = np.matmul(residual, np.swapaxes(params[2], 1, 2))
        delta *= hidden * (1.0 - hidden)
        return residual, delta

    @staticmethod
    def _slice(params, chains):
        return tuple(p[chains] for p in params)

    @staticmethod
    def _pick(log_p, labels):
        """log_p[c, i, y_i] for labels (n,) or (c, n): shape (c, n)."""
        labels = np.broadcast_to(labels, log_p.shape[:2])
        return np.take_along_axis(log_p, labels[:, :, None], axis=2)[:, :, 0]

    def _gradient_sums(self, theta, features, labels, index=None) -> np.ndarray:
        """Σ_i ∇log p(y_i | x_i, θ) (c, d) over all rows of (features, labels), or over the rows ``index`` (c, n) of
        each chain; by matrix products per block (Σ_i x_i ⊗ δ_i = Xᵀ Δ, …)."""
        params = self.unpack(theta)
        total = np.zeros(theta.shape)
        g_w1, g_b1, g_w2, g_b2 = self.unpack(total)  # views: writing them fills ``total``
        n_rows = features.shape[0] if index is None else index.shape[1]
        width = self._width if index is None else max(self.n_features, self._width)  # gathered rows are per chain
        for chains, rows in self._blocks(theta.shape[0], n_rows, width):
            if index is None:
                x, y = features[rows], labels[rows]  # shared by the chains: (r, D), (r,)
            else:
                x, y = features[index[chains, rows]], labels[index[chains, rows]]  # (c, r, D), (c, r)
            block = self._slice(params, chains)
            hidden, log_p = self._forward(block, x)
            residual, delta = self._backward(block, hidden, log_p, y)
            g_w1[chains] += np.matmul(np.swapaxes(x, -1, -2), delta)
            g_b1[chains] += delta.sum(axis=1)
            g_w2[chains] += np.matmul(np.swapaxes(hidden, 1, 2), residual)
            g_b2[chains] += residual.sum(axis=1)
        return total

    # -- potential and gradients -----------------------------------------------------------------------
    def potential(self, theta):
        """U(θ) = −Σ_i log p(y_i | x_i, θ) + ½ Σ_g λ_g ‖θ_g‖², shape (c,) (summed over blocks of chains and
        examples)."""
        theta = self._theta(theta)
        params = self.unpack(theta)
        out = self.precisions.prior_potential(theta)
        for chains, rows in self._blocks(theta.shape[0], self.n_data, self._width):
            _, log_p = self._forward(self._slice(params, chains), self.features[rows])
            out[chains] -= self._pick(log_p, self.labels[rows]).sum(axis=1)
        return out

    def gradient(self, theta):
        """Exact full-data ∇U(θ) = −Σ_i g_i + λ_g θ_g, shape (c, d): matrix products over blocks of examples, never the
        (c, N, d) per-example array."""
        theta = self._theta(theta)
        return -self._gradient_sums(theta, self.features, self.labels) - self.log_prior_gradient(theta)

    def stochastic_gradient(self, theta, rng):
        """∇Ũ(θ) = −(N/n) Σ_{i∈S̃} g_i − ∇log p(θ), shape (c, d): one :meth:`minibatch` draw (the draw of
        :meth:`minibatch_gradient`, equal to its gradient to rounding), then one batched forward and backward pass over
        the gathered minibatch (c, n, D)."""
        theta = self._theta(theta)
        index = self.minibatch(rng, theta.shape[0])
        sums = self._gradient_sums(theta, self.features, self.labels, index)
        return -(self.n_data / self.batch_size) * sums - self.log_prior_gradient(theta)

    def log_likelihood_gradients(self, theta, index):
        """g_i = ∇_θ log p(y_i | x_i, θ) for θ (c, d) and indices (c, b); shape (c, b, d), packed like θ.

        The readable reference (the outer products of the module docstring, one example at a time along axis 1), for
        small sizes and tests: at full size one chain's 500 examples are 318 MB; :meth:`stochastic_gradient` never forms
        them."""
        theta = self._theta(theta)
        index = np.asarray(index)
        if index.ndim != 2 or index.shape[0] != theta.shape[0]:
            raise ValueError(f"index must have shape ({theta.shape[0]}, batch); got {index.shape}")
        params = self.unpack(theta)
        x, y = self.features[index], self.labels[index]  # (c, b, D), (c, b)
        hidden, log_p = self._forward(params, x)
        residual, delta = self._backward(params, hidden, log_p, y)
        c, b = index.shape
        parts = (x[:, :, :, None] * delta[:, :, None, :],  # ∂/∂W1 = x ⊗ δ  (c, b, D, H)
                 delta,  # ∂/∂b1 = δ
                 hidden[:, :, :, None] * residual[:, :, None, :],  # ∂/∂W2 = s ⊗ r  (c, b, H, K)
                 residual)  # ∂/∂b2 = r
        return np.concatenate([p.reshape(c, b, -1) for p in parts], axis=2)

    def log_prior_gradient(self, theta):
        """∇log p(θ | λ) = −λ_g θ_g per coordinate, shape (c, d) (the current precisions)."""
        return self.precisions.prior_gradient(self._theta(theta))

    def engine_functions(self) -> dict:
        """The engine's sums door (:func:`sgmcmc.engine.estimators.sums_gradient`; no rows door: one chain's 500
        per-example gradients are 318 MB): :func:`~sgmcmc.targets.bnn_kernels.row_gradient_sums` on the rows
        x_i | y_i | K (N, D + 2), the prior :func:`~sgmcmc.targets.gaussian_prior.grouped_prior_gradient` given each
        chain's precisions, read at every block's start (the Gibbs steps between blocks redraw them), N; and U's terms,
        :func:`~sgmcmc.targets.bnn_kernels.row_log_likelihoods` and
        :func:`~sgmcmc.targets.gaussian_prior.grouped_prior_log_density` given the same precisions. The latter keeps
        the normalising terms ½ Σ_g n_g log λ_g that :meth:`potential` (U given λ) leaves out: the door's U is
        :meth:`potential` − ½ Σ_g n_g log λ_g, the same U at fixed λ up to that constant. With ``minibatch_order``
        sweep, the minibatches are the training set swept in order (:meth:`~sgmcmc.targets.data.DataTarget.
        sweep_batches`)."""
        functions = {"row_gradient_sums": bnn_kernels.row_gradient_sums, "prior_gradient": grouped_prior_gradient,
                     "row_log_likelihoods": bnn_kernels.row_log_likelihoods,
                     "prior_log_density": grouped_prior_log_density, "data": self._rows, "n_data": self.n_data,
                     "estimator_state": self._prior_state, "estimator_size": 2 * len(PRECISION_NAMES) - 1}
        if self.minibatch_order == "sweep":
            functions["batches"] = self.sweep_batches
        return functions

    @cached_property
    def _rows(self) -> np.ndarray:
        """The engine's rows x_i | y_i | K (N, D + 2), made once (315 MB on MNIST)."""
        return np.column_stack([self.features, self.labels, np.full(self.n_data, self.n_classes)]).astype(float)

    def _prior_state(self, n_chains: int) -> np.ndarray:
        """(c, 2G − 1): each chain's (λ_W1, λ_b1, λ_W2, λ_b2, where W1, b1 and W2 end in θ)."""
        values = np.broadcast_to(self.precisions.values, (n_chains, len(PRECISION_NAMES)))
        ends = np.broadcast_to(self._layout.offsets[1:-1].astype(float), (n_chains, len(PRECISION_NAMES) - 1))
        return np.column_stack([values, ends])

    def initial_position(self, n_chains, rng):
        """W1 = initial_scale · ``rng.standard_normal((c, D, H))``, then W2 = initial_scale ·
        ``rng.standard_normal((c, H, K))``, the biases 0 (the authors' initialisation), packed into θ (c, d)."""
        c = int(n_chains)
        w1 = self.initial_scale * rng.standard_normal((c, self.n_features, self.n_hidden))
        w2 = self.initial_scale * rng.standard_normal((c, self.n_hidden, self.n_classes))
        return self.pack(w1, np.zeros((c, self.n_hidden)), w2, np.zeros((c, self.n_classes)))

    # -- the precisions (Gibbs steps) ---------------------------------------------------------------------
    def hyperparameters(self) -> dict[str, np.ndarray]:
        """{"precision_w1", "precision_b1", "precision_w2", "precision_b2"} → λ per chain ((c,), or (1,) before the
        first update)."""
        return self.precisions.as_dict()

    def set_hyperparameters(self, values: dict[str, np.ndarray]) -> None:
        """Inverse of :meth:`hyperparameters` (a resumed run)."""
        if set(values) != set(PRECISION_NAMES):
            raise ValueError(f"hyperparameters of {self.name!r} are {', '.join(PRECISION_NAMES)}; "
                             f"got {', '.join(sorted(values))}")
        arrays = [np.asarray(values[name], dtype=float) for name in PRECISION_NAMES]
        if any(a.ndim != 1 or a.shape != arrays[0].shape or not np.all(np.isfinite(a) & (a > 0)) for a in arrays):
            raise ValueError("every precision must be a 1D array of positive numbers, one per chain, all of one length")
        self.precisions.load(values)

    def reset_hyperparameters(self) -> None:
        """λ = 1 for every group (the authors' weight decay 2·10⁻⁵ times N)."""
        self.precisions.reset()

    def gibbs_update(self, theta, rng, mode: bool = False) -> None:
        """λ_g ← a draw from Gamma(a + n_g/2, b + ‖θ_g‖²/2) for every chain and group (one ``rng.gamma`` call), or its
        mode with ``mode`` (no random numbers)."""
        theta = self._theta(theta)
        if mode:
            self.precisions.mode(theta)
        else:
            self.precisions.draw(theta, rng)

    # -- predictions of the test set ------------------------------------------------------------------
    def predict(self, theta) -> np.ndarray:
        """p(y | x, θ) of every test example, shape (c, n_test, K), rows summing to 1 (what is averaged over the
        post-burn-in samples)."""
        theta = self._theta(theta)
        params = self.unpack(theta)
        out = np.empty((theta.shape[0], self.test_features.shape[0], self.n_classes))
        for chains, rows in self._blocks(theta.shape[0], self.test_features.shape[0], self._width):
            out[chains, rows] = np.exp(self._forward(self._slice(params, chains), self.test_features[rows])[1])
        return out

    def predictive_metrics(self, prediction) -> dict:
        """{"test_error": the fraction of test examples whose argmax_y of ``prediction`` (ties: the smallest class) is
        not y, "test_log_likelihood": the mean over the test examples of log prediction[y]} per chain, each (c,), for
        class probabilities (c, n_test, K) (one sample's or an average's). A probability below the smallest normal
        float (underflow) counts as that (log ≈ −708) rather than −∞."""
        prediction = np.asarray(prediction, dtype=float)
        shape = (self.test_features.shape[0], self.n_classes)
        if prediction.ndim != 3 or prediction.shape[1:] != shape:
            raise ValueError(f"prediction must have shape (n_chains, {shape[0]}, {shape[1]}); got {prediction.shape}")
        error = np.mean(np.argmax(prediction, axis=2) != self.test_labels[None, :], axis=1)
        true_class = self._pick(prediction, self.test_labels)
        log_likelihood = np.mean(np.log(np.maximum(true_class, np.finfo(float).tiny)), axis=1)
        return {"test_error": error, "test_log_likelihood": log_likelihood}


def bnn_mnist(data_dir=None, n_hidden: int = 100, batch_size: int = 500, split_seed: int = 0, n_validation: int = 10000,
              initial_scale: float = 0.01, hyper_shape: float = 1.0, hyper_rate: float = 1.0,
              gibbs_every: Optional[int] = None, predict_every: Optional[int] = None, max_train: Optional[int] = None,
              max_test: Optional[int] = None, minibatch_order: str = "random",
              evaluate_on: str = "test") -> BayesianNeuralNetwork:
    """T11: the BNN on MNIST (SPEC §2 T11), named "bnn_mnist".

    The images come from ``sgmcmc.data.mnist.load_mnist(resolve_data_dir(data_dir))`` (a
    :class:`sgmcmc.data.DataError` of the loader propagates unchanged), as pixels/256. The 60,000 training images are
    shuffled by ``np.random.default_rng(split_seed).permutation``; the first ``n_validation`` are the validation split
    (kept on the target, unused by the metrics), the other 50,000 the training set; the test set is the 10,000 test
    images. ``max_train`` / ``max_test`` (None: all) keep only the first that many training / test images (smoke runs,
    tests). ``evaluate_on`` "validation" scores the predictive on the validation split in place of the test set (the
    "test_error" of its trace and metrics is then the validation error: a step size chosen on it, SPEC §4.14, never
    sees the test set).
    """
    from pathlib import Path

    from sgmcmc.data import resolve_data_dir
    from sgmcmc.data.mnist import load_mnist

    split_seed = _check_count("split_seed", split_seed, 0)
    n_validation = _check_count("n_validation", n_validation, 0)
    max_train = None if max_train is None else _check_count("max_train", max_train, 2)
    max_test = None if max_test is None else _check_count("max_test", max_test, 1)
    source = load_mnist(Path(resolve_data_dir(data_dir)))
    n_images = source.train_images.shape[0]
    if n_validation > n_images - 2:
        raise ValueError(f"n_validation must be an integer in 0..{n_images - 2} (the {n_images} training images "
                         f"less at least 2 for training); got {n_validation}")
    order = np.random.default_rng(split_seed).permutation(n_images)
    validation, train = order[:n_validation], order[n_validation:][:max_train]
    scored = (source.test_images, source.test_labels)
    if evaluate_on == "validation":
        if n_validation < 1:
            raise ValueError("evaluate_on=validation needs a validation split: n_validation >= 1")
        scored = (source.train_images[validation], source.train_labels[validation])
    elif evaluate_on != "test":
        raise ValueError(f"evaluate_on must be test or validation; got {evaluate_on!r}")
    test = slice(0, max_test)
    return BayesianNeuralNetwork(source.train_images[train] / 256.0, source.train_labels[train],
                                 scored[0][test] / 256.0, scored[1][test], n_hidden=n_hidden,
                                 batch_size=batch_size, n_classes=N_DIGITS, initial_scale=initial_scale,
                                 hyper_shape=hyper_shape, hyper_rate=hyper_rate, gibbs_every=gibbs_every,
                                 predict_every=predict_every,
                                 validation_features=source.train_images[validation] / 256.0,
                                 validation_labels=source.train_labels[validation], name="bnn_mnist",
                                 minibatch_order=minibatch_order)
