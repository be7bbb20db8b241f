#!/usr/bin/env python
"""Check a sampler of your own for stationarity before running it (Ma et al. 2015, Eq. 3 and
Theorem 1; SPEC §0 K1).

A recipe sampler is given by its energy H(z), a diffusion D(z) (symmetric PSD) and a curl Q(z)
(skew-symmetric); it runs z' = z + ε(−(D + Q)∇H + Γ) + N(0, 2εD) with Γ_i = Σ_j ∂_j(D_ij + Q_ij).
:func:`sgmcmc.stationarity.stationarity_residual` takes these as plain callables on z of shape
(n, k) and measures the Fokker–Planck residual of p ∝ exp(−H) on a grid: near zero and shrinking
as the grid is refined when the dynamics leaves p invariant, of fixed size when it does not.

Example 1: Langevin dynamics with a position-dependent diffusion D(θ) = 1/(1 + θ²) on the double
well U(θ) = θ⁴ − 2θ² (SPEC T2) — with Γ = D'(θ), with Γ omitted, and with stochastic gradients
(∇Ũ = ∇U + N(0, V)) with and without the noise correction B̂ = D V D.
Example 2: a 2D Gaussian with a position-dependent curl Q(θ) = q(θ)·[[0, −1], [1, 0]], whose
Γ = (−∂₂q, ∂₁q) is easy to forget.
Example 3: a "curl" that is not skew-symmetric is rejected before anything is computed.

Run:  .venv/bin/python scripts/check_custom_sampler.py
"""

from __future__ import annotations

import numpy as np

from sgmcmc.recipe import RecipeError
from sgmcmc.stationarity import Grid, stationarity_residual, verdict


def report(label: str, grid: Grid, **ingredients) -> None:
    """Residual on the grid and on the same box at half the resolution, and the verdict."""
    fine = stationarity_residual(grid, **ingredients)
    coarse = stationarity_residual(grid.coarsened(), **ingredients)
    print(f"  {label:44s} residual {fine.relative_residual:9.2e}  (half grid {coarse.relative_residual:9.2e})  "
          f"-> {verdict(coarse, fine)}")


# -- Example 1: z = θ on the double well ----------------------------------------------------------
def double_well_energy(z):  # H(z) = U(θ), shape (n,)
    return z[:, 0] ** 4 - 2.0 * z[:, 0] ** 2


def double_well_gradient(z):  # exact ∇H, shape (n, 1); optional (default: finite differences of H)
    return 4.0 * z**3 - 4.0 * z


def position_dependent_diffusion(z):  # D(θ) = 1/(1 + θ²), shape (n, 1, 1)
    return (1.0 / (1.0 + z[:, 0] ** 2))[:, None, None]


def no_curl(z):  # Q = 0, shape (n, 1, 1)
    return np.zeros((z.shape[0], 1, 1))


def langevin_correction(z):  # Γ = dD/dθ = −2θ/(1 + θ²)², shape (n, 1)
    return -2.0 * z / (1.0 + z**2) ** 2


grid_1d = Grid.regular([(-3.0, 3.0)], 401)
langevin = dict(energy=double_well_energy, energy_gradient=double_well_gradient,
                diffusion=position_dependent_diffusion, curl=no_curl)
V, step = 4.0, 0.02  # gradient noise N(0, V) and step size ε

print("Example 1: Langevin with D(θ) = 1/(1 + θ²) on U(θ) = θ⁴ − 2θ², grid of 401 points on [−3, 3]")
report("Γ = D'(θ) supplied", grid_1d, **langevin, correction=langevin_correction)
report("Γ from finite differences of D + Q (default)", grid_1d, **langevin)
report("Γ omitted", grid_1d, **langevin, correction="zero")
# Stochastic gradient: the noise enters through M = (D + Q)[:, θ] = D and adds (ε/2)·D V D of
# diffusion; subtracting B̂ = D V D from the injected noise, N(0, ε(2D − εB̂)), cancels it.
report(f"ε={step}, V={V:g}, B = D V D subtracted", grid_1d, **langevin, correction=langevin_correction,
       step_size=step, gradient_noise=V,
       noise_covariance=lambda z: V * position_dependent_diffusion(z) ** 2)
report(f"ε={step}, V={V:g}, nothing subtracted", grid_1d, **langevin, correction=langevin_correction,
       step_size=step, gradient_noise=V)


# -- Example 2: a position-dependent curl on a 2D Gaussian ------------------------------------------
PRECISION = np.array([[1.0, 0.9], [0.9, 1.0]])


def gaussian_energy(z):  # H = ½ θᵀPθ
    return 0.5 * np.einsum("ni,ij,nj->n", z, PRECISION, z)


def unit_diffusion(z):
    return np.broadcast_to(np.eye(2), (z.shape[0], 2, 2))


def curl_strength(z):  # q(θ) = 2 + sin θ₁ cos θ₂
    return 2.0 + np.sin(z[:, 0]) * np.cos(z[:, 1])


def rotating_curl(z):  # Q = q(θ)·[[0, −1], [1, 0]]
    q = curl_strength(z)
    out = np.zeros((z.shape[0], 2, 2))
    out[:, 0, 1], out[:, 1, 0] = -q, q
    return out


def curl_correction(z):  # Γ_i = Σ_j ∂_j Q_ij = (−∂₂q, ∂₁q)
    d1 = np.cos(z[:, 0]) * np.cos(z[:, 1])
    d2 = -np.sin(z[:, 0]) * np.sin(z[:, 1])
    return np.stack([-d2, d1], axis=1)


grid_2d = Grid.regular([(-4.0, 4.0), (-4.0, 4.0)], 201)
print("\nExample 2: D = I, Q = q(θ)·J on a 2D Gaussian (precision [[1, .9], [.9, 1]]), grid 201 x 201")
report("Γ = (−∂₂q, ∂₁q) supplied", grid_2d, energy=gaussian_energy, diffusion=unit_diffusion,
       curl=rotating_curl, correction=curl_correction)
report("Γ omitted", grid_2d, energy=gaussian_energy, diffusion=unit_diffusion, curl=rotating_curl,
       correction="zero")


# -- Example 3: invalid matrices are rejected --------------------------------------------------------
print("\nExample 3: a curl that is not skew-symmetric")
try:
    stationarity_residual(grid_2d, gaussian_energy, unit_diffusion, lambda z: np.abs(rotating_curl(z)))
except RecipeError as error:
    print(f"  RecipeError: {error}")
