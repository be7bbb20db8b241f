"""Naive SGRHMC (Ma et al. 2015, Eq. 16): gSGRHMC without the correction γ(θ).

θ' = θ + εG^{-1/2}r;  r' = r − εG^{-1/2}∇Ũ(θ) − εG⁻¹r + N(0, ε(2G⁻¹ − εB̂)).
Its D and Q are valid, but dropping Γ breaks stationarity whenever G depends on θ: it is shown
to be wrong, measurably, in the tests. Its declared recipe has Γ = 0, on purpose.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.samplers.sgrhmc import SGRHMC


class NaiveSGRHMC(SGRHMC):
    name = "naive_sgrhmc"
    exact_kernel = True

    def correction(self, theta):
        return np.zeros_like(theta)
