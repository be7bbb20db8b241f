"""gSGRHMC (Ma et al. 2015 §3.2, Algorithm 1, with the signs of SPEC §0 K2):
H = U + ½rᵀr, D = [[0, 0], [0, G⁻¹]], Q = [[0, −G^{-1/2}], [G^{-1/2}, 0]], Γ = (0, γ),
γ_i = Σ_j ∂_{θ_j}(G^{-1/2})_ij:

r' = r − εG^{-1/2}∇Ũ(θ) + εγ(θ) − εG⁻¹r + N(0, ε(2G⁻¹ − εB̂)),  θ' = θ + εG^{-1/2} r.
G(θ) comes from the target (``default_metric``) unless a metric is given.
"""

from __future__ import annotations

from typing import Optional

from sgmcmc.geometry import DiagonalMetric
from sgmcmc.engine.integrators import PLAIN, WITHOUT_CORRECTION
from sgmcmc.samplers.base import METRIC
from sgmcmc.samplers.momentum_recipe import MomentumRecipeSampler


class SGRHMC(MomentumRecipeSampler):
    name = "sgrhmc"
    exact_kernel = True
    parameters = {**MomentumRecipeSampler.parameters, "metric": METRIC}

    def __init__(self, target, metric: Optional[DiagonalMetric] = None, **kwargs):
        super().__init__(target, **kwargs)
        self.metric = metric or target.default_metric()

    def transform(self, theta):
        return self.metric.inverse_sqrt(theta)

    def friction(self, theta):
        return self.metric.inverse(theta)

    def correction(self, theta):
        return self.metric.inverse_sqrt_derivative(theta)

    def engine_integrator(self):
        return self.engine_update(), 1.0, True, False  # F = C·S² with C = 1: G⁻¹

    def engine_metric(self):
        return self.metric.engine_function(self.target.dim)

    def engine_variant(self):
        """γ kept, or dropped where a subclass drops it (naive SGRHMC)."""
        return PLAIN if type(self).correction is SGRHMC.correction else WITHOUT_CORRECTION
