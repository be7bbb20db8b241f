"""CCAdL, covariance-controlled adaptive Langevin (Shang, Zhu, Leimkuhler & Storkey 2015, Eq. 12 and
Algorithm 1; SPEC §1), with M = I, β = 1, µ = N_d:

1. θ_t = θ_{t−1} + h p_{t−1};
2.–3. a minibatch at θ_t gives ∇Ũ(θ_t) and V_t (Eq. 19); Î_t = (1 − κ_t)Î_{t−1} + κ_t V_t, κ_t = 1/t (Eq. 18);
5. p_t = p_{t−1} − h∇Ũ(θ_t) − h·(h/2)Σ̂_t p_{t−1} − hξ_{t−1}p_{t−1} + √(2Ah)·N(0, I),  Σ̂_t = c·Î_t (Eq. 17);
6. ξ_t = ξ_{t−1} + h(p_tᵀp_t/N_d − 1).

c is the target's ``noise_scale`` (N²/n in Eq. 17; N(N − n)/n here, the exact factor for minibatches
drawn without replacement). ``noise_estimate``: ``running`` (the algorithm above), ``known`` (Σ̂ = the target's
exact V(θ_t)), ``zero`` (no covariance control: SGNHT), or null (the default): ``running`` on a data target, whose
minibatches it is estimated from, and ``known`` on a density model, which has none (a user's model with an exact
gradient then has Σ̂ = 0: SGNHT's update, the right one for a noiseless gradient).

Recipe view (SPEC §1, [mine]): z = (θ, p, ξ), H = U + ½pᵀp + (N_d/2)(ξ − A)², Q as SGNHT,
D = diag(0, A·I + (h/2)Σ(θ), 0): the extra friction −(h/2)Σp is the D∇H partner of the gradient noise
N(0, h²Σ), and with B̂ = Σ the recipe injects N(0, h(2D − hB̂)) = N(0, 2hA), as CCAdL does. D depends
on h, so the recipe is :meth:`recipe_at` a step size. ``integrator``: ``theta_first`` (Algorithm 1),
``euler`` (the generic recipe step's order: everything at the old state) or ``generic``.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine.integrators import COVARIANCE_FRICTION
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import NOISE_ESTIMATES, block_diagonal
from sgmcmc.samplers.sgnht import SGNHT
from sgmcmc.schema import Key, choice, optional
from sgmcmc.targets.data import DataTarget


class CCAdL(SGNHT):
    name = "ccadl"
    exact_kernel = True
    integrators = ("theta_first", "euler", "generic")
    parameters = {**SGNHT.parameters,
                  "noise_estimate": Key(optional(choice(*NOISE_ESTIMATES)), "Σ̂: the running estimate (Eq. 18-19), "
                                        "the target's V(θ) (known) or none (zero); null: running on a data target, "
                                        "known on a density model")}

    def __init__(self, target, diffusion: float = 1.0, noise_estimate: str | None = None, **kwargs):
        if self.checked("noise_estimate", noise_estimate) is None:
            noise_estimate = "running" if isinstance(target, DataTarget) else "known"
        super().__init__(target, diffusion=diffusion, noise_estimate=noise_estimate, **kwargs)

    def engine_variant(self):
        """The covariance-controlled friction (ε/2)Σ̂r with Σ̂ the known V, or none for ``zero`` (Σ̂ = 0)."""
        return COVARIANCE_FRICTION

    def predicted_friction(self, estimate, step_size):
        """(h/2)Σ̂ (Algorithm 1 step 5)."""
        return 0.5 * step_size * estimate

    def predicted_subtracted(self, estimate):
        """Nothing is subtracted from the injected √(2Ah)·N(0, I)."""
        return np.zeros_like(estimate)

    def recipe(self):
        raise TypeError("CCAdL's diffusion D = A·I + (h/2)Σ(θ) depends on the step size: use recipe_at(h)")

    def recipe_at(self, step_size: float) -> Recipe:
        base = SGNHT.recipe(self)
        d = self.target.dim

        def diffusion(z):
            n = z.shape[0]
            momentum_block = self.diffusion * np.broadcast_to(np.eye(d), (n, d, d)) + 0.5 * step_size * self._noise_block(z[:, :d])
            return block_diagonal(np.zeros((n, d, d)), momentum_block, np.zeros((n, 1, 1)))

        return Recipe(base.energy_gradient, diffusion, base.curl, base.correction, base.noise_covariance, base.energy)
