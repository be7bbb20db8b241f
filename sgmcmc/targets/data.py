"""Targets built from a data set: U(θ) = −Σ_{i=1}^N log p(x_i | θ) − log p(θ), with minibatch gradients.

SPEC §1 "Common": a minibatch S̃ of n of the N data points, fresh every step, gives
∇Ũ(θ) = −(N/n) Σ_{i∈S̃} ∇log p(x_i | θ) − ∇log p(θ). Here S̃ is drawn **without replacement** (SPEC §4.8), so

    Cov(∇Ũ | θ) = N²·(1 − n/N)·S²(θ)/n = N(N − n)/n · S²(θ),

with S²(θ) the covariance of the N per-example gradients g_i = ∇log p(x_i | θ) with denominator N − 1 (the
finite-population correction of simple random sampling). Shang et al. (2015) Eq. 17 write Σ = N²I(θ)/n, the
with-replacement value; the two agree for N ≫ n (for N = 100, n = 10 they differ by N/(N − n) = 1.11).

A concrete data target gives the per-example likelihood gradients and the prior gradient; everything else
(minibatch draw, ∇Ũ, full-data ∇U, S²(θ), the noise covariance) is implemented here, chain dimension first.
"""

from __future__ import annotations

from abc import abstractmethod

import numpy as np

from sgmcmc.sample_covariance import chunked_sample_covariance
from sgmcmc.targets.base import Target

# Largest number of per-example gradient entries (chains × examples × dim) held at once by the full-data sums:
# 2**22 float64 values = 32 MB per chunk.
_CHUNK_ELEMENTS = 2**22


def _check_count(name: str, value, lower: int, upper: int | None = None) -> int:
    """``value`` as an int in [lower, upper] (upper None: no bound), else a ValueError naming the parameter."""
    allowed = f"an integer >= {lower}" if upper is None else f"an integer in {lower}..{upper}"
    try:
        integral = not isinstance(value, bool) and float(value).is_integer()
    except (TypeError, ValueError):
        integral = False
    if not integral:
        raise ValueError(f"{name} must be {allowed}; got {value!r}")
    value = int(value)
    if value < lower or (upper is not None and value > upper):
        raise ValueError(f"{name} must be {allowed}; got {value}")
    return value


def positive_number(name: str, value) -> float:
    """``value`` as a finite float > 0, else a ValueError naming the parameter."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a positive number; got {value!r}") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a positive number; got {value!r}")
    return value


def check_features(prefix: str, features, labels, n_columns: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(features (N, D) float64, labels (N,) as given), checked for shape and finiteness; a ValueError whose
    message starts with ``prefix`` (e.g. "test_") otherwise. The label values are the caller's to check."""
    features = np.asarray(features, dtype=float)
    labels = np.asarray(labels)
    if features.ndim != 2 or features.shape[1] < 1:
        raise ValueError(f"{prefix}features must be a 2D array (N, D); got shape {features.shape}")
    if n_columns is not None and features.shape[1] != n_columns:
        raise ValueError(f"{prefix}features must have {n_columns} columns; got {features.shape[1]}")
    if labels.shape != (features.shape[0],):
        raise ValueError(f"{prefix}labels must have shape ({features.shape[0]},); got {labels.shape}")
    if not np.all(np.isfinite(features)):
        raise ValueError(f"{prefix}features must be finite")
    return features, labels


