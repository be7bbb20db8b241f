"""SGRLD (Patterson & Teh 2013) as a recipe sampler: z = θ, H = U, D = G(θ)⁻¹, Q = 0
(Ma et al. 2015, Eq. 14 with +Γ, SPEC §0 K1):

θ' = θ − εG⁻¹∇Ũ(θ) + εΓ(θ) + N(0, ε(2G⁻¹ − εG⁻¹V̂G⁻¹)),  Γ_i = Σ_j ∂_j(G⁻¹)_ij.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sgmcmc.engine import integrators
from sgmcmc.geometry import DiagonalMetric
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import METRIC, Sampler, diagonal_matrices
from sgmcmc.state import SamplerState


class SGRLD(Sampler):
    name = "sgrld"
    exact_kernel = True
    integrators = ("euler", "generic")
    parameters = {**Sampler.parameters, "metric": METRIC}

    def __init__(self, target, metric: Optional[DiagonalMetric] = None, **kwargs):
        super().__init__(target, **kwargs)
        self.metric = metric or target.default_metric()

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, **self.initial_noise(theta.shape[0]))

    def engine_integrator(self):
        return integrators.langevin, 0.0, False, False

    def engine_metric(self):
        return self.metric.engine_function(self.target.dim)

    def recipe(self):
        return Recipe(
            energy_gradient=lambda z, rng: self.target.stochastic_gradient(z, rng),
            diffusion=lambda z: diagonal_matrices(self.metric.inverse(z)),
            curl=lambda z: np.zeros((z.shape[0], z.shape[1], z.shape[1])),
            correction=None,  # finite differences of D: independent of the engine's Γ = 2 S ∂S
            energy=self.target.potential,
            noise_covariance=lambda z: self._noise_block(z, self.metric.inverse(z)),
        )
