"""Exact reference quantities by quadrature (SPEC §3 "Metric definitions": p_i = exact bin mass).

All densities are given as ``log_density(theta)`` mapping an array of shape ``(m, d)`` to ``(m,)``; they must be
normalised (the functions here do not renormalise).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from scipy import integrate, special

__all__ = ["bin_masses_1d", "bin_masses_2d", "expectation_1d", "gauss_hermite_moments"]

# Largest number of quadrature nodes evaluated in one call of ``log_density`` in 2D (16 MB of (m, 2) float64
# input; leaves room for the temporaries a vectorised log density creates while staying well below ~200 MB).
_MAX_NODES_PER_CALL = 1_000_000


def _gauss_legendre(edges: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and weights of an ``n``-point Gauss–Legendre rule on every interval of ``edges``.

    Returns two arrays of shape ``(len(edges) - 1, n)``.
    """
    edges = np.asarray(edges, dtype=float)
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
        raise ValueError("edges must be a strictly increasing 1D array with at least two entries")
    x, w = special.roots_legendre(int(n))
    half = 0.5 * np.diff(edges)[:, None]
    mid = 0.5 * (edges[1:] + edges[:-1])[:, None]
    return mid + half * x[None, :], half * w[None, :]


def bin_masses(log_density: Callable[[np.ndarray], np.ndarray], edges, dim: int) -> np.ndarray:
    """The exact masses of a target's KL grid (SPEC §3): :func:`bin_masses_1d` on the edges of a 1D grid (an array),
    :func:`bin_masses_2d` on those of a 2D grid (a pair of arrays)."""
    return bin_masses_1d(log_density, edges) if dim == 1 else bin_masses_2d(log_density, *edges)


def bin_masses_1d(
    log_density: Callable[[np.ndarray], np.ndarray], edges: np.ndarray, nodes_per_bin: int = 16
) -> np.ndarray:
    """Probability mass of each bin of a normalised 1D density (SPEC §3, KL metric: p_i).

    ``p_i = ∫_{e_i}^{e_{i+1}} exp(log_density(θ)) dθ`` by a ``nodes_per_bin``-point Gauss–Legendre rule on every bin;
    ``log_density`` is called once, on all nodes.

    Parameters
    ----------
    log_density : callable
        Normalised log density; maps ``(m, 1)`` to ``(m,)``.
    edges : ndarray, shape (k + 1,)
        Strictly increasing bin edges.
    nodes_per_bin : int, default 16
        Gauss–Legendre nodes per bin.

    Returns
    -------
    ndarray, shape (k,)
        Exact bin masses.
    """
    nodes, weights = _gauss_legendre(edges, nodes_per_bin)
    logp = np.asarray(log_density(nodes.reshape(-1, 1)), dtype=float).reshape(nodes.shape)
    return np.sum(weights * np.exp(logp), axis=1)


