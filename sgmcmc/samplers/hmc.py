"""HMC (Duane et al. 1987; Neal 2011) with leapfrog and Metropolis–Hastings: the exact reference
(Ma et al. 2015, Eq. 10; SPEC §1): z = (θ, r), H = U + ½rᵀr, D = 0, Q = [[0, −I], [I, 0]], Γ = 0.

Per step: r ~ N(0, I); leapfrog with m steps (half kicks at both ends); accept with probability
min(1, exp(H_old − H_new)) using the exact U (SPEC §0 K4). Unit mass.

Naive SGHMC (Ma et al. 2015, Eq. 11) is the same trajectory with ∇Ũ in place of ∇U, with or
without the MH test: :class:`NaiveSGHMC`.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from sgmcmc.engine import integrators
from sgmcmc.engine.estimators import has_potential, on_rows
from sgmcmc.engine.replay import per_chain
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import Sampler
from sgmcmc.schema import Key, boolean, integer
from sgmcmc.state import SamplerState


def require_potential_for_metropolis(sampler) -> None:
    """A Metropolis test needs the exact U(θ): refuse a target without one. And a
    leapfrog trajectory runs m steps with no reflection between them: refuse a target with a bounded support. The test
    runs on the engine's blocks, so the model must hand U over to them too."""
    if sampler.target.bounded:
        raise ValueError(f"{sampler.name}'s leapfrog trajectories do not reflect at the boundary of target "
                         f"{sampler.target.name!r}'s support (use a one-step sampler: sgld, sgrld, sghmc, sgrhmc)")
    if sampler.metropolis and not sampler.target.has_potential:
        raise ValueError(f"metropolis=true needs the exact potential U for the Metropolis test, which target "
                         f"{sampler.target.name!r} does not have (set sampler.metropolis=false)")
    functions = sampler.engine_functions()  # the test runs on the engine's blocks: U as the model hands it over there
    if sampler.metropolis and functions is not None and not has_potential(per_chain(functions)):
        raise ValueError(f"metropolis=true needs the exact potential U on the engine's blocks for the Metropolis test "
                         f"(the model's row_log_likelihoods and prior_log_density), which target "
                         f"{sampler.target.name!r} does not hand over (set sampler.metropolis=false)")


N_LEAPFROG = Key(integer(1), "m, steps per trajectory")
METROPOLIS = Key(boolean, "the MH test on the exact H = U + ½rᵀr after each trajectory")


class HMC(Sampler):
    name = "hmc"
    integrators = ("leapfrog",)
    parameters = {"n_leapfrog": N_LEAPFROG, "metropolis": METROPOLIS}  # no gradient-noise correction: no noise keys
    uses_stochastic_gradient = False
    exact_kernel = True

    def __init__(self, target, n_leapfrog: int = 10, metropolis: bool = True, **kwargs):
        # a leapfrog injects no noise, so no V̂ is subtracted whatever is asked (no noise key in its config): none is
        # computed either (a data model's known V(θ) would be a pass over the data at every gradient)
        kwargs["noise_estimate"] = "zero"
        super().__init__(target, **kwargs)
        self.n_leapfrog = self.checked("n_leapfrog", n_leapfrog)
        self.metropolis = bool(metropolis)
        if not self.uses_stochastic_gradient and not target.has_exact_gradient:
            raise ValueError(f"{self.name} follows the exact gradient of the whole data set, which target {target.name!r} "
                             "does not have (use a stochastic-gradient sampler)")
        require_potential_for_metropolis(self)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, momentum=np.zeros_like(theta))

    def engine_integrator(self):
        return integrators.trajectory, (0.0, self.n_leapfrog), True, False

    def engine_variant(self):
        return integrators.METROPOLIS if self.metropolis else integrators.PLAIN

    def engine_draws(self, data):
        """r, then ∇Ũ's m + 1 gradient noises (none for the exact ∇U, nor on a data model, whose minibatches are its
        noise), then the test's uniform."""
        return 1 + (self.n_leapfrog + 1 if self.uses_stochastic_gradient and not data else 0), self.metropolis

    def engine_passes(self):
        """m + 1 gradients a trajectory, each with a minibatch of its own (all N rows for the exact ∇U)."""
        return self.n_leapfrog + 1

    def engine_functions(self):
        """The target's functions, a density model's without gradient noise for the exact ∇U."""
        return trajectory_functions(self.target.engine_functions(), exact=not self.uses_stochastic_gradient)

    def unpack(self, z):
        d = self.target.dim
        return SamplerState(theta=z[:, :d], momentum=z[:, d:])

    def recipe(self):
        """HMC's (H, D, Q); the leapfrog is the composition kick(ε/2)∘(drift(ε)∘kick(ε))^… of generic
        recipe steps on H = U and H = ½rᵀr with D = 0 (checked in the tests)."""
        d = self.target.dim
        gradient = self.target.stochastic_gradient if self.uses_stochastic_gradient else (lambda theta, rng: self.target.gradient(theta))

        def curl(z):
            out = np.zeros((z.shape[0], 2 * d, 2 * d))
            out[:, :d, d:] = -np.eye(d)
            out[:, d:, :d] = np.eye(d)
            return out

        return Recipe(
            energy_gradient=lambda z, rng: np.concatenate([gradient(z[:, :d], rng), z[:, d:]], axis=1),
            diffusion=lambda z: np.zeros((z.shape[0], 2 * d, 2 * d)),
            curl=curl,
            correction=lambda z: np.zeros_like(z),
            energy=lambda z: self.target.potential(z[:, :d]) + 0.5 * np.sum(z[:, d:] ** 2, axis=1),
        )


class NaiveSGHMC(HMC):
    """Naive SGHMC (Ma et al. 2015, Eq. 11; Chen et al. 2014 §3.1): HMC with ∇Ũ and no friction.

    Not in the recipe class: the gradient noise adds N(0, ε²V) to r with no matching friction.
    ``metropolis=True`` adds the MH test with the exact U ("naive SGHMC + MH").
    """

    name = "naive_sghmc"
    uses_stochastic_gradient = True
    exact_kernel = True

    def __init__(self, target, n_leapfrog: int = 50, metropolis: bool = False, **kwargs):
        super().__init__(target, n_leapfrog=n_leapfrog, metropolis=metropolis, **kwargs)


def trajectory_functions(functions: Optional[dict], exact: bool) -> Optional[dict]:
    """A resampled-trajectory sampler's view of what the target hands the engine: a density model's with the gradient
    noise's factor zero for the exact ∇U (HMC); a data model's without its gradient estimator's control variates or
    SVRG for the exact ∇U (its blocks take all N rows: :attr:`~sgmcmc.samplers.base.Sampler.uses_stochastic_gradient`;
    else as it is; None for a model that estimates ∇Ũ by itself (its
    own minibatches, one a step) or none."""
    if functions is None or "batch_gradient" in functions:
        return None
    if exact and not on_rows(functions):
        functions = {**functions, "noise_factor": np.zeros_like(functions["noise_factor"])}
    elif exact:
        dropped = {"centre", "centre_mean", "advanced"} if "centre" in functions else (
            {"update_every", "estimator_state", "estimator_size", "advanced"} if "update_every" in functions else set())
        functions = {key: value for key, value in functions.items() if key not in dropped}
    return functions
