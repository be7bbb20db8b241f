"""The SGHMC paper's optimisation baselines (Chen, Fox & Guestrin 2014 §4.2, Table 1 and Fig. 5; SPEC T11/T12): SGD
and SGD with momentum, run by the same loop on the same minibatches as the samplers, but not samplers: they keep no
samples (``kind = "optimiser"``), their prediction is the current point, and a target's hyperparameters follow its
``optimiser_hyperparameters``: kept at their initial values (the default, and the BNN's and BPMF's: the conditional's
mode, the authors' MAP update, held the BNN's weights and BPMF's factors near 0 under SGD) or set to the conditional's
mode at each Gibbs interval (:func:`sgmcmc.runner.run_chains`).

Each is the drift of a recipe sampler with the injected noise removed, in the same step-size parametrisation, so a
setting carries over:

- ``sgd``: θ' = θ − ε∇Ũ(θ), SGLD's Euler step without N(0, 2ε) (Ma et al. 2015 Eq. 13);
- ``sgd_momentum``: r' = (1 − εC) r − ε∇Ũ(θ), θ' = θ + ε r', SGHMC's splitting step without N(0, ε(2C − εV̂))
  (Eq. 12, SPEC §4.1), from r₀ = 0. In the heavy-ball form of the authors' code, v = εr: v' = (1 − α)v − η∇Ũ(θ),
  θ' = θ + v' with learning rate η = ε² and momentum decay α = εC.

``tests/samplers/test_optimisers.py`` pins each step to its sampler's step with the injected normals set to zero.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.samplers.base import Sampler
from sgmcmc.samplers.sghmc import FRICTION
from sgmcmc.state import SamplerState, StepInfo


class SGD(Sampler):
    """Stochastic gradient descent on U: θ' = θ − ε∇Ũ(θ) (module docstring)."""

    name = "sgd"
    kind = "optimiser"
    integrators = ("euler",)
    parameters = {}

    def __init__(self, target, integrator=None):
        super().__init__(target, integrator=integrator, noise_estimate="zero")

    def init(self, theta, rng):
        return SamplerState(theta=np.array(theta, dtype=float))

    def _step_euler(self, rng, state, step_size):
        gradient = self.target.stochastic_gradient(state.theta, rng)
        theta, _, reflected = self.reflect(state.theta - step_size * gradient)
        return SamplerState(theta=theta), StepInfo(reflected=reflected)


class SGDMomentum(Sampler):
    """SGD with heavy-ball momentum: r' = (1 − εC) r − ε∇Ũ(θ), θ' = θ + ε r' (module docstring)."""

    name = "sgd_momentum"
    kind = "optimiser"
    integrators = ("splitting",)
    parameters = {"friction": FRICTION}

    def __init__(self, target, friction: float = 1.0, integrator=None):
        super().__init__(target, integrator=integrator, noise_estimate="zero")
        self.friction_coefficient = self.checked("friction", friction)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, momentum=np.zeros_like(theta))

    def _step_splitting(self, rng, state, step_size):
        gradient = self.target.stochastic_gradient(state.theta, rng)
        momentum = state.momentum - step_size * gradient - step_size * self.friction_coefficient * state.momentum
        theta, momentum, reflected = self.reflect(state.theta + step_size * momentum, momentum)
        return SamplerState(theta=theta, momentum=momentum), StepInfo(reflected=reflected)
