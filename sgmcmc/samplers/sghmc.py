"""SGHMC (Chen, Fox & Guestrin 2014) as a recipe sampler (Ma et al. 2015, Eq. 12; SPEC §1):
H = U + ½rᵀr, D = [[0, 0], [0, C·I]], Q = [[0, −I], [I, 0]], Γ = 0, noise N(0, ε(2C − εV̂)).
"""

from __future__ import annotations

import numpy as np

from sgmcmc.samplers.momentum_recipe import MomentumRecipeSampler
from sgmcmc.schema import Key, real

FRICTION = Key(real(0.0, strict=True), "C (SGHMC's friction; Shang et al.'s A)")


class SGHMC(MomentumRecipeSampler):
    name = "sghmc"
    exact_kernel = True
    explores = True  # splitting, euler, theta_first: all noise through inject (SGD with momentum when exploring)
    parameters = {**MomentumRecipeSampler.parameters, "friction": FRICTION}

    def __init__(self, target, friction: float = 1.0, **kwargs):
        super().__init__(target, **kwargs)
        self.friction_coefficient = self.checked("friction", friction)

    def engine_integrator(self):
        return self.engine_update(), self.friction_coefficient, True, False

    def friction(self, theta):
        return np.full_like(theta, self.friction_coefficient)

