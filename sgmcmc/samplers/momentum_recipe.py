"""The (θ, r) recipe family shared by SGHMC, naive SGRHMC and gSGRHMC (Ma et al. 2015 §3.2, Alg. 1):

H = U(θ) + ½ rᵀr,  D = [[0, 0], [0, F(θ)]],  Q = [[0, −S(θ)], [S(θ), 0]],  Γ = (0, γ(θ)),
with S = G^{-1/2}, F = G⁻¹ and γ_i = Σ_j ∂_{θ_j} S_ij for gSGRHMC, S = I, F = C·I, γ = 0 for SGHMC.
B̂ = S V̂ S in the momentum block (SPEC §4.3). All matrices here are diagonal.

Integrators (SPEC §4.1):
- ``splitting`` (default): r' = r − εS∇Ũ(θ) − εF r + εγ + N(0, ε(2F − εSV̂S)); θ' = θ + εS r'
  (S, F, γ at the old θ);
- ``euler``: the same r', but θ' = θ + εS r (the generic recipe step, Eq. 9 + K1);
- ``theta_first`` (Shang et al. 2015 Eq. 14, SPEC §1 "SGHMC as run in [C]"): θ' = θ + εS(θ) r, then
  r' = r − εS∇Ũ(θ') − εF r + εγ + N(0, ε(2F − εSV̂S)) with S, F, γ and V̂ at θ';
- ``aboba``: half a position step θ_h = Φ_{ε/2}(θ, r), half a kick r₁ = r + (ε/2)f with f = −S∇Ũ(θ_h) + γ
  (S, F, γ at θ_h), the friction–noise part dr = −F r dt + √(2F) dW solved exactly, r₂ = e^{−εF} r₁ + √(1 − e^{−2εF}) ξ,
  the second half kick r' = r₂ + (ε/2)f and half position step θ' = Φ_{ε/2}(θ_h, r') (Leimkuhler & Matthews
  2013's ABOBA order; one gradient per step). Φ_t is the flow of θ̇ = S(θ) r at fixed r (the metric's ``flow``, :mod:`sgmcmc.geometry`):
  θ + t·r for SGHMC, exact for the expanded-mean metric, a Runge–Kutta step otherwise. It is leapfrog as εF → 0
  and stable in the overdamped regime εF ≫ 1, where the Euler friction factor 1 − εF of the other steps flips
  sign and grows (gSGRHMC on LDA has F = G⁻¹ = diag(θ) with θ_kw in the hundreds to millions, SPEC T10). There
  the momentum is renewed every step, and two half flows with the same r' make a Langevin step of size h = ε²/2
  with diffusion S²: its drift h(−S²∇U + Sγ + S S′) equals the exact h(−S²∇U + (S²)′) only because Φ is a
  second-order flow (explicit Euler halves give h(−S²∇U + 1.5 S S′), a bias that does not vanish with ε; issue 16).
  No V̂ correction (noise_estimate zero). θ_h is reflected into the support like θ'.
- ``generic``: :func:`sgmcmc.recipe.recipe_step` on the matrices below.

After θ moves, the target may reflect it into its support (the reflected coordinates' r flips).
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import integrators
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import Sampler, block_diagonal, diagonal_matrices
from sgmcmc.state import SamplerState


class MomentumRecipeSampler(Sampler):
    """Base class; subclasses define ``transform`` (S), ``friction`` (F) and ``correction`` (γ)."""

    integrators = ("splitting", "euler", "theta_first", "aboba", "generic")

    def transform(self, theta: np.ndarray) -> np.ndarray:
        return np.ones_like(theta)

    def friction(self, theta: np.ndarray) -> np.ndarray:
        return np.ones_like(theta)

    def correction(self, theta: np.ndarray) -> np.ndarray:
        return np.zeros_like(theta)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, momentum=rng.standard_normal(theta.shape), **self.initial_noise(theta.shape[0]))

    # -- the compiled block ---------------------------------------------------------------------------
    def engine_update(self):
        """The engine's integrator of this order: :func:`~sgmcmc.engine.integrators.aboba`, else
        :func:`~sgmcmc.engine.integrators.momentum_friction`."""
        return integrators.aboba if self.integrator == "aboba" else integrators.momentum_friction

    # -- the recipe -------------------------------------------------------------------------------
    def unpack(self, z):
        d = self.target.dim
        return SamplerState(theta=z[:, :d], momentum=z[:, d:])

    def recipe(self):
        d = self.target.dim

        def energy_gradient(z, rng):
            return np.concatenate([self.target.stochastic_gradient(z[:, :d], rng), z[:, d:]], axis=1)

        def diffusion(z):
            theta = z[:, :d]
            return block_diagonal(np.zeros((z.shape[0], d, d)), diagonal_matrices(self.friction(theta)))

        def curl(z):
            transform = diagonal_matrices(self.transform(z[:, :d]))
            out = np.zeros((z.shape[0], 2 * d, 2 * d))
            out[:, :d, d:] = -transform
            out[:, d:, :d] = transform
            return out

        def correction(z):
            return np.concatenate([np.zeros_like(z[:, :d]), self.correction(z[:, :d])], axis=1)

        def noise_covariance(z):
            theta = z[:, :d]
            return block_diagonal(np.zeros((z.shape[0], d, d)), self._noise_block(theta, self.transform(theta)))

        def energy(z):
            return self.target.potential(z[:, :d]) + 0.5 * np.sum(z[:, d:] ** 2, axis=1)

        return Recipe(energy_gradient, diffusion, curl, correction, noise_covariance, energy)

