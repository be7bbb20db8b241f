"""SGNHT (Ding et al. 2014) as a recipe sampler (Ma et al. 2015, Eq. 15; SPEC §1 with K3):
z = (θ, r, ξ), H = U + ½rᵀr + (d/2)(ξ − A)², D = diag(0, A·I, 0),
Q = [[0, −I, 0], [I, 0, r/d], [0, −rᵀ/d, 0]], Γ = (0, 0, −1).

Integrators (SPEC §1, §4.1):
- ``splitting`` (default, Ding et al. / lecture order): r' = r − ε∇Ũ(θ) − εξr + N(0, ε(2A − εV̂));
  θ' = θ + εr'; ξ' = ξ + ε(r'ᵀr'/d − 1);
- ``euler`` ([R] Eq. 15): θ' = θ + εr; the same r'; ξ' = ξ + ε(rᵀr/d − 1);
- ``theta_first`` (Shang et al. 2015, the ordering of their comparison, SPEC §1 (c)): θ' = θ + εr;
  r' = r − ε∇Ũ(θ') − εξr + N(0, ε(2A − εV̂)); ξ' = ξ + ε(r'ᵀr'/d − 1) ([C] runs it with V̂ = 0:
  ``noise_estimate: zero``);
- ``generic``: the generic recipe step.

With gradient noise of covariance V, ξ settles at A + ε·tr(V)/(2d) when V̂ = 0 ([C] Prop. 1):
:meth:`predicted_thermostat`.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import integrators
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import Sampler, block_diagonal
from sgmcmc.diagnostics.linearised import mean_hessian, thermostat_fixed_point
from sgmcmc.schema import Key, real
from sgmcmc.state import SamplerState


class SGNHT(Sampler):
    name = "sgnht"
    exact_kernel = True
    integrators = ("splitting", "euler", "theta_first", "generic")
    parameters = {**Sampler.parameters, "diffusion": Key(real(0.0), "A, the thermostat's target and the injected noise's scale")}

    def __init__(self, target, diffusion: float = 1.0, **kwargs):
        super().__init__(target, **kwargs)
        self.diffusion = self.checked("diffusion", diffusion)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        momentum = rng.standard_normal(theta.shape)
        return SamplerState(theta=theta, momentum=momentum, xi=np.full(theta.shape[0], self.diffusion),
                            **self.initial_noise(theta.shape[0]))

    def engine_integrator(self):
        return integrators.thermostat, self.diffusion, True, True

    def predicted_thermostat(self, theta: np.ndarray, step_size: float):
        """Where ξ settles at step size ε, averaged over positions θ (m, d) (e.g. the kept samples).

        To first order in ε this is A + ε·(1 − k)·E tr V(θ)/(2d) ([C] Prop. 1 with β = 1), where k is the
        fraction of the gradient noise V the sampler compensates: k = 0 for ``zero``, 1 for ``known``, and
        c_used/c_exact for ``running`` (a running estimate scaled by Eq. 17's N²/n over-compensates by
        N/(N − n)). The explicit friction step adds a term of the same order (ξ ≈ A + εA²/2 even without
        gradient noise), so this returns the exact fixed point of the step linearised at fixed ξ
        (:func:`~sgmcmc.diagnostics.linearised.thermostat_fixed_point`): friction ξI + :meth:`predicted_friction`,
        momentum noise 2εA·I + ε²(V̄ − :meth:`predicted_subtracted`) with V̄ = E V(θ), and the force
        linearised with the mean Hessian of U over θ. None if V is unknown, nan if no ξ cools the momentum."""
        noise, compensated = self._mean_noise(theta)
        if noise is None:
            return None
        return thermostat_fixed_point(step_size, self.diffusion, noise,
                                      self.predicted_friction(compensated * noise, step_size),
                                      self.predicted_subtracted(compensated * noise),
                                      mean_hessian(self.target, theta), self.integrator)

    def first_order_thermostat(self, theta: np.ndarray, step_size: float):
        """[C] Prop. 1's A + ε·(1 − k)·E tr V(θ)/(2d) (see :meth:`predicted_thermostat`); None if V is unknown."""
        noise, compensated = self._mean_noise(theta)
        if noise is None:
            return None
        return float(self.diffusion + step_size * (1.0 - compensated) * np.trace(noise) / (2 * self.target.dim))

    def _mean_noise(self, theta):
        """(E V(θ) over the positions, fraction k of it the sampler compensates)."""
        compensated = {"zero": 0.0, "known": 1.0}.get(self.noise_estimate)
        if compensated is None:  # running; a full batch (noise_scale 0) has no noise to compensate
            exact_scale = self.target.noise_scale
            compensated = self.running_scale() / exact_scale if exact_scale > 0 else 1.0
        covariance = self.target.noise_covariance(theta)
        if covariance is None:
            return None, compensated
        d = self.target.dim
        return np.mean(np.broadcast_to(covariance, (theta.shape[0], d, d)), axis=0), compensated

    def predicted_friction(self, estimate: np.ndarray, step_size: float) -> np.ndarray:
        """Friction on p beyond ξ given the noise estimate Σ̂ (d, d): none for SGNHT."""
        return np.zeros_like(estimate)

    def predicted_subtracted(self, estimate: np.ndarray) -> np.ndarray:
        """Covariance taken off the injected noise (divided by ε²) given Σ̂: Σ̂ itself for SGNHT."""
        return estimate

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

