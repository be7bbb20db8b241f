"""BAOAB and BADODAB: the Leimkuhler–Matthews splittings of underdamped Langevin dynamics and of adaptive
Langevin (SGNHT), one stochastic gradient per step.

Step-size convention: h = ε (SPEC §0 table, the [C] row), force F = −∇Ũ, unit mass, k_BT = 1.

**BAOAB** (Leimkuhler & Matthews 2013, "Rational construction of stochastic numerical methods for molecular
sampling", the BAOAB scheme of their §2; Leimkuhler & Matthews 2015, *Molecular Dynamics*, §7.3), for
dθ = r dt, dr = −∇U dt − C r dt + √(2C) dW:

    B  r₁ = r_n + (h/2) F(θ_n)
    A  θ₁ = θ_n + (h/2) r₁
    O  r₂ = e^{−hC} r₁ + √(1 − e^{−2hC}) R_n                        (the exact Ornstein–Uhlenbeck step)
    A  θ_{n+1} = θ₁ + (h/2) r₂
    B  r_{n+1} = r₂ + (h/2) F(θ_{n+1})

F(θ_{n+1}) is the step's one stochastic gradient, kept in the state (``SamplerState.gradient``) and reused by the
first B of the next step, as the published scheme does (one force evaluation per step) and as SGMCMCJax's
``baoab`` runs it (its palindrome kernel carries the gradient from the end of one step to the start of the next).
The first step of a run, which has none, draws F(θ₀). Its continuous dynamics is SGHMC's recipe instance (Ma et
al. 2015, Eq. 12): H = U + ½rᵀr, D = [[0, 0], [0, C·I]], Q = [[0, −I], [I, 0]], Γ = 0 (:meth:`recipe`,
inherited), so the ``generic`` integrator is SGHMC's recipe step.

**BADODAB** (Leimkuhler & Shang 2016, "Adaptive thermostats for noisy gradient systems", SIAM J. Sci. Comput.
38(2), §5, the scheme they recommend for adaptive Langevin; Shang et al. 2015 [C] cite it as [15]), for SGNHT's
dynamics dθ = r dt, dr = −∇U dt − ξ r dt + √(2A) dW, dξ = μ⁻¹(rᵀr − d) dt with μ = d (SPEC §1, K3):

    B  r₁ = r_n + (h/2) F(θ_n)
    A  θ₁ = θ_n + (h/2) r₁
    D  ξ₁ = ξ_n + (h/2)(r₁ᵀr₁/d − 1)
    O  r₂ = e^{−ξ₁h} r₁ + √(A(1 − e^{−2ξ₁h})/ξ₁) R_n                  (√(2Ah) R_n at ξ₁ = 0)
    D  ξ_{n+1} = ξ₁ + (h/2)(r₂ᵀr₂/d − 1)
    A  θ_{n+1} = θ₁ + (h/2) r₂
    B  r_{n+1} = r₂ + (h/2) F(θ_{n+1})

with the same reuse of F(θ_{n+1}). Recipe instance: SGNHT's (H = U + ½rᵀr + (d/2)(ξ − A)², D = diag(0, A·I, 0),
Q with ±r/d, Γ = (0, 0, −1)), inherited.

**Where SGMCMCJax's ``badodab`` differs** (jeremiecoullon/SGMCMCJax ``sgmcmcjax/diffusions.py``): its D step adds
(h/2)(‖r‖ − d) with the norm, not its square (rᵀr), and μ = 1 instead of d; its O step has σ_A = 1 (our A = ½) and
its argument ``a`` is only ξ₀; r₀ = 0 where we draw r₀ ~ N(0, I); it takes ∇log π (F) with h as ours. Its
``baoab`` has O noise ``tau·√(1 − e^{−2γh})`` (τ = 1: ours) and starts from the full-data gradient. We follow the
papers' equations above.

**Gradient noise** (ours; SPEC §4.3, not in the papers, which assume exact forces). Between two O steps r receives
h·F(θ_{n+1}) in two halves, so gradient noise of covariance V adds h²V to r per step. With ``noise_estimate``
known or running, the O step makes room for it: R_n's covariance (1 − e^{−2hC})I − h²V̂ for BAOAB (A(1 −
e^{−2ξh})/ξ · I − h²V̂ for BADODAB), the exact OU variance less the recipe's ε²B̂; V̂ is the target's V at θ₁
(known) or the running estimate of the last gradient's minibatches (running). Not PSD: a one-line error, or clipped
with ``noise_clip``. With ``zero`` nothing is subtracted: BAOAB then runs hot (r's stationary variance about
1 + hV/(2C)), while BADODAB's thermostat absorbs the noise: ξ settles near A + h·tr V/(2d) to first order (:meth:`BADODAB.
predicted_thermostat` solves the linearised step), as Leimkuhler & Shang show for adaptive Langevin.

**On the engine** (:meth:`_ForceReuse.engine_integrator`): on a model that hands the engine its functions,
:func:`sgmcmc.engine.integrators.ou_splitting` runs these steps line for line, carrying the kept gradient from step
to step and block to block (the driver's carried vector, ``state.gradient``); a state without one takes F(θ₀) in a
pass of its own before the block's steps (:meth:`sgmcmc.engine.driver.Blocks.first_carry`), its random numbers drawn
as a step's. On a data model the O step's
V̂ is the estimator's (:func:`sgmcmc.engine.estimators.minibatch_noise`): V(θ₁) for ``known``, c·Î_t for
``running``; on a bounded support (Normal-Gamma) the target's reflection after each half move. The ``generic`` integrator is the recipe's step
(:meth:`~sgmcmc.samplers.base.Sampler.step`).
"""

