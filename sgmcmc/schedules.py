"""Step-size schedules ε_t, t = 0, 1, 2, … (the step count), each a pure function of t.

- ``constant``: ε_t = ε₀.
- ``polynomial``: ε_t = ε₀ (1 + t/b)^{−γ} (after ``delay`` steps at ε₀: t − delay in place of t), which is Welling & Teh's a(b + t)^{−γ} with a = ε₀ b^γ and
  Patterson & Teh's a(1 + t/b)^{−c} with a = ε₀ (SPEC §1, T10, T13); γ ∈ (0.5, 1] for SGLD's conditions.
- ``cyclical``: cosine cycles of Zhang et al. (2020, Eq. 1): ε_t = ε₀/2 [cos(π mod(t, L)/L) + 1],
  L = ⌈n_steps / n_cycles⌉. With ``exploration`` β > 0, step t (the paper's k = t + 1) of a cycle is an exploration
  step when r = mod(t, L)/L < β (Algorithm 1): the sampler's step without its injected noise, whose state is not kept
  (:func:`exploring`, :func:`phase_end`; the run loop, :func:`sgmcmc.runner.iterate_blocks`, runs them).
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
    if isinstance(schedule, NoiseFreeStart):
        return step_sizes(schedule.schedule, start, stop)
    if isinstance(schedule, Constant):
        return np.full(stop - start, float(schedule.step_size))
    return np.array([schedule(t) for t in range(start, stop)], dtype=float)


def exploring(schedule, t: int) -> bool:
    """Whether step t (0-based) is an exploration step: the schedule's own ``exploring`` where it has phases, else
    False (every step samples)."""
    method = getattr(schedule, "exploring", None)
    return bool(method(t)) if method is not None else False


def phase_end(schedule, t: int, stop: int) -> int:
    """The first step t' in (t, stop] whose phase differs from step t's (``stop`` when none): a block of steps
    t .. t' − 1 is all exploration or all sampling."""
    method = getattr(schedule, "phase_end", None)
    return min(stop, method(t)) if method is not None else stop


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
    delay: int = 0

    keys: ClassVar[dict[str, Key]] = {"b": Key(real(0.0, strict=True), "b in ε₀(1 + t/b)^−γ"),
                                      "gamma": Key(real(0.0, strict=True, maximum=1.0), "γ in ε₀(1 + t/b)^−γ"),
                                      "delay": Key(integer(0), "ε₀ for the first delay steps, then ε₀(1 + (t − delay)/b)^−γ "
                                                               "(Zhang et al.'s SGLD: 500 steps, b = 1)")}

    @classmethod
    def from_config(cls, step_size: float, n_steps: int, **params):
        return cls(step_size, **params)

    def __call__(self, t: int) -> float:
        return self.step_size * (1.0 + max(0, t - self.delay) / self.b) ** (-self.gamma)


@dataclass(frozen=True)
class Cyclical:
    step_size: float
    n_steps: int
    n_cycles: int = 4
    exploration: float = 0.0

    keys: ClassVar[dict[str, Key]] = {
        "n_cycles": Key(integer(1), "cosine cycles over the run"),
        "exploration": Key(real(0.0, maximum=1.0), "β: the first fraction β of each cycle explores (the sampler's "
                                                   "step without injected noise, states not kept; Zhang et al. 2020 "
                                                   "Alg. 1); 0: every step samples")}

    @classmethod
    def from_config(cls, step_size: float, n_steps: int, **params):
        return cls(step_size, n_steps, **params)

    @property
    def length(self) -> int:
        """L = ⌈n_steps / n_cycles⌉, the steps of one cycle."""
        return math.ceil(self.n_steps / self.n_cycles)

    @property
    def exploration_steps(self) -> int:
        """The exploration steps at the start of each cycle: the number of r = p/L, p = 0 … L − 1, with r < β."""
        length = self.length
        count = min(length, math.ceil(self.exploration * length))  # then exact in floating point, as r < β reads:
        while count > 0 and (count - 1) / length >= self.exploration:
            count -= 1
        while count < length and count / length < self.exploration:
            count += 1
        return count

    def __call__(self, t: int) -> float:
        length = self.length
        return 0.5 * self.step_size * (math.cos(math.pi * (t % length) / length) + 1.0)

    def exploring(self, t: int) -> bool:
        """Step t explores: mod(t, L) < the exploration steps (r(k) < β of Algorithm 1, k = t + 1)."""
        return t % self.length < self.exploration_steps

    def phase_end(self, t: int) -> int:
        """The first step after t where the phase changes: the cycle's first sampling step, or the next cycle's start."""
        start = t - t % self.length
        explore = self.exploration_steps
        if explore == 0:
            return self.n_steps  # one phase: blocks are cut as before
        return start + explore if t % self.length < explore else start + self.length


@dataclass(frozen=True)
class NoiseFreeStart:
    """``schedule`` whose first ``steps`` steps explore (``run.noise_free_steps``): the sampler's step without its
    injected noise, its states not kept (the SGHMC authors' code runs its first BNN epoch and first 2 BPMF rounds
    so, as SGD or SGD with momentum); the same step sizes."""

    schedule: object
    steps: int

    def __call__(self, t: int) -> float:
        return self.schedule(t)

    def exploring(self, t: int) -> bool:
        return t < self.steps or exploring(self.schedule, t)

    def phase_end(self, t: int) -> int:
        """The first step after t where the phase changes: ``steps`` inside the noise-free start, else the
        schedule's own."""
        if t < self.steps:
            return self.steps
        method = getattr(self.schedule, "phase_end", None)
        return method(t) if method is not None else np.iinfo(np.int64).max


def noise_free_start(schedule, steps: int):
    """``schedule`` with its first ``steps`` steps noise-free (:class:`NoiseFreeStart`), or itself for 0."""
    return NoiseFreeStart(schedule, int(steps)) if steps > 0 else schedule


# the schedules by config name; each declares its config keys (``keys``) and is built by ``from_config``
SCHEDULES = {"constant": Constant, "polynomial": Polynomial, "cyclical": Cyclical}


def make_schedule(name: str, step_size: float, n_steps: int, **params):
    """Build the schedule ``name`` with initial step size ε₀ = ``step_size``."""
    if name not in SCHEDULES:
        raise KeyError(f"unknown schedule {name!r}; allowed: {', '.join(SCHEDULES)}")
    return SCHEDULES[name].from_config(step_size, n_steps, **params)
