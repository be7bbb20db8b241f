"""SGNHT (Ding et al. 2014) as a recipe sampler (Ma et al. 2015, Eq. 15; SPEC §1 with K3):
z = (θ, r, ξ), H = U + ½rᵀr + (d/2)(ξ − A)², D = diag(0, A·I, 0),
Q = [[0, −I, 0], [I, 0, r/d], [0, −rᵀ/d, 0]], Γ = (0, 0, −1).

Integrators (SPEC §1, §4.1):
- ``splitting`` (default, Ding et al. / lecture order): r' = r − ε∇Ũ(θ) − εξr + N(0, ε(2A − εV̂));
  θ' = θ + εr'; ξ' = ξ + ε(r'ᵀr'/d − 1);
- ``euler`` ([R] Eq. 15): θ' = θ + εr; the same r'; ξ' = ξ + ε(rᵀr/d − 1);
- ``generic``: the generic recipe step.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.noise import injected_noise
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import Sampler, block_diagonal
from sgmcmc.state import SamplerState, StepInfo


class SGNHT(Sampler):
    name = "sgnht"
    integrators = ("splitting", "euler", "generic")

    def __init__(self, target, diffusion: float = 1.0, **kwargs):
        super().__init__(target, **kwargs)
        if diffusion < 0:
            raise ValueError("diffusion must be >= 0")
        self.diffusion = float(diffusion)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, momentum=rng.standard_normal(theta.shape), xi=np.full(theta.shape[0], self.diffusion))

    def _momentum_update(self, rng, state, step_size):
        gradient = self.target.stochastic_gradient(state.theta, rng)
        diffusion = np.full_like(state.theta, self.diffusion)
        noise = injected_noise(rng, step_size, diffusion, self.gradient_noise(state.theta))
        return state.momentum - step_size * gradient - step_size * state.xi[:, None] * state.momentum + noise

    def _thermostat_update(self, xi, momentum, step_size):
        return xi + step_size * (np.mean(momentum**2, axis=1) - 1.0)

    def _step_splitting(self, rng, state, step_size):
        momentum = self._momentum_update(rng, state, step_size)
        theta = state.theta + step_size * momentum
        return SamplerState(theta, momentum, self._thermostat_update(state.xi, momentum, step_size)), StepInfo()

    def _step_euler(self, rng, state, step_size):
        momentum = self._momentum_update(rng, state, step_size)
        theta = state.theta + step_size * state.momentum
        return SamplerState(theta, momentum, self._thermostat_update(state.xi, state.momentum, step_size)), StepInfo()

    def unpack(self, z):
        d = self.target.dim
        return SamplerState(theta=z[:, :d], momentum=z[:, d : 2 * d], xi=z[:, 2 * d])

    def recipe(self):
        d = self.target.dim

        def energy_gradient(z, rng):
            gradient = self.target.stochastic_gradient(z[:, :d], rng)
            return np.concatenate([gradient, z[:, d : 2 * d], d * (z[:, 2 * d :] - self.diffusion)], axis=1)

        def diffusion(z):
            n = z.shape[0]
            return block_diagonal(np.zeros((n, d, d)), self.diffusion * np.broadcast_to(np.eye(d), (n, d, d)), np.zeros((n, 1, 1)))

        def curl(z):
            n = z.shape[0]
            out = np.zeros((n, 2 * d + 1, 2 * d + 1))
            out[:, :d, d : 2 * d] = -np.eye(d)
            out[:, d : 2 * d, :d] = np.eye(d)
            out[:, d : 2 * d, 2 * d] = z[:, d : 2 * d] / d
            out[:, 2 * d, d : 2 * d] = -z[:, d : 2 * d] / d
            return out

        def correction(z):
            out = np.zeros_like(z)
            out[:, 2 * d] = -1.0
            return out

        def noise_covariance(z):
            n = z.shape[0]
            return block_diagonal(np.zeros((n, d, d)), self._noise_block(z[:, :d]), np.zeros((n, 1, 1)))

        def energy(z):
            kinetic = 0.5 * np.sum(z[:, d : 2 * d] ** 2, axis=1)
            return self.target.potential(z[:, :d]) + kinetic + 0.5 * d * (z[:, 2 * d] - self.diffusion) ** 2

        return Recipe(energy_gradient, diffusion, curl, correction, noise_covariance, energy)
