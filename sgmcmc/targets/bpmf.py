"""T12, online Bayesian probabilistic matrix factorisation on MovieLens-1M (the SGHMC paper's BPMF: Chen, Fox &
Guestrin 2014 §4.2, Table 1; SPEC §2 T12, §3 E8; the authors' code tqchen/ML-SGHMC ``mf/``).

Ratings r ∈ 1..5 of user u and item (movie) v are modelled on the scale y = (r − 1)/4 with

    ŷ_uv = base + a_u + b_v + U_u · V_v,        y_uv ~ N(ŷ_uv, 1/τ),

base = 0.645391 (the authors' ``base_score``, the mean of y on MovieLens-1M), k = 20 latent dimensions. The parameters
θ = [U (n_users × k), V (n_items × k), a (n_users), b (n_items)] are flattened in that order (row-major), so
d = (n_users + n_items)(k + 1) = (6,040 + 3,706)·21 = 204,666 at full size. Priors: U_u ~ N(0, λ_U⁻¹ I),
V_v ~ N(0, λ_V⁻¹ I), a_u ~ N(0, λ_a⁻¹), b_v ~ N(0, λ_b⁻¹), with the hyperpriors λ ~ Gamma(1, 1) and τ ~ Gamma(1, 1)
(shape ``hyper_shape``, rate ``hyper_rate``). Given the hyperparameters, the potential of the N training ratings is

    U(θ) = ½τ Σ_train (y − ŷ)² + ½ Σ_g λ_g ‖θ_g‖²

(:meth:`BPMF.potential`; the terms free of θ are left out). The hyperparameters are resampled by Gibbs steps from their
conjugate conditionals every ``gibbs_every`` steps (2000, the authors' ``nstep``: :meth:`BPMF.gibbs_update`):
λ_g | θ ~ Gamma(a + n_g/2, b + ‖θ_g‖²/2) (:class:`sgmcmc.hyperparameters.GammaPrecisions`) and
τ | θ ~ Gamma(a + N/2, b + ½ Σ_train (y − ŷ)²) (a full pass over the training ratings); before the first update every
λ and τ is 1 (the authors' code uses the prior's mean a/b = 1 until its first hyperparameter draw).

Minibatches (:meth:`BPMF.stochastic_gradient`): one draw of n distinct training ratings per chain
(:meth:`BPMF.minibatch`, ``rng.choice(N, n, replace=False, shuffle=False)``: O(n) per step, not O(N)), then
∇Ũ = −(N/n) Σ_{i∈S̃} g_i + λθ, the likelihood's part a scatter-add of the 2k + 2 entries of each rating
(:mod:`sgmcmc.targets.bpmf_kernels`, only the rows of the minibatch's users and items get likelihood work), the
prior's part over all coordinates. The numpy methods (``kernels=False``, ``np.add.at``) are the reference the kernels
are tested against; :meth:`BPMF.log_likelihood_gradients` gives the dense per-rating (c, b, d) gradients of the
DataTarget protocol, for small sizes only. The samplers add their noise to every coordinate themselves. Note: the
authors' code walks through a shuffled copy of the training set in order (``sptr``), a minibatch of 4000 consecutive
ratings per step; here every step draws a fresh random subset (SPEC §1 "Common").

Predictions (SPEC §3 E8, :meth:`BPMF.predict`): every ``predict_every`` steps (default one pass, N // n steps) the
predicted test ratings 1 + 4ŷ clipped to [1, 5] (the authors do not clip), averaged over the post-burn-in samples by
the run (:class:`sgmcmc.observers.PredictiveObserver`), scored by the RMSE on the 1–5 scale
(:meth:`BPMF.predictive_metrics`).

The data (:func:`bpmf_movielens`): MovieLens-1M's ratings.dat (:mod:`sgmcmc.data.movielens`), or any file of its
format (``ratings_file``: the synthetic one of :mod:`sgmcmc.data.synthetic_ratings`), split by the authors'
mknfold.py into test fold ``fold`` of ``n_folds`` and the rest for training.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sgmcmc.hyperparameters import GammaPrecisions
from sgmcmc.targets import bpmf_kernels
from sgmcmc.targets.base import Target
from sgmcmc.targets.data import DataTarget, _check_count, positive_number

BASE = 0.645391  # the authors' base_score (SGHMC.conf): the mean of (r − 1)/4 on MovieLens-1M
PRECISIONS = ("precision_user", "precision_item", "precision_user_bias", "precision_item_bias")
PRECISION_RATING = "precision_rating"
# Largest (c, b, d) array log_likelihood_gradients builds (2**26 floats = 512 MB): it is the small-size reference.
_DENSE_LIMIT = 2**26
# Ratings per block of the numpy reference's full-data sums.
_BLOCK = 2**16


def _finite_number(name: str, value) -> float:
    """``value`` as a finite float, else a ValueError naming the parameter."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a finite number; got {value!r}") from None
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite number; got {value!r}")
    return value