from __future__ import annotations

import numpy as np

from sgmcmc.diagnostics.linearised import mean_hessian, ou_splitting_thermostat_fixed_point
from sgmcmc.engine import integrators
from sgmcmc.samplers.sghmc import SGHMC
from sgmcmc.samplers.sgnht import SGNHT


class _ForceReuse:
    """The one-gradient-per-step bookkeeping shared by BAOAB and BADODAB (a mixin before the sampler class)."""

    def engine_integrator(self):
        """:func:`~sgmcmc.engine.integrators.ou_splitting` with C (BAOAB) or A and ξ (BADODAB)."""
        thermostat = isinstance(self, SGNHT)
        return integrators.ou_splitting, self.diffusion if thermostat else self.friction_coefficient, True, thermostat

    def engine_carry(self):
        """The kept gradient ∇Ũ(θ_n), ``state.gradient``; a state without one takes F(θ₀) in a pass of its own."""
        return "gradient", True


class BAOAB(_ForceReuse, SGHMC):
    name = "baoab"
    exact_kernel = True
    integrators = ("baoab", "generic")


class BADODAB(_ForceReuse, SGNHT):
    name = "badodab"
    exact_kernel = True
    integrators = ("badodab", "generic")

    def predicted_thermostat(self, theta: np.ndarray, step_size: float):
        """Where ξ settles at step size h over positions θ (m, d): the step linearised at fixed ξ around the mean
        Hessian of U over θ, with gradient noise V̄ = E V(θ) of which the O step subtracts k·V̄ (k as in
        :meth:`~sgmcmc.samplers.sgnht.SGNHT.predicted_thermostat`), solved for the ξ at which the thermostat's two
        D half-steps balance (:func:`~sgmcmc.diagnostics.linearised.ou_splitting_thermostat_fixed_point`; first
        order: A + h(1 − k)·tr V̄/(2d), [C] Prop. 1). None if V is unknown."""
        noise, compensated = self._mean_noise(theta)
        if noise is None:
            return None
        return ou_splitting_thermostat_fixed_point(step_size, self.diffusion, noise, compensated * noise,
                                                   mean_hessian(self.target, theta))
