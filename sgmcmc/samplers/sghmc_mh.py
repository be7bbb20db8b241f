"""SGHMC with a Metropolis–Hastings test ("SGHMC (with MH)" of the SGHMC slides' acceptance table;
SPEC §3 E7, §4.6): Chen, Fox & Guestrin (2014), Algorithm 2, followed by the HMC accept/reject step.

Per outer step (vectorised over chains), with unit mass:

1. r ~ N(0, I), (θ₀, r₀) = (θ, r);
2. m inner steps of Chen et al. Alg. 2 (noise variance as corrected in SPEC §0 K4):
   θ ← θ + εr;  r ← r − ε∇Ũ(θ) − εCr + N(0, 2(C − B̂)ε),  B̂ = εV̂/2,
   i.e. N(0, ε(2C − εV̂)) with V̂ the target's gradient-noise covariance (``noise_estimate="known"``)
   or 0 (``"zero"``) — the same B̂ convention as :class:`~sgmcmc.samplers.sghmc.SGHMC` (SPEC §4.3);
3. if ``metropolis``: accept (θ_m, r_m) with probability min(1, exp(H(θ₀, r₀) − H(θ_m, r_m))),
   H = U(θ) + ½rᵀr with the exact U (SPEC §0 K4); otherwise keep (θ_m, r_m) (plain Alg. 2 with
   momentum resampling every m steps).

This is not a recipe Euler-form sampler: the trajectory is Alg. 2's θ-first ordering and the MH test
sits on top of it. The friction trajectory is neither volume preserving nor reversible, so the test is
not an exact correction: measured on the double well it leaves a bias that the trajectory alone does
not have (KL(p‖q) ≈ 0.04 with the test, ≈ 5e-4 without, at ε = 0.1, m = 10, C = 1; see
``experiments/sghmc_slides.py``). The sampler exists to reproduce the acceptance rate of the slides.
:meth:`recipe` returns SGHMC's (H, D, Q) (Ma et al. 2015, Eq. 12), the continuous dynamics that
the inner steps discretise; the MH test and the momentum resampling are outside it.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import integrators
from sgmcmc.samplers.base import NOISE_ESTIMATES, Sampler
from sgmcmc.samplers.hmc import (METROPOLIS, N_LEAPFROG, require_potential_for_metropolis, trajectory_functions)
from sgmcmc.samplers.sghmc import FRICTION, SGHMC
from sgmcmc.schema import Key, choice
from sgmcmc.state import SamplerState


class SGHMCMetropolis(Sampler):
    """Chen et al. (2014) Alg. 2 trajectories of ``n_leapfrog`` (m) inner steps with friction C, then
    an MH test on the exact H (SPEC E7). ``n_leapfrog`` carries HMC's key name for m."""

    name = "sghmc_mh"
    exact_kernel = True
    integrators = ("trajectory",)
    # no running estimate: the inner steps keep no state between trajectories
    parameters = {"noise_estimate": Key(choice(*(e for e in NOISE_ESTIMATES if e != "running")),
                                        "V̂ subtracted from the injected noise: the target's V(θ) (known) or none (zero)"),
                  "friction": FRICTION, "n_leapfrog": N_LEAPFROG, "metropolis": METROPOLIS}

    def __init__(self, target, friction: float = 1.0, n_leapfrog: int = 10, metropolis: bool = True, **kwargs):
        super().__init__(target, **kwargs)
        self.friction_coefficient = self.checked("friction", friction)
        self.n_leapfrog = self.checked("n_leapfrog", n_leapfrog)
        self.metropolis = bool(metropolis)
        require_potential_for_metropolis(self)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, momentum=np.zeros_like(theta))

    def engine_integrator(self):
        return integrators.trajectory, (self.friction_coefficient, self.n_leapfrog), True, False

    def engine_variant(self):
        return integrators.METROPOLIS if self.metropolis else integrators.PLAIN

    def engine_draws(self, data):
        """r, then each inner step's gradient noise and injected noise, then the test's uniform."""
        return 1 + 2 * self.n_leapfrog, self.metropolis

    def engine_passes(self):
        """m gradients a trajectory, each with a minibatch of its own."""
        return self.n_leapfrog

    def engine_functions(self):
        return trajectory_functions(self.target.engine_functions(), exact=False)

    def unpack(self, z):
        d = self.target.dim
        return SamplerState(theta=z[:, :d], momentum=z[:, d:])

    def recipe(self):
        """SGHMC's (H, D, Q, Γ = 0, B̂ = V̂) with this friction C (Ma et al. 2015, Eq. 12): the SDE the
        inner steps discretise. Momentum resampling and the MH test are not part of it."""
        return SGHMC(self.target, friction=self.friction_coefficient, noise_estimate=self.noise_estimate).recipe()
