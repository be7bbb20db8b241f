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

Each is its sampler's blocks on the engine without the injected noise (:meth:`~sgmcmc.engine.driver.Blocks.without_noise`):
the update is written once, in the engine's integrator; the block draws the sampler's random numbers and drops the
injected ones (on a data model it draws none of them: its minibatches alone).
``tests/samplers/test_optimisers.py`` pins each step to a hand-written heavy-ball update.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine.driver import COMPILED
from sgmcmc.samplers.sghmc import FRICTION, SGHMC
from sgmcmc.samplers.sgld import SGLD
from sgmcmc.state import SamplerState


class WithoutNoise:
    """A sampler's step without its injected noise, as an optimiser: mixed in before the sampler's class."""

    kind = "optimiser"

    def engine_blocks(self, backend=COMPILED):
        blocks = super().engine_blocks(backend)
        return None if blocks is None else blocks.without_noise(drawn=False)


class SGD(WithoutNoise, SGLD):
    """Stochastic gradient descent on U: θ' = θ − ε∇Ũ(θ), SGLD's Euler step without its noise (module docstring)."""

    name = "sgd"
    integrators = ("euler",)
    exact_kernel = explores = True  # SGLD's blocks, without the noise
    parameters = {}

    def __init__(self, target, integrator=None):
        super().__init__(target, integrator=integrator, noise_estimate="zero")


class SGDMomentum(WithoutNoise, SGHMC):
    """SGD with heavy-ball momentum: r' = (1 − εC) r − ε∇Ũ(θ), θ' = θ + ε r', SGHMC's splitting step without its
    noise, from r₀ = 0 (module docstring)."""

    name = "sgd_momentum"
    integrators = ("splitting",)
    exact_kernel = explores = True  # SGHMC's blocks, without the noise
    parameters = {"friction": FRICTION}

    def __init__(self, target, friction: float = 1.0, integrator=None):
        super().__init__(target, friction=friction, integrator=integrator, noise_estimate="zero")

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, momentum=np.zeros_like(theta))
