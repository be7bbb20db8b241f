"""Step-size schedules ε_t, t = 0, 1, 2, … (the step count), each a pure function of t.

- ``constant``: ε_t = ε₀.
- ``polynomial``: ε_t = ε₀ (1 + t/b)^{−γ}, which is Welling & Teh's a(b + t)^{−γ} with a = ε₀ b^γ and
  Patterson & Teh's a(1 + t/b)^{−c} with a = ε₀ (SPEC §1, T10, T13); γ ∈ (0.5, 1] for SGLD's conditions.
- ``cyclical``: cosine cycles of Zhang et al. (2020, Eq. 1): ε_t = ε₀/2 [cos(π mod(t, L)/L) + 1],
  L = ⌈n_steps / n_cycles⌉.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from sgmcmc.schema import Key, integer, real


def step_sizes(schedule, start: int, stop: int) -> np.ndarray:
    """ε_t for t = start, …, stop − 1 as an array (a block's step sizes): the schedule's own ``step_sizes`` where it
    has one, else one call per step (the same floats as ``schedule(t)``)."""
    if isinstance(schedule, Constant):
        return np.full(stop - start, float(schedule.step_size))
    return np.array([schedule(t) for t in range(start, stop)], dtype=float)


@dataclass(frozen=True)
class Constant:
    step_size: float

    # each schedule's config keys (schedule.<key>) besides its name; ε₀ is sampler.step_size
    keys: ClassVar[dict[str, Key]] = {}

    @classmethod
    def from_config(cls, step_size: float, n_steps: int, **params):
        return cls(step_size, **params)

    def __call__(self, t: int) -> float:
        return self.step_size


@dataclass(frozen=True)
class Polynomial:
    step_size: float
    b: float = 1000.0
    gamma: float = 0.55

    keys: ClassVar[dict[str, Key]] = {"b": Key(real(0.0, strict=True), "b in ε₀(1 + t/b)^−γ"),
                                      "gamma": Key(real(0.0, strict=True, maximum=1.0), "γ in ε₀(1 + t/b)^−γ")}

    @classmethod
    def from_config(cls, step_size: float, n_steps: int, **params):
        return cls(step_size, **params)

    def __call__(self, t: int) -> float:
        return self.step_size * (1.0 + t / self.b) ** (-self.gamma)


@dataclass(frozen=True)
class Cyclical:
    step_size: float
    n_steps: int
    n_cycles: int = 4

    keys: ClassVar[dict[str, Key]] = {"n_cycles": Key(integer(1), "cosine cycles over the run")}

    @classmethod
    def from_config(cls, step_size: float, n_steps: int, **params):
        return cls(step_size, n_steps, **params)

    def __call__(self, t: int) -> float:
        length = math.ceil(self.n_steps / self.n_cycles)
        return 0.5 * self.step_size * (math.cos(math.pi * (t % length) / length) + 1.0)


# the schedules by config name; each declares its config keys (``keys``) and is built by ``from_config``
SCHEDULES = {"constant": Constant, "polynomial": Polynomial, "cyclical": Cyclical}


def make_schedule(name: str, step_size: float, n_steps: int, **params):
    """Build the schedule ``name`` with initial step size ε₀ = ``step_size``."""
    if name not in SCHEDULES:
        raise KeyError(f"unknown schedule {name!r}; allowed: {', '.join(SCHEDULES)}")
    return SCHEDULES[name].from_config(step_size, n_steps, **params)
