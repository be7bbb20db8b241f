"""T13, the mixture posterior of Welling & Teh (2011, §5.1; SPEC §2 T13):

θ₁ ~ N(0, 10), θ₂ ~ N(0, 1) (variances), x_i ~ ½ N(θ₁, 2) + ½ N(θ₁ + θ₂, 2), i = 1..N (N = 100),
the data drawn once from θ = (0, 1) with ``numpy.random.default_rng(data_seed)``: first the N component
labels (``integers(0, 2, N)``), then N standard normals, x_i = θ₁ + label_i·θ₂ + √2·normal_i.

U(θ) = θ₁²/20 + θ₂²/2 − Σ_i log(e^{a_i} + e^{b_i}), a_i = −(x_i − θ₁)²/4, b_i = −(x_i − θ₁ − θ₂)²/4
(constants dropped; ``log_density`` adds the normaliser). Per datum, with w_i = σ(b_i − a_i) the
responsibility of the second component, ∇_θ log p(x_i | θ) = ((x_i − θ₁ − w_iθ₂)/2, w_i(x_i − θ₁ − θ₂)/2).

Stochastic gradient (Welling–Teh; SPEC §1 "Common"): a minibatch of ``batch_size`` = n indices per
chain, drawn uniformly **with replacement** from the ``rng`` passed in (one ``integers`` call of shape
(n_chains, n) per evaluation), ∇Ũ = ∇(−log p(θ)) − (N/n) Σ_{minibatch} ∇ log p(x_i | θ). The gradient
noise is not Gaussian and depends on θ; ``noise_covariance`` is :class:`~sgmcmc.targets.base.Target`'s None (unknown),
so ``noise_estimate: known`` subtracts nothing, as ``zero`` does. :meth:`minibatch_noise_covariance` gives its exact covariance for
diagnostics. The engine's blocks take the same estimator on rows (:meth:`WellingTehMixture.engine_functions`:
:func:`row_gradients`, :func:`prior_gradient`, minibatches with replacement; and U's terms for a Metropolis–Hastings
test, :func:`row_log_likelihoods` and :func:`prior_log_density`, with the potential's constants dropped).

Exact density: normalised numerically by the trapezoidal rule on a 0.02-spaced grid over the box
[−3, 4] × [−5, 5] (construction fails if the posterior is not negligible on the box boundary).
Whether the posterior is bimodal depends on the data draw: with this generator ``data_seed`` 0 gives a
single mode near (0.44, 0.32); ``data_seed`` 3 gives Welling–Teh's two modes near (0, 1) and (1, −1).
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
from scipy import optimize, special
from scipy.ndimage import maximum_filter

from sgmcmc.targets.base import Target

PRIOR_VARIANCES = (10.0, 1.0)
DATA_VARIANCE = 2.0
TRUE_THETA = (0.0, 1.0)
# Welling & Teh's modes (their Fig. 1; SPEC T13): the reference points of the "share near each mode".
PUBLISHED_MODES = ((0.0, 1.0), (1.0, -1.0))

_BOX = ((-3.0, 4.0), (-5.0, 5.0))
_BOX_SPACING = 0.02
_CHUNK_POINTS = 20_000  # points per chunk in the all-data evaluations: (chunk, N) temporaries stay ~16 MB


def draw_data(n_data: int, data_seed: int) -> np.ndarray:
    """The N data points from θ = (0, 1) (see the module docstring for the exact order of draws)."""
    rng = np.random.default_rng(data_seed)
    labels = rng.integers(0, 2, n_data)
    return TRUE_THETA[0] + labels * TRUE_THETA[1] + np.sqrt(DATA_VARIANCE) * rng.standard_normal(n_data)


def mixture_potential(theta: np.ndarray, data: np.ndarray) -> np.ndarray:
    """U(θ) = θ₁²/20 + θ₂²/2 − Σ_i log(e^{a_i} + e^{b_i}) for θ (n, 2) and data (N,); shape (n,). No chunking."""
    a, b = _exponents(theta, data)
    prior = 0.5 * np.sum(theta**2 / np.asarray(PRIOR_VARIANCES), axis=1)
    return prior - np.sum(np.logaddexp(a, b), axis=1)


def _exponents(theta: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """a, b of shape (n, m) for θ (n, 2) and data x (m,) or (n, m)."""
    x = x if x.ndim == 2 else x[None, :]
    first = x - theta[:, :1]
    second = first - theta[:, 1:2]
    return -(first**2) / (2.0 * DATA_VARIANCE), -(second**2) / (2.0 * DATA_VARIANCE)


def _datum_gradients_sum(theta: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Σ_i ∇_θ log p(x_i | θ) over the columns of x ((m,) shared or (n, m) per chain); shape (n, 2)."""
    x = x if x.ndim == 2 else x[None, :]
    first = x - theta[:, :1]
    second = first - theta[:, 1:2]
    weight = special.expit((first**2 - second**2) / (2.0 * DATA_VARIANCE))  # w = σ(b − a)
    g1 = np.sum(first - weight * theta[:, 1:2], axis=1) / DATA_VARIANCE
    g2 = np.sum(weight * second, axis=1) / DATA_VARIANCE
    return np.stack([g1, g2], axis=1)