def bin_masses_2d(
    log_density: Callable[[np.ndarray], np.ndarray],
    edges_x: np.ndarray,
    edges_y: np.ndarray,
    nodes_per_bin: int = 8,
) -> np.ndarray:
    """Probability mass of each rectangle of a 2D grid (SPEC §3, KL metric: p_ij).

    Tensor-product Gauss–Legendre rule with ``nodes_per_bin`` nodes per axis in every rectangle
    ``[x_i, x_{i+1}] × [y_j, y_{j+1}]``. ``log_density`` is evaluated in chunks of whole rows of x-bins so that at most
    about 10⁶ nodes are passed per call.

    Parameters
    ----------
    log_density : callable
        Normalised log density; maps ``(m, 2)`` to ``(m,)``.
    edges_x, edges_y : ndarray
        Strictly increasing bin edges along each axis.
    nodes_per_bin : int, default 8
        Gauss–Legendre nodes per bin and axis.

    Returns
    -------
    ndarray, shape (len(edges_x) - 1, len(edges_y) - 1)
        Exact rectangle masses.
    """
    n = int(nodes_per_bin)
    xn, xw = _gauss_legendre(edges_x, n)  # (kx, n)
    yn, yw = _gauss_legendre(edges_y, n)  # (ky, n)
    kx, ky = xn.shape[0], yn.shape[0]
    y_flat = yn.reshape(-1)
    rows = max(1, _MAX_NODES_PER_CALL // (n * n * ky))
    out = np.empty((kx, ky))
    for start in range(0, kx, rows):
        stop = min(kx, start + rows)
        xs = xn[start:stop].reshape(-1)
        pts = np.empty((xs.size, y_flat.size, 2))
        pts[:, :, 0] = xs[:, None]
        pts[:, :, 1] = y_flat[None, :]
        logp = np.asarray(log_density(pts.reshape(-1, 2)), dtype=float)
        dens = np.exp(logp).reshape(stop - start, n, ky, n)
        out[start:stop] = np.einsum("ia,jb,iajb->ij", xw[start:stop], yw, dens)
    return out


def expectation_1d(
    log_density: Callable[[np.ndarray], np.ndarray],
    func: Callable[[np.ndarray], np.ndarray],
    lower: float = -np.inf,
    upper: float = np.inf,
) -> float:
    """``∫_lower^upper exp(log_density(θ)) func(θ) dθ`` by adaptive quadrature (``scipy.integrate.quad``).

    Used for exact moments (SPEC §4.4: errors of E θ, E θ²), e.g. ``func = lambda t: t**2``.

    Parameters
    ----------
    log_density : callable
        Normalised log density; maps ``(m, 1)`` to ``(m,)``.
    func : callable
        Maps a float array of shape ``(m,)`` to ``(m,)`` (called with ``m = 1``).
    lower, upper : float
        Integration limits (may be infinite).

    Returns
    -------
    float
    """

    def integrand(t: float) -> float:
        arr = np.array([t], dtype=float)
        logp = np.asarray(log_density(arr[:, None]), dtype=float).reshape(-1)[0]
        return float(np.exp(logp) * np.asarray(func(arr), dtype=float).reshape(-1)[0])

    value, _ = integrate.quad(integrand, lower, upper, epsabs=1e-13, epsrel=1e-11, limit=500)
    return float(value)


def gauss_hermite_moments(potential: Callable[[np.ndarray], np.ndarray], centre: np.ndarray, covariance: np.ndarray,
                          nodes_per_axis: int = 20, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    """(E θ, Cov θ) of p(θ) ∝ exp(−U(θ)) in d dimensions by a tensor Gauss–Hermite rule about a Gaussian N(m, Σ)
    (e.g. the Laplace approximation): with θ = m + √2 L x, L Lᵀ = Σ,

        ∫ f(θ) e^{−U(θ)} dθ ∝ Σ_k w_k f(θ_k) e^{−U(θ_k) + |x_k|²},

    w_k, x_k the products of the 1-D rule's weights and nodes (weight e^{−x²}); the normalising constant cancels in
    the ratios. Exact for polynomials of degree < 2·``nodes_per_axis`` times e^{−|x|²}, so accurate when p is a
    smooth deformation of the Gaussian. ``potential`` maps (m, d) to (m,), called on at most ``block`` nodes at once;
    nodes_per_axis^d nodes in all."""
    centre = np.asarray(centre, dtype=float)
    d = centre.size
    factor = np.linalg.cholesky(np.asarray(covariance, dtype=float))
    x, w = special.roots_hermite(int(nodes_per_axis))
    grid = np.stack(np.meshgrid(*([x] * d), indexing="ij"), axis=-1).reshape(-1, d)
    log_weights = np.sum(np.log(np.stack(np.meshgrid(*([w] * d), indexing="ij"), axis=-1).reshape(-1, d)), axis=1)
    theta = centre + np.sqrt(2.0) * grid @ factor.T
    log_mass = np.concatenate([-potential(theta[start:start + block]) for start in range(0, len(theta), block)])
    log_mass += log_weights + np.sum(grid**2, axis=1)
    mass = np.exp(log_mass - log_mass.max())
    mass /= mass.sum()
    mean = mass @ theta
    centred = theta - mean
    return mean, (centred * mass[:, None]).T @ centred
