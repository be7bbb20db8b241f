"""gSGRHMC (Ma et al. 2015 §3.2, Algorithm 1, with the signs of SPEC §0 K2):
H = U + ½rᵀr, D = [[0, 0], [0, G⁻¹]], Q = [[0, −G^{-1/2}], [G^{-1/2}, 0]], Γ = (0, γ),
γ_i = Σ_j ∂_{θ_j}(G^{-1/2})_ij:

r' = r − εG^{-1/2}∇Ũ(θ) + εγ(θ) − εG⁻¹r + N(0, ε(2G⁻¹ − εB̂)),  θ' = θ + εG^{-1/2} r.
G(θ) comes from the target (``default_metric``) unless a metric is given.
"""

from __future__ import annotations

from typing import Optional

from sgmcmc.engine import codes, integrators
from sgmcmc.engine.blocks import metric_arrays
from sgmcmc.geometry import DiagonalMetric
from sgmcmc.samplers.base import METRIC, metric_for_engine
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
        return integrators.momentum_friction, 1.0, True, False  # F = C·S² with C = 1: G⁻¹

    def engine_metric(self):
        """The metric with γ, or without it where a subclass drops it (naive SGRHMC)."""
        return metric_for_engine(self.metric, self.target.dim, correction=type(self).correction is SGRHMC.correction)

    def kernel_geometry(self):
        """The identity metric is SGHMC with C = 1; the rational metric with γ (gSGRHMC) or without (naive)."""
        metric = metric_arrays(self.metric, self.target.dim)
        if metric is None:
            return None
        with_correction = type(self).correction is SGRHMC.correction
        return (*metric, 1.0, with_correction and metric[0] == codes.RATIONAL_METRIC)

    def position_flow(self, theta, momentum, time):
        """The metric's flow of θ̇ = G(θ)^{-1/2} r (exact for the expanded mean, Runge–Kutta otherwise)."""
        return self.metric.position_flow(theta, momentum, time)
