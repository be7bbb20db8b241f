"""SGLD (Welling & Teh 2011) as a recipe sampler: z = θ, H = U, D = I, Q = 0 (Ma et al. 2015, Eq. 13).

θ' = θ − ε∇Ũ(θ) + N(0, ε(2I − εV̂)); with ``noise_estimate="zero"`` the noise is N(0, 2ε), the
Welling–Teh update with ε_WT = 2ε (SPEC §0).
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import integrators
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import Sampler
from sgmcmc.state import SamplerState


class SGLD(Sampler):
    name = "sgld"
    exact_kernel = True
    explores = True  # all its noise passes through inject: θ' = θ − ε∇Ũ in the exploration phase
    integrators = ("euler", "generic")

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, **self.initial_noise(theta.shape[0]))

    def engine_integrator(self):
        return integrators.langevin, 1.0, False, False

    def recipe(self):
        def identity(z):
            return np.broadcast_to(np.eye(z.shape[1]), (z.shape[0], z.shape[1], z.shape[1])).copy()

        return Recipe(
            energy_gradient=lambda z, rng: self.target.stochastic_gradient(z, rng),
            diffusion=identity,
            curl=lambda z: np.zeros((z.shape[0], z.shape[1], z.shape[1])),
            correction=lambda z: np.zeros_like(z),
            energy=self.target.potential,
            noise_covariance=lambda z: self._noise_block(z),
        )
