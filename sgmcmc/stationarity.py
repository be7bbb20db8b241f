"""Stationarity check: does the continuous dynamics of a sampler leave p(z) ∝ exp(−H(z)) invariant?

Ma et al. 2015, Eq. 3 and Theorem 1 (Fokker–Planck); SPEC §0 K1 (the sign of Γ), §4.3 (B̂).

A recipe sampler is the SDE of Ma et al. (2015), Eq. 3, with the Γ sign of SPEC §0 K1,

    dz = f(z) dt + sqrt(2 D(z)) dW,   f = −(D + Q)∇H + Γ,   Γ_i = Σ_j ∂_j(D_ij + Q_ij),

and Theorem 1 says that p ∝ exp(−H) is then stationary: the Fokker–Planck operator

    L*p = −Σ_i ∂_i(f_i p) + Σ_ij ∂_i ∂_j(D^eff_ij p)

vanishes. A stochastic-gradient sampler run at step size ε also carries the gradient noise
∇Ũ = ∇U + N(0, V): it enters the state through M = (D + Q)[:, θ-block] and adds ε²·M V Mᵀ of
covariance per step, i.e. a diffusion (ε/2)·M V Mᵀ, while the sampler subtracts B̂ from its
injected noise N(0, ε(2D − εB̂)). The diffusion the dynamics really has is therefore

    D^eff = D + (ε/2)·M V Mᵀ − (ε/2)·B̂.

This module evaluates L*p on a regular grid over the z-space with central finite differences
(fourth order by default, ``order=2`` for the 3-point stencils; the fields are evaluated on the grid
plus ghost layers, so L*p is known at every grid node, with no boundary condition: L*p is local) and
reports

    relative residual = ‖L*p‖₂ / ‖Σ_i |∂_i(f_i p)| + Σ_ij |∂_i∂_j(D^eff_ij p)|‖₂   (sums over the grid),

the size of the imbalance relative to the size of the terms that should cancel. For a stationary
sampler it is discretisation error only and shrinks like h^order under refinement; a sampler that
is not stationary (a missing Γ, gradient noise without matching friction, a wrong B̂) keeps a
residual of fixed size.

The exact ∇H used in f: for the samplers of this package, the recipe's ∇H̃ with its θ block replaced
by ``target.gradient`` (the other blocks — r, d(ξ − A) — carry no noise); for user-defined samplers,
the ∇H callable given, or fourth-order central differences of H.

What the check does not see: Metropolis–Hastings tests (HMC is checked as its Hamiltonian flow;
naive SGHMC with MH is still flagged), momentum resampling, and the O(ε) bias of the time
discretisation (splitting vs. Euler): it checks the continuous-time dynamics the sampler implies.

Pure numpy; no Hydra. The command line is ``check.py`` at the repository root.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence, Union

import numpy as np

from sgmcmc.recipe import check_recipe_matrices, finite_difference_correction

Field = Callable[[np.ndarray], np.ndarray]

#: Verdict threshold on the relative residual (``check.py`` and :meth:`StationarityResult.is_stationary`).
#: Measured at the default grids (order 4, V = 4, config step sizes): the stationary samplers give
#: ≤ 2e-4 on the 1D targets and ≤ 4.1e-3 on the 2D ones (4D grids), naive SGHMC / naive SGRHMC ≥ 5e-2;
#: 1e-2 sits between them. Smaller defects (SGRLD without the noise correction at ε = 0.02: 8.5e-3)
#: are caught by the refinement test of :func:`verdict`, not by the threshold.
STATIONARY_THRESHOLD = 1e-2

#: Halving the grid spacing must shrink the residual of a stationary sampler by at least this factor
#: (ideally 2^order: 16 at order 4); a residual that shrinks less is a defect of the dynamics (:func:`verdict`).
CONVERGING_RATIO = 2.0

#: Relative residuals below this are rounding level (stationary whatever the refinement ratio).
RESIDUAL_FLOOR = 1e-8

#: Default order of the central differences.
DEFAULT_ORDER = 4

#: Default points per axis by the dimension of z: (θ axes, other axes). Odd, so that halving the
#: resolution (:meth:`Grid.coarsened`) keeps every other node.
DEFAULT_POINTS = {1: (401, 401), 2: (201, 201), 3: (101, 101), 4: (41, 21), 5: (21, 11)}

_CHUNK = 1 << 16  # grid points per call of the callables
_SLAB_POINTS = 1 << 20  # grid points (with ghost layers) evaluated and differentiated at once


# ----------------------------------------------------------------------------------------------
# the grid and the result
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Grid:
    """A regular grid over the z-space: one increasing, evenly spaced 1D array of nodes per axis."""

    axes: tuple

    def __post_init__(self):
        axes = tuple(np.asarray(axis, dtype=float) for axis in self.axes)
        if not axes:
            raise ValueError("a grid needs at least one axis")
        for index, axis in enumerate(axes):
            if axis.ndim != 1 or axis.size < 3:
                raise ValueError(f"grid axis {index} must be a 1D array of at least 3 points")
            steps = np.diff(axis)
            if np.any(steps <= 0) or not np.allclose(steps, steps[0], rtol=1e-9, atol=0.0):
                raise ValueError(f"grid axis {index} must be increasing and evenly spaced")
        object.__setattr__(self, "axes", axes)

    @classmethod
    def regular(cls, bounds: Sequence[Sequence[float]], points: Union[int, Sequence[int]]) -> "Grid":
        """``bounds`` = [(lo, hi), ...] per axis; ``points`` per axis (one int for every axis)."""
        bounds = [tuple(map(float, b)) for b in bounds]
        if isinstance(points, (int, np.integer)):
            points = [int(points)] * len(bounds)
        points = [int(n) for n in points]
        if len(points) != len(bounds):
            raise ValueError(f"give one number of points per axis ({len(bounds)}), got {len(points)}")
        for lo, hi in bounds:
            if not hi > lo:
                raise ValueError(f"grid bounds ({lo}, {hi}) must satisfy lo < hi")
        return cls(tuple(np.linspace(lo, hi, n) for (lo, hi), n in zip(bounds, points)))

    @property
    def dim(self) -> int:
        return len(self.axes)

    @property
    def shape(self) -> tuple:
        return tuple(axis.size for axis in self.axes)

    @property
    def spacing(self) -> tuple:
        return tuple(float(axis[1] - axis[0]) for axis in self.axes)

    @property
    def bounds(self) -> tuple:
        return tuple((float(axis[0]), float(axis[-1])) for axis in self.axes)

    def coarsened(self) -> "Grid":
        """The same box with about half the points per axis (every other node when the count is odd)."""
        return Grid.regular(self.bounds, [max(3, (n + 1) // 2) for n in self.shape])

    def padded_axes(self, ghost: int = 1) -> tuple:
        """The axes with ``ghost`` extra nodes at each end (for the central-difference stencils)."""
        extra = np.arange(1, ghost + 1)
        return tuple(np.concatenate([a[0] - h * extra[::-1], a, a[-1] + h * extra]) for a, h in zip(self.axes, self.spacing))


@dataclass(frozen=True)
class StationarityResult:
    """What :func:`stationarity_residual` measured on one grid.

    relative_residual : ‖L*p‖₂ / ‖Σ|∂_i(f_i p)| + Σ|∂_i∂_j(D^eff_ij p)|‖₂ over the grid nodes.
    max_relative_residual : max |L*p| / max of the same scale field.
    max_abs_residual : max |L*p| with p scaled so that its largest value on the grid is 1.
    grid_shape, spacing, bounds : the grid (points, node spacing h and (lo, hi) per axis of z).
    step_size : ε used for the gradient-noise diffusion (0: none).
    order : order of the central differences.
    """

    relative_residual: float
    max_relative_residual: float
    max_abs_residual: float
    grid_shape: tuple
    spacing: tuple
    bounds: tuple
    step_size: float
    order: int

    def is_stationary(self, threshold: float = STATIONARY_THRESHOLD) -> bool:
        """relative_residual < threshold (default :data:`STATIONARY_THRESHOLD`)."""
        return self.relative_residual < threshold


def verdict(coarse: Optional[StationarityResult], fine: StationarityResult, threshold: float = STATIONARY_THRESHOLD) -> str:
    """Classify a sampler from its residual on a grid (``fine``) and, optionally, on the same box
    with half the resolution (``coarse``, e.g. from :meth:`Grid.coarsened`).

    - "stationary": the residual is below :data:`RESIDUAL_FLOOR` (rounding level), or it shrinks
      under refinement (coarse/fine ≥ :data:`CONVERGING_RATIO`; ideally 2^order) and is below
      ``threshold``;
    - "NOT stationary": it does not shrink (coarse/fine < :data:`CONVERGING_RATIO`): a defect of the
      dynamics, not discretisation error — however small it is;
    - "unresolved": it shrinks but is still above ``threshold``: refine the grid.

    Without ``coarse`` the verdict is the threshold alone ("stationary" / "NOT stationary").
    """
    if fine.relative_residual < RESIDUAL_FLOOR:
        return "stationary"
    if coarse is None:
        return "stationary" if fine.is_stationary(threshold) else "NOT stationary"
    if coarse.relative_residual < CONVERGING_RATIO * fine.relative_residual:
        return "NOT stationary"
    return "stationary" if fine.is_stationary(threshold) else "unresolved"


# ----------------------------------------------------------------------------------------------
# finite differences
# ----------------------------------------------------------------------------------------------
# Central-difference weights {offset: weight}: first and second derivative, order 2 and 4.
FIRST = {2: {-1: -0.5, 1: 0.5}, 4: {-2: 1 / 12, -1: -8 / 12, 1: 8 / 12, 2: -1 / 12}}
SECOND = {2: {-1: 1.0, 0: -2.0, 1: 1.0}, 4: {-2: -1 / 12, -1: 16 / 12, 0: -30 / 12, 1: 16 / 12, 2: -1 / 12}}


def _shifted(array: np.ndarray, ghost: int, offsets: dict) -> np.ndarray:
    """The grid block of a padded array (``ghost`` extra nodes per side), shifted by ``offsets`` {axis: o}."""
    return array[tuple(slice(ghost + offsets.get(a, 0), n - ghost + offsets.get(a, 0)) for a, n in enumerate(array.shape))]


def _derivative(field: np.ndarray, ghost: int, order: int, i: int, j: Optional[int], spacing) -> np.ndarray:
    """∂_i field (j None), ∂_i² field (j == i) or ∂_i∂_j field on the grid nodes."""
    if j is None:
        stencil = [({i: o}, w / spacing[i]) for o, w in FIRST[order].items()]
    elif i == j:
        stencil = [({i: o}, w / spacing[i] ** 2) for o, w in SECOND[order].items()]
    else:  # tensor product of the first-derivative stencils along i and j
        stencil = [
            ({i: oi, j: oj}, wi * wj / (spacing[i] * spacing[j]))
            for oi, wi in FIRST[order].items()
            for oj, wj in FIRST[order].items()
        ]
    out = np.zeros(tuple(n - 2 * ghost for n in field.shape))
    for offsets, weight in stencil:
        out += weight * _shifted(field, ghost, offsets)
    return out


def energy_gradient_by_differences(energy: Field, relative_step: float = 1e-3) -> Field:
    """∇H by fourth-order central differences of H (step relative_step·(1 + |z_i|))."""

    def gradient(z):
        z = np.asarray(z, dtype=float)
        out = np.empty_like(z)
        for i in range(z.shape[1]):
            h = relative_step * (1.0 + np.abs(z[:, i]))
            values = []
            for k in (-2, -1, 1, 2):
                shifted = z.copy()
                shifted[:, i] += k * h
                values.append(np.asarray(energy(shifted), dtype=float).reshape(-1))
            out[:, i] = (values[0] - 8.0 * values[1] + 8.0 * values[2] - values[3]) / (12.0 * h)
        return out

    return gradient


def _call_matrix(field, z: np.ndarray, size: int, name: str) -> np.ndarray:
    """Evaluate a matrix field (callable or constant) at z and broadcast it to (n, size, size)."""
    value = np.asarray(field(z) if callable(field) else field, dtype=float)
    n = z.shape[0]
    if value.ndim == 0:
        value = value * np.eye(size)
    if value.shape == (size, size):
        value = np.broadcast_to(value, (n, size, size))
    if value.shape != (n, size, size):
        raise ValueError(f"{name} must have shape ({size}, {size}) or (n, {size}, {size}), got {value.shape}")
    return value


def _probe_points(grid: Grid) -> np.ndarray:
    """Two points of the grid (its centre node and its first corner), shape (2, k)."""
    return np.array([[axis[axis.size // 2] for axis in grid.axes], [axis[0] for axis in grid.axes]])


# ----------------------------------------------------------------------------------------------
# the generic check
# ----------------------------------------------------------------------------------------------
def stationarity_residual(
    grid: Grid,
    energy: Field,
    diffusion: Field,
    curl: Field,
    *,
    energy_gradient: Optional[Field] = None,
    correction: Union[None, str, Field] = None,
    step_size: float = 0.0,
    gradient_noise=None,
    noise_coordinates: Optional[Sequence[int]] = None,
    noise_covariance: Optional[Field] = None,
    order: int = DEFAULT_ORDER,
    check: bool = True,
    tolerance: float = 1e-10,
) -> StationarityResult:
    """Relative Fokker–Planck residual of the recipe dynamics (H, D, Q, Γ) on ``grid``.

    Ma et al. 2015, Eq. 3 and Theorem 1 (Fokker–Planck); SPEC §0 K1 (f = −(D+Q)∇H + Γ).

    Every callable takes z of shape (n, k) (k = ``grid.dim``) and returns values at the n points:

    energy : H(z), (n,). The target density is p ∝ exp(−H) (required: ∇H alone does not give p).
    diffusion, curl : D(z), Q(z), (n, k, k). First checked symmetric PSD / skew-symmetric at every
        grid node (and the ghost nodes of the stencils) with
        :func:`sgmcmc.recipe.check_recipe_matrices`, which raises :class:`sgmcmc.recipe.RecipeError`
        naming the matrix (``check=False`` skips this).
    energy_gradient : the exact ∇H(z), (n, k); default: fourth-order central differences of ``energy``.
    correction : Γ(z), (n, k). ``None`` (default, as in :class:`sgmcmc.recipe.Recipe`): the recipe's
        Γ_i = Σ_j ∂_j(D_ij + Q_ij) by finite differences (:func:`sgmcmc.recipe.finite_difference_correction`);
        ``"zero"``: the sampler omits Γ.
    step_size, gradient_noise, noise_coordinates : gradient noise of covariance V (a scalar, an
        (m, m) array or a callable z → (m, m) / (n, m, m)) on the components ``noise_coordinates`` of
        ∇H (default: the first m, the θ block) adds the diffusion (ε/2)·M V Mᵀ, M = (D + Q)[:, coords].
    noise_covariance : B̂(z), (n, k, k): what the sampler subtracts from its injected noise
        N(0, ε(2D − εB̂)); adds −(ε/2)·B̂ to the diffusion. ``None``: B̂ = 0.
    order : 2 or 4, the order of the central differences (error O(h²) or O(h⁴)).
    """
    if not isinstance(grid, Grid):
        raise TypeError("grid must be a sgmcmc.stationarity.Grid (e.g. Grid.regular(bounds, points))")
    if order not in FIRST:
        raise ValueError(f"order must be one of {sorted(FIRST)}, got {order!r}")
    k, ghost, step_size = grid.dim, order // 2, float(step_size)
    if energy_gradient is None:
        energy_gradient = energy_gradient_by_differences(energy)
    if isinstance(correction, str):
        if correction != "zero":
            raise ValueError("correction must be None (finite differences), 'zero' or a callable")
        correction_field = np.zeros_like
    elif correction is None:
        correction_field = lambda z: finite_difference_correction(diffusion, curl, z)  # noqa: E731
    else:
        correction_field = correction
    noise_columns = None
    if gradient_noise is not None and step_size != 0.0:
        if noise_coordinates is None:
            probe = np.asarray(gradient_noise(_probe_points(grid)) if callable(gradient_noise) else gradient_noise)
            noise_coordinates = range(1 if probe.ndim == 0 else probe.shape[-1])
        noise_columns = np.asarray(list(noise_coordinates), dtype=int)
        if noise_columns.size == 0 or noise_columns.min() < 0 or noise_columns.max() >= k:
            raise ValueError(f"noise_coordinates must index the {k} coordinates of z")

    fields = _Fields(k, energy, diffusion, curl, energy_gradient, correction_field, step_size,
                     gradient_noise, noise_columns, noise_covariance, check, tolerance)
    # The grid is processed in slabs along axis 0 (each with its ghost layers), so memory stays
    # bounded whatever the grid size; every slab scales its density by its own exp(min H) and the
    # partial sums are brought to a common scale (largest p on the grid = 1) at the end.
    padded_axes = grid.padded_axes(ghost)
    rest = int(np.prod([axis.size for axis in padded_axes[1:]]))
    thickness = max(1, _SLAB_POINTS // rest - 2 * ghost)
    parts = []
    for first in range(0, grid.shape[0], thickness):
        last = min(first + thickness, grid.shape[0])
        slab_axes = (padded_axes[0][first : last + 2 * ghost],) + padded_axes[1:]
        parts.append(_slab_residual(fields, slab_axes, ghost, order, grid.spacing))

    shift = min(part[0] for part in parts)  # min H over the grid nodes
    weights = [np.exp(-(part[0] - shift)) for part in parts]
    residual_squares = sum(w**2 * part[1] for w, part in zip(weights, parts))
    scale_squares = sum(w**2 * part[2] for w, part in zip(weights, parts))
    residual_max = max(w * part[3] for w, part in zip(weights, parts))
    scale_max = max(w * part[4] for w, part in zip(weights, parts))
    if scale_squares == 0.0:
        raise ValueError("the Fokker–Planck terms vanish on the whole grid (zero drift and diffusion?)")
    return StationarityResult(
        relative_residual=float(np.sqrt(residual_squares / scale_squares)),
        max_relative_residual=float(residual_max / scale_max),
        max_abs_residual=float(residual_max),
        grid_shape=grid.shape,
        spacing=grid.spacing,
        bounds=grid.bounds,
        step_size=step_size,
        order=order,
    )


@dataclass(frozen=True)
class _Fields:
    """The ingredients of :func:`stationarity_residual`, evaluated pointwise by :meth:`evaluate`."""

    k: int
    energy: Field
    diffusion: Field
    curl: Field
    energy_gradient: Field
    correction: Field
    step_size: float
    gradient_noise: object
    noise_columns: Optional[np.ndarray]
    noise_covariance: Optional[Field]
    check: bool
    tolerance: float

    def evaluate(self, z: np.ndarray):
        """H (n,), the drift f = −(D+Q)∇H + Γ (n, k) and D^eff (n, k, k) at the points z (n, k)."""
        k, n = self.k, z.shape[0]
        d_matrix = _call_matrix(self.diffusion, z, k, "diffusion D(z)")
        q_matrix = _call_matrix(self.curl, z, k, "curl Q(z)")
        if self.check:
            check_recipe_matrices(d_matrix, q_matrix, self.tolerance)
        h_values = np.asarray(self.energy(z), dtype=float).reshape(n)
        gradient = np.asarray(self.energy_gradient(z), dtype=float).reshape(n, k)
        gamma = np.asarray(self.correction(z), dtype=float).reshape(n, k)
        d_plus_q = d_matrix + q_matrix
        effective = np.array(d_matrix, dtype=float)
        if self.noise_columns is not None:
            variance = _call_matrix(self.gradient_noise, z, self.noise_columns.size, "gradient noise V")
            carrier = d_plus_q[:, :, self.noise_columns]  # M
            carried = np.einsum("nia,nab->nib", carrier, variance)
            effective += 0.5 * self.step_size * np.einsum("nib,njb->nij", carried, carrier)
        if self.noise_covariance is not None and self.step_size != 0.0:
            effective -= 0.5 * self.step_size * _call_matrix(self.noise_covariance, z, k, "noise covariance B(z)")
        drift = gamma - np.einsum("nij,nj->ni", d_plus_q, gradient)
        return h_values, drift, effective


def _slab_residual(fields: _Fields, axes: tuple, ghost: int, order: int, spacing: tuple):
    """L*p and its scale on the grid nodes of one slab (``axes`` include the ghost nodes).

    Returns (min H on the slab's grid nodes, Σ residual², Σ scale², max |residual|, max scale),
    with p = exp(−(H − min H)) on the slab.
    """
    k = fields.k
    shape = tuple(axis.size for axis in axes)
    n_total = int(np.prod(shape))
    pairs = [(i, j) for i in range(k) for j in range(i, k)]
    rows, cols = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    energy = np.empty(n_total)
    drift = np.empty((k, n_total))
    effective = np.empty((len(pairs), n_total))
    for start in range(0, n_total, _CHUNK):
        index = np.arange(start, min(start + _CHUNK, n_total))
        coords = np.unravel_index(index, shape)
        z = np.stack([axes[a][coords[a]] for a in range(k)], axis=1)
        h_values, f_values, d_values = fields.evaluate(z)
        energy[index] = h_values
        drift[:, index] = f_values.T
        # Σ_ij ∂_i∂_j(D_ij p) only sees D + Dᵀ: the pair (i < j) carries D_ij + D_ji
        upper, lower = d_values[:, rows, cols], d_values[:, cols, rows]
        effective[:, index] = np.where(rows == cols, upper, upper + lower).T
    if not (np.all(np.isfinite(energy)) and np.all(np.isfinite(drift)) and np.all(np.isfinite(effective))):
        raise ValueError("H, the drift or the diffusion is not finite somewhere on the grid")
    interior = tuple(slice(ghost, n - ghost) for n in shape)
    energy = energy.reshape(shape)
    minimum = float(np.min(energy[interior]))
    density = np.exp(-(energy - minimum))
    del energy

    residual = np.zeros(tuple(n - 2 * ghost for n in shape))
    scale = np.zeros_like(residual)
    for i in range(k):
        term = _derivative(drift[i].reshape(shape) * density, ghost, order, i, None, spacing)
        residual -= term
        scale += np.abs(term)
    del drift
    for row, (i, j) in enumerate(pairs):
        if not np.any(effective[row]):
            continue
        term = _derivative(effective[row].reshape(shape) * density, ghost, order, i, j, spacing)
        residual += term
        scale += np.abs(term)
    return minimum, float(np.sum(residual**2)), float(np.sum(scale**2)), float(np.max(np.abs(residual))), float(np.max(scale))


# ----------------------------------------------------------------------------------------------
# the samplers of this package
# ----------------------------------------------------------------------------------------------
def state_blocks(sampler) -> tuple[int, int, Optional[float]]:
    """(dim θ, dim r (0 if none), centre of ξ (None if none)) from the sampler's own initial state."""
    rng = np.random.default_rng(0)
    state = sampler.init(np.zeros((1, sampler.target.dim)), rng)
    momentum = 0 if state.momentum is None else state.momentum.shape[1]
    xi = None if state.xi is None else float(np.asarray(state.xi).reshape(-1)[0])
    return sampler.target.dim, momentum, xi


def theta_bounds(target) -> list:
    """θ range of the grid: the target's histogram range (SPEC §3: [−3, 3] for T1/T2, [−6, 5] for T3,
    [−3, 3] × [−2, 2] for T4, ±4 standard deviations for T5); [−4, 4] per axis if it has none."""
    try:
        edges = target.histogram_edges()
    except TypeError:
        return [(-4.0, 4.0)] * target.dim
    if not isinstance(edges, tuple):
        edges = (edges,)
    return [(float(e[0]), float(e[-1])) for e in edges]


def default_grid(sampler, points: Union[None, int, Sequence[int]] = None) -> Grid:
    """The grid over z for ``sampler``: θ over :func:`theta_bounds`, r over [−4, 4], ξ over A ± 4/√d.

    ``points``: one number for every axis, one per axis, or ``None`` for :data:`DEFAULT_POINTS`.
    """
    d, m, xi = state_blocks(sampler)
    bounds = theta_bounds(sampler.target) + [(-4.0, 4.0)] * m
    if xi is not None:
        bounds.append((xi - 4.0 / np.sqrt(d), xi + 4.0 / np.sqrt(d)))
    if points is None:
        theta_points, other_points = DEFAULT_POINTS.get(len(bounds), (11, 11))
        points = [theta_points] * d + [other_points] * (len(bounds) - d)
    return Grid.regular(bounds, points)


def _is_stochastic(recipe, z: np.ndarray) -> bool:
    """True when the recipe's ∇H̃ differs between two random streams (it carries gradient noise)."""
    first = recipe.energy_gradient(z, np.random.default_rng(1))
    second = recipe.energy_gradient(z, np.random.default_rng(2))
    return not np.array_equal(first, second)


def _gradient_noise(target):
    """V(θ) as a callable of z (θ = the first dim coordinates), or raise if the target does not know it."""
    d = target.dim
    probe = np.zeros((1, d))
    if target.noise_covariance(probe) is not None:
        return lambda z: target.noise_covariance(z[:, :d])
    if target.minibatch_noise_covariance(probe) is not None:
        return lambda z: target.minibatch_noise_covariance(z[:, :d])
    raise ValueError(f"target {target.name!r} does not know the covariance V of its gradient noise")


def sampler_stationarity(
    sampler,
    step_size: float,
    grid: Optional[Grid] = None,
    points: Union[None, int, Sequence[int]] = None,
    order: int = DEFAULT_ORDER,
) -> StationarityResult:
    """The Fokker–Planck residual of a sampler of this package at step size ε.

    Ma et al. 2015, Eq. 3 and Theorem 1 (Fokker–Planck); SPEC §0 K1.

    Reads ``sampler.recipe_at(step_size)``: H (``energy``), D, Q, Γ (finite differences of D + Q when the
    recipe has none) and B̂. The exact ∇H is the recipe's ∇H̃ with its θ block replaced by
    ``target.gradient``. The gradient noise is V = ``target.noise_covariance(θ)`` (or the target's
    ``minibatch_noise_covariance`` when that is None) on the θ block if the recipe's ∇H̃ is
    stochastic (two random streams give different values; HMC's is not). The grid defaults to
    :func:`default_grid`. Calls :func:`stationarity_residual` with these.
    """
    recipe = sampler.recipe_at(step_size)
    if recipe.energy is None:
        raise ValueError(f"sampler {sampler.name!r} declares no energy H(z); cannot build p ∝ exp(−H)")
    target = sampler.target
    d = target.dim
    grid = grid if grid is not None else default_grid(sampler, points)
    gradient_rng = np.random.default_rng(0)

    def exact_gradient(z):
        gradient = np.array(recipe.energy_gradient(z, gradient_rng), dtype=float)
        gradient[:, :d] = target.gradient(z[:, :d])
        return gradient

    noise = _gradient_noise(target) if _is_stochastic(recipe, _probe_points(grid)) else None
    return stationarity_residual(
        grid,
        recipe.energy,
        recipe.diffusion,
        recipe.curl,
        energy_gradient=exact_gradient,
        correction=recipe.correction,
        step_size=step_size,
        gradient_noise=noise,
        noise_coordinates=range(d),
        noise_covariance=recipe.noise_covariance,
        order=order,
    )


__all__ = [
    "Grid",
    "StationarityResult",
    "STATIONARY_THRESHOLD",
    "CONVERGING_RATIO",
    "RESIDUAL_FLOOR",
    "DEFAULT_ORDER",
    "DEFAULT_POINTS",
    "stationarity_residual",
    "sampler_stationarity",
    "default_grid",
    "theta_bounds",
    "state_blocks",
    "verdict",
    "energy_gradient_by_differences",
]
