"""What a sampler is: an ``init``/``step`` pair over a :class:`~sgmcmc.state.SamplerState`, plus the
(H, D, Q, Γ) it implements, so the generic recipe step (Ma et al. 2015, Eq. 9 + K1) can run it too.

``step(rng, state, step_size) -> (state, info)`` is vectorised across chains. ``integrator`` picks
the closed-form update: ``"splitting"`` (default for momentum samplers, SPEC §4.1), ``"euler"`` (the
simultaneous Euler step, equal to the generic step for the same random numbers) or ``"generic"``
(the generic recipe step on the sampler's own D and Q, with Γ from the sampler or finite differences).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Optional

import numpy as np

from sgmcmc.recipe import Recipe, check_recipe, recipe_step
from sgmcmc.state import SamplerState, StepInfo
from sgmcmc.targets.base import Target

NOISE_ESTIMATES = ("known", "zero")


def block_diagonal(*blocks: np.ndarray) -> np.ndarray:
    """Stack per-chain square blocks (n, k_i, k_i) into (n, Σk, Σk)."""
    n = blocks[0].shape[0]
    size = sum(block.shape[-1] for block in blocks)
    out = np.zeros((n, size, size))
    start = 0
    for block in blocks:
        k = block.shape[-1]
        out[:, start : start + k, start : start + k] = block
        start += k
    return out


def diagonal_matrices(diagonal: np.ndarray) -> np.ndarray:
    """(n, k) → (n, k, k) diagonal matrices."""
    n, k = diagonal.shape
    out = np.zeros((n, k, k))
    index = np.arange(k)
    out[:, index, index] = diagonal
    return out


class Sampler(ABC):
    """Base class of every sampler: binds a target and the sampler's parameters.

    Subclasses set ``integrators`` (the first is the default), implement ``init``, the closed-form
    steps ``_step_<integrator>`` and, unless they are outside the recipe class, ``recipe``,
    ``pack`` and ``unpack``.
    """

    name = "sampler"
    integrators: tuple[str, ...] = ("euler", "generic")

    def __init__(self, target: Target, integrator: Optional[str] = None, noise_estimate: str = "known"):
        self.target = target
        self.integrator = integrator or self.integrators[0]
        if self.integrator not in self.integrators:
            raise ValueError(f"integrator must be one of {', '.join(self.integrators)}")
        if noise_estimate not in NOISE_ESTIMATES:
            raise ValueError(f"noise_estimate must be one of {', '.join(NOISE_ESTIMATES)}")
        self.noise_estimate = noise_estimate

    # -- state ----------------------------------------------------------------------------------
    @abstractmethod
    def init(self, theta: np.ndarray, rng: np.random.Generator) -> SamplerState:
        """Initial state for positions θ of shape (n_chains, dim)."""

    def step(self, rng: np.random.Generator, state: SamplerState, step_size: float) -> tuple[SamplerState, StepInfo]:
        """One update of every chain with step size ε."""
        if self.integrator == "generic":
            z = recipe_step(self.recipe(), self.pack(state), step_size, rng)
            return self.unpack(z), StepInfo()
        return getattr(self, f"_step_{self.integrator}")(rng, state, step_size)

    # -- the recipe ---------------------------------------------------------------------------------
    def recipe(self) -> Recipe:
        """(∇H̃, D, Q, Γ, B̂) on the packed state z."""
        raise TypeError(f"sampler {self.name!r} declares no recipe")

    def pack(self, state: SamplerState) -> np.ndarray:
        """The state as one array z of shape (n_chains, dim_z)."""
        parts = [state.theta]
        if state.momentum is not None:
            parts.append(state.momentum)
        if state.xi is not None:
            parts.append(state.xi[:, None])
        return np.concatenate(parts, axis=1)

    def unpack(self, z: np.ndarray) -> SamplerState:
        """Inverse of :meth:`pack`."""
        return SamplerState(theta=z)

    def validate(self, state: SamplerState) -> None:
        """Check D(z) symmetric PSD and Q(z) skew-symmetric at ``state`` (run start and tests)."""
        check_recipe(self.recipe(), self.pack(state))

    # -- helpers ------------------------------------------------------------------------------------
    def gradient_noise(self, theta: np.ndarray) -> Optional[np.ndarray]:
        """V̂ per SPEC §4.3: the target's known V for ``known``, None for ``zero``."""
        if self.noise_estimate == "zero":
            return None
        return self.target.noise_covariance(theta)

    def _noise_block(self, theta: np.ndarray, transform: Optional[np.ndarray] = None) -> np.ndarray:
        """B̂ in the block that receives ∇Ũ through the diagonal matrix T: T V̂ T, shape (n, d, d)."""
        n, d = theta.shape
        variance = self.gradient_noise(theta)
        if variance is None:
            return np.zeros((n, d, d))
        variance = np.broadcast_to(variance, (n, d, d))
        if transform is None:
            return np.array(variance)
        return transform[:, :, None] * variance * transform[:, None, :]