def row_gradients(theta, rows):
    """∇_θ log p(x_i | θ) = ((x_i − θ₁ − w_iθ₂)/2, w_i(x_i − θ₁ − θ₂)/2), w_i = σ(b_i − a_i), of the rows (m, 1) for
    one chain's θ (2,) (the module docstring; :func:`_datum_gradients_sum` per datum)."""
    out = np.empty((rows.shape[0], 2))
    for i in range(rows.shape[0]):
        first = rows[i, 0] - theta[0]
        second = first - theta[1]
        weight = 1.0 / (1.0 + np.exp((second * second - first * first) / (2.0 * DATA_VARIANCE)))
        out[i, 0] = (first - weight * theta[1]) / DATA_VARIANCE
        out[i, 1] = weight * second / DATA_VARIANCE
    return out


def prior_gradient(theta):
    """∇log p(θ) = (−θ₁/10, −θ₂) of one chain."""
    return np.array([-theta[0] / PRIOR_VARIANCES[0], -theta[1] / PRIOR_VARIANCES[1]])


def row_log_likelihoods(theta, rows):
    """log(e^{a_i} + e^{b_i}) (m,) of the rows x_i (m, 1) for one chain's θ (2,), computed as max(a, b) +
    log1p(e^{−|a − b|}) (``np.logaddexp``, finite for any finite θ): log p(x_i | θ) less the constant log ½ − ½ log 4π
    that :func:`mixture_potential` drops."""
    out = np.empty(rows.shape[0])
    for i in range(rows.shape[0]):
        first = rows[i, 0] - theta[0]
        second = first - theta[1]
        a = -(first * first) / (2.0 * DATA_VARIANCE)
        b = -(second * second) / (2.0 * DATA_VARIANCE)
        out[i] = max(a, b) + np.log1p(np.exp(-abs(a - b)))
    return out


def prior_log_density(theta):
    """log p(θ) = −θ₁²/20 − θ₂²/2 of one chain, a float, less the constant −½ log(2π·10) − ½ log 2π that
    :func:`mixture_potential` drops."""
    return -0.5 * (theta[0] ** 2 / PRIOR_VARIANCES[0] + theta[1] ** 2 / PRIOR_VARIANCES[1])