def _check_ratings(prefix: str, users, items, ratings, n_users: int, n_items: int):
    """(users, items int64 0-based, y = (r − 1)/4 float64) of one set, or a ValueError naming ``prefix``."""
    users, items, ratings = (np.asarray(x) for x in (users, items, ratings))
    if users.ndim != 1 or items.shape != users.shape or ratings.shape != users.shape:
        raise ValueError(f"{prefix}users, {prefix}items and {prefix}ratings must be 1D arrays of one length; got "
                         f"shapes {users.shape}, {items.shape}, {ratings.shape}")
    for name, index, size in (("users", users, n_users), ("items", items, n_items)):
        if index.size and (not np.issubdtype(index.dtype, np.integer) or index.min() < 0 or index.max() >= size):
            raise ValueError(f"{prefix}{name} must be integer indices in 0..{size - 1}")
    ratings = ratings.astype(float)
    if not np.all(np.isfinite(ratings)) or np.any((ratings < 1) | (ratings > 5)):
        raise ValueError(f"{prefix}ratings must lie in [1, 5]")
    return (np.ascontiguousarray(users, dtype=np.int64), np.ascontiguousarray(items, dtype=np.int64),
            np.ascontiguousarray((ratings - 1.0) / 4.0))


class BPMF(DataTarget):
    """The posterior of BPMF given its hyperparameters, with Gibbs steps for them (module docstring; SPEC T12).

    Parameters
    ----------
    users, items : (N,) int arrays
        The training ratings' user and item indices (0-based, < n_users, < n_items).
    ratings : (N,) array
        The training ratings on the 1–5 scale (N >= 2).
    n_users, n_items : int
        The number of users and items (rows of U and V).
    test_users, test_items, test_ratings : arrays, optional
        The held-out ratings for :meth:`predict` (all three or none).
    latent_dim : int
        k (20).
    batch_size : int, optional
        n, ratings per minibatch, 1 <= n <= N (default: N).
    base : float
        The global offset of ŷ on the y scale (0.645391).
    initial_scale : float
        U, V start as N(0, initial_scale²) entries (the authors' u_init_sigma = i_init_sigma = 0.03), biases at 0.
    hyper_shape, hyper_rate : float
        The Gamma(shape, rate) hyperprior of every precision (1, 1).
    gibbs_every : int
        Steps between two Gibbs updates of the precisions (2000; 0: never, the precisions stay at 1).
    predict_every : int, optional
        Steps between two test-set predictions (default: one pass, max(1, N // n); 0: none).
    name : str
        The target's name ("bpmf_movielens").
    kernels : bool
        The compiled kernels (default) or the numpy reference (False) for the sums over ratings.
    """

    has_exact_density = False

    def __init__(self, users, items, ratings, n_users: int, n_items: int, test_users=None, test_items=None,
                 test_ratings=None, latent_dim: int = 20, batch_size: Optional[int] = None, base: float = BASE,
                 initial_scale: float = 0.03, hyper_shape: float = 1.0, hyper_rate: float = 1.0,
                 gibbs_every: int = 2000, predict_every: Optional[int] = None, name: str = "bpmf_movielens",
                 kernels: bool = True):
        self.n_users = _check_count("n_users", n_users, 1, 2**31 - 1)  # the kernels' records hold int32 indices
        self.n_items = _check_count("n_items", n_items, 1, 2**31 - 1)
        self.latent_dim = _check_count("latent_dim", latent_dim, 1)
        self.users, self.items, self.y = _check_ratings("", users, items, ratings, self.n_users, self.n_items)
        super().__init__(self.users.size, self.users.size if batch_size is None else batch_size)
        tests = (test_users, test_items, test_ratings)
        if any(x is None for x in tests) and not all(x is None for x in tests):
            raise ValueError("test_users, test_items and test_ratings must be given together")
        if test_users is None:
            self.test_users = self.test_items = self.test_y = self.test_ratings = None
        else:
            self.test_users, self.test_items, self.test_y = _check_ratings("test_", *tests, self.n_users, self.n_items)
            if self.test_users.size < 1:
                raise ValueError("the test set must have at least one rating")
            self.test_ratings = 1.0 + 4.0 * self.test_y
        self.base = _finite_number("base", base)
        self.initial_scale = positive_number("initial_scale", initial_scale)
        self.hyper_shape = positive_number("hyper_shape", hyper_shape)
        self.hyper_rate = positive_number("hyper_rate", hyper_rate)
        self.gibbs_every = _check_count("gibbs_every", gibbs_every, 0)
        if predict_every is None:
            predict_every = max(1, self.n_data // self.batch_size) if self.has_test_set else 0
        self.predict_every = _check_count("predict_every", predict_every, 0)
        if self.predict_every and not self.has_test_set:
            raise ValueError("predict_every needs a test set")
        self.name = str(name)
        self.kernels = bool(kernels)
        k, nu, ni = self.latent_dim, self.n_users, self.n_items
        self.dim = (nu + ni) * (k + 1)
        self._bias = (nu + ni) * k  # where a starts
        self.slices = (slice(0, nu * k), slice(nu * k, self._bias), slice(self._bias, self._bias + nu),
                       slice(self._bias + nu, self.dim))
        self.precisions = GammaPrecisions(PRECISIONS, self.slices, self.dim, self.hyper_shape, self.hyper_rate,
                                          initial=1.0)
        self.tau = np.ones(1)  # τ per chain, (1,) before the first Gibbs update
        self._records = None  # the kernels' rating table (_table)

    @property
    def has_test_set(self) -> bool:
        return self.test_users is not None

    # -- parameters ------------------------------------------------------------------------------------
    def _theta(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if theta.ndim != 2 or theta.shape[1] != self.dim:
            raise ValueError(f"theta must have shape (n_chains, {self.dim}); got {theta.shape}")
        return np.ascontiguousarray(theta)

    def unpack(self, theta):
        """(U (c, n_users, k), V (c, n_items, k), a (c, n_users), b (c, n_items)): views into θ (c, d) where
        possible."""
        theta = self._theta(theta)
        c, k = theta.shape[0], self.latent_dim
        s = self.slices
        return (theta[:, s[0]].reshape(c, self.n_users, k), theta[:, s[1]].reshape(c, self.n_items, k),
                theta[:, s[2]], theta[:, s[3]])

    def _views(self, row: np.ndarray):
        """(U (n_users, k), V (n_items, k), a (n_users), b (n_items)): views into one chain's row (d,)."""
        k, s = self.latent_dim, self.slices
        return row[s[0]].reshape(self.n_users, k), row[s[1]].reshape(self.n_items, k), row[s[2]], row[s[3]]

    def _per_chain(self, values: np.ndarray, n_chains: int, what: str) -> np.ndarray:
        """Per-chain hyperparameter values ((1,) or (c,)) as (c,), or a ValueError."""
        if values.shape[0] not in (1, n_chains):
            raise ValueError(f"the {what} are for {values.shape[0]} chains; θ has {n_chains}")
        return np.broadcast_to(values, (n_chains,))

    def _lambdas(self, n_chains: int) -> np.ndarray:
        """λ per chain and group, (c, 4)."""
        values = self.precisions.values
        if values.shape[0] not in (1, n_chains):
            raise ValueError(f"the precisions are for {values.shape[0]} chains; θ has {n_chains}")
        return np.broadcast_to(values, (n_chains, len(PRECISIONS)))

    def _add_prior_gradient(self, theta: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out`` += λ_g θ_g group by group (−∇log p(θ | λ)), in place; returns ``out``."""
        lambdas = self._lambdas(theta.shape[0])
        for g, part in enumerate(self.slices):
            out[:, part] += lambdas[:, g, None] * theta[:, part]
        return out

    # -- sums over ratings: kernels and the numpy reference --------------------------------------------------
    def _predictions(self, theta, users, items) -> np.ndarray:
        """ŷ (c, m) of the pairs (users, items)."""
        out = np.empty((theta.shape[0], users.size))
        if self.kernels:
            return bpmf_kernels.predictions(theta, users, items, self.n_users, self.n_items, self.latent_dim, self.base, out)
        U, V, a, b = self.unpack(theta)
        for chain in range(theta.shape[0]):
            for start in range(0, users.size, _BLOCK):
                u, v = users[start:start + _BLOCK], items[start:start + _BLOCK]
                out[chain, start:start + _BLOCK] = (self.base + a[chain, u] + b[chain, v]
                                                    + np.einsum("ik,ik->i", U[chain, u], V[chain, v]))
        return out

    def _table(self) -> np.ndarray:
        """The training ratings as the kernels' rows (user, item, y) (:func:`sgmcmc.targets.bpmf_kernels.rating_rows`),
        built on first use."""
        if self._records is None:
            self._records = bpmf_kernels.rating_rows(self.users, self.items, self.y)
        return self._records

    def squared_residuals(self, theta) -> np.ndarray:
        """Σ_train (y − ŷ)² per chain, (c,) (a full pass over the training ratings)."""
        theta = self._theta(theta)
        if self.kernels:
            return bpmf_kernels.squared_residuals(theta, self._table(), self.n_users, self.n_items, self.latent_dim, self.base)
        out = np.zeros(theta.shape[0])
        for start in range(0, self.n_data, _BLOCK):
            rows = slice(start, start + _BLOCK)
            residual = self.y[rows] - self._predictions(theta, self.users[rows], self.items[rows])
            out += np.einsum("ci,ci->c", residual, residual)
        return out

    def _likelihood_sums(self, theta, index, scale: float, with_moments: bool):
        """(−scale Σ_{i∈S} g_i (c, d), Σ_{i∈S} g_i² (c, d) or None) over the ratings ``index`` (c, n) of each chain, or
        all of them when ``index`` is None."""
        n_chains = theta.shape[0]
        tau = np.ascontiguousarray(self._per_chain(self.tau, n_chains, "output precisions"), dtype=float)
        out = np.zeros(theta.shape)
        squares = np.zeros(theta.shape) if with_moments else np.zeros((n_chains, 0))
        if self.kernels:
            full = index is None
            rows = np.zeros((n_chains, 0), dtype=np.int64) if full else np.ascontiguousarray(index, dtype=np.int64)
            bpmf_kernels.gradient_sums(theta, self._table(), rows, full, self.n_users, self.n_items, self.latent_dim, self.base,
                          tau, float(scale), out, squares, with_moments)
            return out, squares if with_moments else None
        U, V, a, b = self.unpack(theta)
        for chain in range(n_chains):
            chosen = np.arange(self.n_data) if index is None else np.asarray(index[chain])
            sums = self._views(out[chain])  # views: np.add.at into them fills ``out``
            sums_of_squares = self._views(squares[chain]) if with_moments else None
            for start in range(0, chosen.size, _BLOCK):
                rows = chosen[start:start + _BLOCK]
                u, v = self.users[rows], self.items[rows]
                residual = self.y[rows] - (self.base + a[chain, u] + b[chain, v]
                                           + np.einsum("ik,ik->i", U[chain, u], V[chain, v]))
                g = tau[chain] * residual  # τ e_i
                parts = (g[:, None] * V[chain, v], g[:, None] * U[chain, u], g, g)
                for target, where, part in zip(sums, (u, v, u, v), parts):
                    np.add.at(target, where, -scale * part)
                if with_moments:
                    for target, where, part in zip(sums_of_squares, (u, v, u, v), parts):
                        np.add.at(target, where, part**2)
        return out, squares if with_moments else None

    # -- potential and gradients -----------------------------------------------------------------------
    def potential(self, theta):
        """U(θ) = ½τ Σ_train (y − ŷ)² + ½ Σ_g λ_g ‖θ_g‖² at the current hyperparameters, shape (c,)."""
        theta = self._theta(theta)
        tau = self._per_chain(self.tau, theta.shape[0], "output precisions")
        self._lambdas(theta.shape[0])
        return 0.5 * tau * self.squared_residuals(theta) + self.precisions.prior_potential(theta)

    def gradient(self, theta):
        """Full-data ∇U(θ) = −τ Σ_train e_i ∂ŷ_i/∂θ + λθ, shape (c, d)."""
        theta = self._theta(theta)
        out, _ = self._likelihood_sums(theta, None, 1.0, False)
        return self._add_prior_gradient(theta, out)

    def log_prior_gradient(self, theta):
        """∇log p(θ | λ) = −λ_g θ_g per coordinate, shape (c, d)."""
        theta = self._theta(theta)
        return -self._add_prior_gradient(theta, np.zeros(theta.shape))

    def engine_functions(self) -> Optional[dict]:
        """The engine's sums door (:func:`sgmcmc.engine.estimators.sums_gradient`; no rows door: the per-rating
        gradients would be (n, d) with d = 204,666): :func:`~sgmcmc.targets.bpmf_kernels.row_gradient_sums` and
        :func:`~sgmcmc.targets.bpmf_kernels.prior_gradient` on the rating rows (N, 3), given each chain's τ, λ and the
        layout (:data:`~sgmcmc.targets.bpmf_kernels.STATE`), read at every block's start (the Gibbs steps between blocks
        redraw them), N; None with ``kernels`` off (the numpy reference)."""
        if not self.kernels:
            return None
        return {"row_gradient_sums": bpmf_kernels.row_gradient_sums, "prior_gradient": bpmf_kernels.prior_gradient,
                "data": self._table(), "n_data": self.n_data, "estimator_state": self._engine_state,
                "estimator_size": len(bpmf_kernels.STATE) + 2 * len(PRECISIONS) - 1}

    def _engine_state(self, n_chains: int) -> np.ndarray:
        """(c, 12): each chain's :data:`~sgmcmc.targets.bpmf_kernels.STATE` and its grouped prior's λ and group ends."""
        tau = self._per_chain(self.tau, n_chains, "output precisions")
        constants = np.tile([self.base, self.n_users, self.n_items, self.latent_dim], (n_chains, 1))
        ends = np.tile([part.stop for part in self.slices[:-1]], (n_chains, 1))
        return np.column_stack([tau, constants, self._lambdas(n_chains), ends]).astype(float)

    def log_likelihood_gradients(self, theta, index):
        """g_i = ∇_θ log p(y_i | θ) = τ e_i ∂ŷ_i/∂θ for θ (c, d) and rating indices (c, b): shape (c, b, d), dense
        (the DataTarget protocol's reference; small sizes only, refused above 2**26 entries)."""
        theta = self._theta(theta)
        index = np.asarray(index)
        if index.ndim != 2 or index.shape[0] != theta.shape[0]:
            raise ValueError(f"index must have shape ({theta.shape[0]}, batch); got {index.shape}")
        if index.size * self.dim > _DENSE_LIMIT:
            raise ValueError(f"log_likelihood_gradients would build a {index.shape + (self.dim,)} array; it is the "
                             "small-size reference (use stochastic_gradient)")
        n_chains, batch = index.shape
        tau = self._per_chain(self.tau, n_chains, "output precisions")
        U, V, a, b = self.unpack(theta)
        k, nu = self.latent_dim, self.n_users
        out = np.zeros((n_chains, batch, self.dim))
        position, columns = np.arange(batch)[:, None], np.arange(k)[None, :]
        for chain in range(n_chains):
            u, v = self.users[index[chain]], self.items[index[chain]]
            g = tau[chain] * (self.y[index[chain]] - (self.base + a[chain, u] + b[chain, v]
                                                      + np.einsum("ik,ik->i", U[chain, u], V[chain, v])))
            out[chain, position, u[:, None] * k + columns] = g[:, None] * V[chain, v]
            out[chain, position, (nu + v[:, None]) * k + columns] = g[:, None] * U[chain, u]
            out[chain, position[:, 0], self._bias + u] = g
            out[chain, position[:, 0], self._bias + nu + v] = g
        return out

    # -- minibatches -----------------------------------------------------------------------------------
    def minibatch(self, rng: np.random.Generator, n_chains: int) -> np.ndarray:
        """n distinct training-rating indices per chain, (n_chains, n): ``rng.choice(N, n, replace=False,
        shuffle=False)`` once per chain (a uniformly random n-subset in O(n) time and memory, by Floyd's algorithm when
        n <= N/50 as here, 4,000 of ~800,000; not the base class's N keys per step). When n = N every chain gets
        ``range(N)`` and nothing is drawn."""
        n_chains = int(n_chains)
        if self.batch_size == self.n_data:
            return np.tile(np.arange(self.n_data), (n_chains, 1))
        return np.stack([rng.choice(self.n_data, self.batch_size, replace=False, shuffle=False)
                         for _ in range(n_chains)])

    def stochastic_gradient(self, theta, rng):
        """∇Ũ(θ) = −(N/n) Σ_{i∈S̃} g_i + λθ of one :meth:`minibatch` draw, shape (c, d): the likelihood's part
        scatter-added over the minibatch's ratings only (the kernel, or ``np.add.at``), the prior's over all θ."""
        theta = self._theta(theta)
        out, _ = self._likelihood_sums(theta, self.minibatch(rng, theta.shape[0]), self.n_data / self.batch_size,
                                       False)
        return self._add_prior_gradient(theta, out)

    # V(θ) would be d × d (d = 204,666 at full size): unknown, as the base class has it (the samplers take their own
    # estimate or none)
    noise_covariance = Target.noise_covariance

    def initial_position(self, n_chains, rng):
        """U, V ~ N(0, initial_scale²) entrywise (one ``rng.standard_normal`` call of (c, (n_users + n_items)·k)),
        biases 0."""
        theta = np.zeros((int(n_chains), self.dim))
        theta[:, :self._bias] = self.initial_scale * rng.standard_normal((int(n_chains), self._bias))
        return theta

    # -- hyperparameters (Gibbs steps) -------------------------------------------------------------------
    def hyperparameters(self) -> dict:
        """λ_U, λ_V, λ_a, λ_b and τ per chain ((c,), or (1,) before the first update)."""
        return {**self.precisions.as_dict(), PRECISION_RATING: self.tau.copy()}

    def set_hyperparameters(self, values: dict) -> None:
        """Inverse of :meth:`hyperparameters`."""
        names = set(PRECISIONS) | {PRECISION_RATING}
        if set(values) != names:
            raise ValueError(f"{self.name}: hyperparameters {sorted(values)} given, expected {sorted(names)}")
        arrays = {name: np.atleast_1d(np.asarray(value, dtype=float)) for name, value in values.items()}
        if len({a.shape for a in arrays.values()}) != 1 or arrays[PRECISION_RATING].ndim != 1:
            raise ValueError(f"{self.name}: every hyperparameter needs one value per chain")
        if any(np.any(~np.isfinite(a) | (a <= 0)) for a in arrays.values()):
            raise ValueError(f"{self.name}: precisions must be finite and > 0")
        self.precisions.load(arrays)
        self.tau = arrays[PRECISION_RATING].copy()

    def rating_conditional(self, theta) -> tuple[float, np.ndarray]:
        """(shape, rate (c,)) of τ | θ ~ Gamma(a + N/2, b + ½ Σ_train (y − ŷ)²)."""
        return self.hyper_shape + self.n_data / 2, self.hyper_rate + 0.5 * self.squared_residuals(theta)

    def reset_hyperparameters(self) -> None:
        """Every λ and τ = 1 (the start of a run)."""
        self.precisions.reset()
        self.tau = np.ones(1)

    def gibbs_update(self, theta, rng, mode: bool = False) -> None:
        """Every precision from its conditional given θ (c, d) (module docstring): λ by one ``rng.gamma`` call of
        (c, 4) values (:meth:`GammaPrecisions.draw`), then τ by one of (c,); with ``mode`` the conditionals' modes
        (shape − 1)⁺ / rate instead, drawing nothing."""
        theta = self._theta(theta)
        shape, rate = self.rating_conditional(theta)
        if mode:
            self.precisions.mode(theta)
            self.tau = np.maximum(shape - 1.0, 0.0) / rate
        else:
            self.precisions.draw(theta, rng)
            self.tau = rng.gamma(shape, 1.0 / rate)

    # -- predictions (SPEC §3 E8) --------------------------------------------------------------------------
    def _require_test_set(self):
        if not self.has_test_set:
            raise TypeError(f"target {self.name!r} has no test set")

    def predict(self, theta) -> np.ndarray:
        """The predicted test ratings 1 + 4ŷ clipped to [1, 5], shape (c, n_test, 1)."""
        self._require_test_set()
        theta = self._theta(theta)
        y_hat = self._predictions(theta, self.test_users, self.test_items)
        return np.clip(1.0 + 4.0 * y_hat, 1.0, 5.0)[:, :, None]

    def predictive_metrics(self, prediction) -> dict:
        """{"rmse": (c,)}: the RMSE of predictions (c, n_test, 1) against the test ratings (1–5 scale)."""
        self._require_test_set()
        prediction = np.asarray(prediction, dtype=float)
        if prediction.ndim == 3:
            prediction = prediction[:, :, 0]
        if prediction.ndim != 2 or prediction.shape[1] != self.test_ratings.size:
            raise ValueError(f"prediction must have shape (n_chains, {self.test_ratings.size}, 1); got "
                             f"{np.shape(prediction)}")
        return {"rmse": np.sqrt(np.mean((prediction - self.test_ratings[None, :]) ** 2, axis=1))}


def bpmf_movielens(data_dir=None, ratings_file=None, fold: int = 1, n_folds: int = 5, latent_dim: int = 20,
                   batch_size: int = 4000, base: float = BASE, initial_scale: float = 0.03, hyper_shape: float = 1.0,
                   hyper_rate: float = 1.0, gibbs_every: int = 2000, predict_every: Optional[int] = None,
                   kernels: bool = True, evaluate_on: str = "test") -> BPMF:
    """T12: BPMF on MovieLens-1M (SPEC §2 T12), named "bpmf_movielens": the ratings of
    :func:`sgmcmc.data.movielens.load_movielens` (``<data_dir>/movielens/ml-1m/ratings.dat``, fetched when missing, or
    ``ratings_file``), test fold ``fold`` of ``n_folds`` by the authors' mknfold.py
    (:func:`sgmcmc.data.movielens.fold_mask`), the other ratings for training; users and items are all those of the
    file. ``evaluate_on`` "validation" leaves the test fold out altogether and splits the other ratings again by the
    same rule (their fold ``fold`` of ``n_folds``, in their order) into a validation set, scored in place of the test
    set, and the ratings that train (a setting chosen on it never sees the test fold). The parameters are checked
    before any data is read (a ValueError naming the bad one); a DataError of the loader propagates unchanged."""
    from sgmcmc.data.movielens import fold_mask, load_movielens

    n_folds = _check_count("n_folds", n_folds, 2)
    fold = _check_count("fold", fold, 1, n_folds)
    latent_dim = _check_count("latent_dim", latent_dim, 1)
    batch_size = _check_count("batch_size", batch_size, 1)
    base = _finite_number("base", base)
    initial_scale = positive_number("initial_scale", initial_scale)
    hyper_shape = positive_number("hyper_shape", hyper_shape)
    hyper_rate = positive_number("hyper_rate", hyper_rate)
    gibbs_every = _check_count("gibbs_every", gibbs_every, 0)
    if predict_every is not None:
        predict_every = _check_count("predict_every", predict_every, 0)
    if evaluate_on not in ("test", "validation"):
        raise ValueError(f"evaluate_on must be test or validation; got {evaluate_on!r}")
    data = load_movielens(data_dir, ratings_file)
    test = fold_mask(len(data), fold, n_folds)
    train = ~test
    if evaluate_on == "validation":  # the training ratings split again: fold `fold` of them scores, the rest trains
        validation = np.zeros_like(train)
        validation[np.flatnonzero(train)] = fold_mask(int(train.sum()), fold, n_folds)
        test, train = validation, train & ~validation
    if test.sum() < 1 or train.sum() < 2:
        raise ValueError(f"fold {fold} of {n_folds} leaves {int(train.sum())} training and {int(test.sum())} "
                         f"{'validation' if evaluate_on == 'validation' else 'test'} ratings of {data.path}; too few")
    return BPMF(data.users[train], data.items[train], data.ratings[train], data.n_users, data.n_items,
                data.users[test], data.items[test], data.ratings[test], latent_dim=latent_dim,
                batch_size=batch_size, base=base, initial_scale=initial_scale, hyper_shape=hyper_shape,
                hyper_rate=hyper_rate, gibbs_every=gibbs_every, predict_every=predict_every, name="bpmf_movielens",
                kernels=kernels)