def check_class_data(prefix: str, features, labels, n_classes: int,
                     n_features: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(features (N, D) float64 C-contiguous, labels (N,) int64 in 0..K−1) of a classifier's data, or a ValueError whose
    message starts with ``prefix``."""
    features, labels = check_features(prefix, features, labels, n_features)
    if labels.dtype == bool or not np.issubdtype(labels.dtype, np.number):
        raise ValueError(f"{prefix}labels must be integers in 0..{n_classes - 1}")
    if labels.size and (not np.all(np.isfinite(labels)) or not np.all(labels == np.round(labels))
                        or labels.min() < 0 or labels.max() > n_classes - 1):
        raise ValueError(f"{prefix}labels must be integers in 0..{n_classes - 1}")
    return np.ascontiguousarray(features), np.ascontiguousarray(labels, dtype=np.int64)


class DataTarget(Target):
    """The base of every target built from N data points with minibatches of n (see the module docstring).

    Subclasses set ``dim`` and implement :meth:`potential`, :meth:`log_likelihood_gradients` and
    :meth:`log_prior_gradient`; they may override :meth:`gradient` with a closed form.

    Parameters
    ----------
    n_data : int
        N, the number of data points (>= 2, so that S²(θ) is defined).
    batch_size : int
        n, the minibatch size, 1 <= n <= N.
    """

    _chunk_elements: int = _CHUNK_ELEMENTS

    def __init__(self, n_data: int, batch_size: int):
        self.n_data = _check_count("n_data", n_data, 2)
        self.batch_size = _check_count("batch_size", batch_size, 1, self.n_data)

    # -- what a data set provides ----------------------------------------------------------------------
    @abstractmethod
    def log_likelihood_gradients(self, theta: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Per-example g_i = ∇_θ log p(x_i | θ) for θ (c, d) and integer indices (c, b); shape (c, b, d)."""

    @abstractmethod
    def log_prior_gradient(self, theta: np.ndarray) -> np.ndarray:
        """∇_θ log p(θ), shape (c, d)."""

    # -- minibatches -------------------------------------------------------------------------------------
    def sweep_batches(self, n_steps: int, n_chains: int, start: int) -> np.ndarray:
        """The rows of steps ``start + 1 … start + n_steps`` when the data are swept in their order (n_steps, c, n):
        step t (0-based) takes rows k·n … (k + 1)·n − 1, k = t mod ⌊N/n⌋, the same for every chain, so each epoch
        of ⌊N/n⌋ steps visits every row once (the last N mod n rows never). The SGHMC authors' BNN code shuffles its
        training set once into fixed minibatches and sweeps them in that order every epoch; the engine's blocks take
        these rows in place of the drawn ones (``engine_functions()["batches"]``); a data set shuffled once where it is
        loaded (bnn_mnist's ``split_seed``) is that order."""
        steps_per_epoch = self.n_data // self.batch_size
        positions = (start + np.arange(n_steps)) % steps_per_epoch
        rows = positions[:, None] * self.batch_size + np.arange(self.batch_size)[None, :]
        return np.ascontiguousarray(np.broadcast_to(rows[:, None, :], (n_steps, n_chains, self.batch_size)),
                                    dtype=np.int64)

    def minibatch(self, rng: np.random.Generator, n_chains: int) -> np.ndarray:
        """n distinct indices of range(N) per chain (without replacement within a step), shape (n_chains, n).

        The draw: ``keys = rng.random((n_chains, N))``, one uniform key per data point and chain; a chain's
        minibatch is the indices of its n smallest keys, a uniformly random n-subset, in ascending order (only the set
        is random): ``np.sort(np.argpartition(keys, n − 1, axis=1)[:, :n], axis=1)``. When n = N every chain gets
        ``range(N)`` and nothing is drawn from ``rng``. (The engine's blocks draw n uniforms a step instead:
        :func:`sgmcmc.engine.estimators.choose_rows`, the same law.)
        """
        n_chains = int(n_chains)
        if self.batch_size == self.n_data:
            return np.tile(np.arange(self.n_data), (n_chains, 1))
        keys = rng.random((1, n_chains, self.n_data))[0]
        return np.sort(np.argpartition(keys, self.batch_size - 1, axis=1)[:, :self.batch_size], axis=1)

    def minibatch_gradient(self, theta: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """(∇Ũ(θ), per-example gradients of the minibatch), shapes (c, d) and (c, n, d).

        ∇Ũ = −(N/n) Σ_{i∈S̃} g_i − ∇log p(θ) (SPEC §1 "Common"), one :meth:`minibatch` draw per call. The
        per-example gradients are what CCAdL/SGFS need for their covariance estimate (SPEC §1, CCAdL step 2).
        """
        theta = np.asarray(theta, dtype=float)
        per_example = self.log_likelihood_gradients(theta, self.minibatch(rng, theta.shape[0]))
        scale = self.n_data / self.batch_size
        return -scale * per_example.sum(axis=1) - self.log_prior_gradient(theta), per_example

    def stochastic_gradient(self, theta, rng):
        """∇Ũ(θ) of :meth:`minibatch_gradient` (one minibatch draw), shape (c, d)."""
        return self.minibatch_gradient(theta, rng)[0]

    # -- full-data quantities ----------------------------------------------------------------------------
    def _all_gradients(self, theta: np.ndarray):
        """The per-example gradients of all N data points in chunks of shape (c, b, d), in index order."""
        per_chunk = max(1, self._chunk_elements // max(1, theta.shape[0] * self.dim))
        for start in range(0, self.n_data, per_chunk):
            index = np.arange(start, min(start + per_chunk, self.n_data))
            yield self.log_likelihood_gradients(theta, np.broadcast_to(index, (theta.shape[0], index.size)))

    def gradient(self, theta):
        """Full-data ∇U(θ) = −Σ_{i=1}^N g_i − ∇log p(θ), shape (c, d) (summed in chunks)."""
        theta = np.asarray(theta, dtype=float)
        total = np.zeros(theta.shape)
        for chunk in self._all_gradients(theta):
            total += chunk.sum(axis=1)
        return -total - self.log_prior_gradient(theta)

    @property
    def noise_scale(self) -> float:
        """N(N − n)/n: Cov(∇Ũ | θ) = noise_scale · S²(θ) for a minibatch drawn without replacement.

        Shang et al. (2015) Eq. 17 use N²/n (sampling with replacement, no finite-population correction);
        identical for N ≫ n. 0 when n = N (∇Ũ = ∇U).
        """
        return self.n_data * (self.n_data - self.batch_size) / self.batch_size

    def per_example_covariance(self, theta: np.ndarray) -> np.ndarray:
        """S²(θ) = (1/(N − 1)) Σ_i (g_i − ḡ)(g_i − ḡ)ᵀ over all N data points, shape (c, d, d).

        Accumulated in chunks as sums shifted by the mean of the first chunk
        (:func:`~sgmcmc.sample_covariance.chunked_sample_covariance`).
        """
        return chunked_sample_covariance(self._all_gradients(np.asarray(theta, dtype=float)), self.n_data)

    def noise_covariance(self, theta):
        """The exact covariance of ∇Ũ − ∇U at θ: noise_scale · S²(θ), shape (c, d, d)."""
        return self.noise_scale * self.per_example_covariance(theta)