class WellingTehMixture(Target):
    """The two-parameter mixture posterior of Welling & Teh (2011) with minibatch stochastic gradients.

    Parameters
    ----------
    data_seed : int
        Seed of the data draw (default 0; the Welling–Teh experiment uses 3, see the module docstring).
    n_data : int
        N, the number of data points (default 100).
    batch_size : int
        n, the minibatch size of the stochastic gradient (default 1, as Welling–Teh).
    initial_position : sequence of two floats, optional
        Centre of θ₀ (default (0, 0)).
    initial_spread : float
        θ₀ = initial_position + initial_spread·N(0, I) (default 0: every chain starts at the centre).
    """

    name = "welling_teh_mixture"
    dim = 2
    has_exact_density = True

    def __init__(self, data_seed: int = 0, n_data: int = 100, batch_size: int = 1,
                 initial_position: Optional[Sequence[float]] = None, initial_spread: float = 0.0):
        if n_data < 1:
            raise ValueError("n_data must be >= 1")
        if not 1 <= batch_size <= n_data:
            raise ValueError(f"batch_size must be between 1 and n_data={n_data}")
        if initial_spread < 0:
            raise ValueError("initial_spread must be >= 0")
        centre = np.zeros(2) if initial_position is None else np.asarray(initial_position, dtype=float)
        if centre.shape != (2,):
            raise ValueError("initial_position must have 2 entries")
        self.data_seed, self.n_data, self.batch_size = int(data_seed), int(n_data), int(batch_size)
        self.initial_centre, self.initial_spread = centre, float(initial_spread)
        self.data = draw_data(self.n_data, self.data_seed)
        self._prior_precision = 1.0 / np.asarray(PRIOR_VARIANCES)
        self._normalise()

    # -- potential and gradients ---------------------------------------------------------------------
    def _chunks(self, theta: np.ndarray, function) -> np.ndarray:
        theta = np.asarray(theta, dtype=float)
        if theta.shape[0] <= _CHUNK_POINTS:
            return function(theta)
        return np.concatenate([function(theta[s : s + _CHUNK_POINTS]) for s in range(0, theta.shape[0], _CHUNK_POINTS)])

    def potential(self, theta):
        """U(θ) = −log p(θ) − Σ_i log p(x_i | θ) up to a constant, shape (n,)."""
        return self._chunks(theta, lambda chunk: mixture_potential(chunk, self.data))

    def prior_gradient(self, theta: np.ndarray) -> np.ndarray:
        """∇(−log p(θ)) = (θ₁/10, θ₂)."""
        return theta * self._prior_precision

    def gradient(self, theta):
        """Exact ∇U on all N data points, shape (n, 2)."""
        return self._chunks(theta, lambda chunk: self.prior_gradient(chunk) - _datum_gradients_sum(chunk, self.data))

    def stochastic_gradient(self, theta, rng):
        """∇(−log p(θ)) − (N/n)Σ_{minibatch}∇log p(x_i|θ): n indices per chain, uniform with replacement."""
        theta = np.asarray(theta, dtype=float)
        indices = rng.integers(0, self.n_data, size=(theta.shape[0], self.batch_size))
        scale = self.n_data / self.batch_size
        return self.prior_gradient(theta) - scale * _datum_gradients_sum(theta, self.data[indices])

    def engine_functions(self) -> dict:
        """What the engine's blocks take (the rows door of :func:`sgmcmc.engine.estimators.source_of`): one datum a
        row, the per-datum gradients and the prior's of one chain, minibatches drawn with replacement as
        :meth:`stochastic_gradient` draws them; and U's terms (:func:`row_log_likelihoods`, :func:`prior_log_density`:
        −Σ_i of the one minus the other is :meth:`potential`)."""
        return {"row_gradients": row_gradients, "prior_gradient": prior_gradient,
                "row_log_likelihoods": row_log_likelihoods, "prior_log_density": prior_log_density,
                "data": self.data[:, None], "n_data": self.n_data, "replacement": True}

    def minibatch_noise_covariance(self, theta: np.ndarray) -> np.ndarray:
        """Exact covariance of ∇Ũ − ∇U at θ (diagnostics only): (N²/n)·Cov_i[∇log p(x_i|θ)], i uniform.

        Shape (n, 2, 2); the covariance of one uniformly drawn datum's gradient, scaled by N²/n
        (sampling with replacement).
        """
        theta = np.asarray(theta, dtype=float)
        x = self.data[None, :]
        first = x - theta[:, :1]
        second = first - theta[:, 1:2]
        weight = special.expit((first**2 - second**2) / (2.0 * DATA_VARIANCE))
        per_datum = np.stack([first - weight * theta[:, 1:2], weight * second], axis=2) / DATA_VARIANCE  # (n, N, 2)
        centred = per_datum - per_datum.mean(axis=1, keepdims=True)
        covariance = np.einsum("nia,nib->nab", centred, centred) / self.n_data
        return covariance * self.n_data**2 / self.batch_size

    # -- exact density ---------------------------------------------------------------------------------
    def box_grid(self, spacing: float = _BOX_SPACING) -> tuple[np.ndarray, np.ndarray]:
        """The axes of the normalisation grid over the box [−3, 4] × [−5, 5]."""
        (x0, x1), (y0, y1) = _BOX
        return (np.linspace(x0, x1, int(round((x1 - x0) / spacing)) + 1),
                np.linspace(y0, y1, int(round((y1 - y0) / spacing)) + 1))

    def _normalise(self) -> None:
        axis1, axis2 = self.box_grid()
        grid = np.stack(np.meshgrid(axis1, axis2, indexing="ij"), axis=-1).reshape(-1, 2)
        log_unnormalised = -self.potential(grid).reshape(len(axis1), len(axis2))
        peak = float(log_unnormalised.max())
        density = np.exp(log_unnormalised - peak)
        boundary = max(density[0].max(), density[-1].max(), density[:, 0].max(), density[:, -1].max())
        if boundary > 1e-12:
            raise ValueError(f"data_seed={self.data_seed}: the posterior is not negligible on the boundary of the "
                             f"normalisation box {_BOX} (relative density {boundary:.2g})")
        mass = np.trapezoid(np.trapezoid(density, axis2, axis=1), axis1)
        self.log_normaliser = float(np.log(mass) + peak)
        weights = density / mass  # density values; the trapezoid weights are applied in the moments
        marginal_weight = np.trapezoid(weights, axis2, axis=1)  # p(θ₁)
        other_weight = np.trapezoid(weights, axis1, axis=0)  # p(θ₂)
        self._mean = np.array([np.trapezoid(axis1 * marginal_weight, axis1), np.trapezoid(axis2 * other_weight, axis2)])
        self._second = np.array([np.trapezoid(axis1**2 * marginal_weight, axis1),
                                 np.trapezoid(axis2**2 * other_weight, axis2)])
        self._grid_axes, self._grid_log_density = (axis1, axis2), log_unnormalised - self.log_normaliser

    def log_density(self, theta):
        """Exact normalised log p(θ | x), shape (n,)."""
        return -self.potential(np.asarray(theta, dtype=float)) - self.log_normaliser

    def grid_log_density(self) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
        """((θ₁ axis, θ₂ axis), log density on that grid) of the normalisation box (for figures)."""
        return self._grid_axes, self._grid_log_density

    def exact_moments(self):
        return self._mean.copy(), self._second.copy()

    def histogram_edges(self):
        """KL grid: 0.1 × 0.1 bins on [−2, 3] × [−3.5, 3.5] (holds all but ~1e−7 of the posterior mass for
        the data seeds we checked)."""
        return np.linspace(-2.0, 3.0, 51), np.linspace(-3.5, 3.5, 71)

    def modes(self) -> np.ndarray:
        """The local maxima of the posterior (refined from the normalisation grid), highest first; (k, 2)."""
        (axis1, axis2), log_density = self.grid_log_density()
        is_peak = (log_density == maximum_filter(log_density, size=9)) & (log_density > log_density.max() - 30)
        found = []
        for i, j in np.argwhere(is_peak):
            result = optimize.minimize(lambda t: float(self.potential(t[None])[0]), [axis1[i], axis2[j]],
                                       jac=lambda t: self.gradient(t[None])[0], method="BFGS")
            point = result.x
            if not any(np.linalg.norm(point - other) < 1e-3 for other in found):
                found.append(point)
        found.sort(key=lambda point: -float(self.log_density(point[None])[0]))
        return np.array(found)

    def initial_position(self, n_chains, rng):
        return self.initial_centre + self.initial_spread * rng.standard_normal((n_chains, self.dim))
