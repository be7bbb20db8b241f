"""SGLD (Welling & Teh 2011) as a recipe sampler: z = θ, H = U, D = I, Q = 0 (Ma et al. 2015, Eq. 13).

θ' = θ − ε∇Ũ(θ) + N(0, ε(2I − εV̂)); with ``noise_estimate="zero"`` the noise is N(0, 2ε), the
Welling–Teh update with ε_WT = 2ε (SPEC §0).
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import codes, integrators
from sgmcmc.engine.blocks import CompiledKernel, gradient_noise_mode, paths_for
from sgmcmc.engine.data_blocks import LANGEVIN, data_kernel
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import Sampler
from sgmcmc.state import SamplerState, StepInfo


class SGLD(Sampler):
    name = "sgld"
    exact_kernel = True
    explores = True  # all its noise passes through inject: θ' = θ − ε∇Ũ in the exploration phase
    integrators = ("euler", "generic")

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, **self.initial_noise(theta.shape[0]))

    def _step_euler(self, rng, state, step_size):
        theta = state.theta
        estimate = self.gradient_and_noise(rng, state)
        noise, clipped = self.inject(rng, step_size, np.ones_like(theta), estimate.covariance)
        theta, _, reflected = self.reflect(theta - step_size * estimate.gradient + noise)
        new_state = SamplerState(theta=theta, noise=estimate.noise, noise_count=estimate.noise_count)
        return new_state, StepInfo(clipped=clipped, reflected=reflected)

    def engine_integrator(self):
        return integrators.langevin, 1.0, False, False

    def compiled_kernel(self):
        """:func:`sgmcmc.engine.kernels.langevin_block` with the identity metric; on a data target
        :func:`sgmcmc.engine.data_kernels.data_block` (D = I)."""
        if self.compiled_data() is not None:
            return data_kernel(self, LANGEVIN, 1.0)
        return langevin_kernel(self, (codes.CONSTANT_METRIC, np.ones(self.target.dim), np.zeros(self.target.dim)))

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


def langevin_kernel(sampler, metric) -> "CompiledKernel | None":
    """SGLD / SGRLD's compiled block for ``metric`` = (kind, a, b) (:func:`sgmcmc.engine.blocks.metric_arrays`)."""
    compiled = sampler.compiled_target()
    if compiled is None or metric is None:
        return None
    mode, variance_diagonal, variance = gradient_noise_mode(sampler.known_noise(compiled))
    if mode == codes.FULL_ESTIMATE and sampler.noise_clip:
        return None  # the eigendecomposition of the clipped draw stays on the numpy path

    def run(state, normals, step_sizes):
        paths, bad_step, bad_code = paths_for(state.theta.shape[0], step_sizes.size, state.theta.shape[1])
        from sgmcmc.engine import kernels

        kernels.langevin_block(compiled.kind, compiled.parameters, compiled.noise_factor, metric[0], metric[1], metric[2],
                               mode, variance_diagonal, variance, sampler.noise_clip, np.ascontiguousarray(state.theta),
                               normals, step_sizes, paths["theta"], paths["clipped"], bad_step, bad_code)
        return paths, bad_step, bad_code

    return CompiledKernel(run, has_momentum=False, has_xi=False, clip=sampler.noise_clip)
