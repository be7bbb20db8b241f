"""The count of the injected noise's clipped full draws.

The injected noise N(0, ε(2D − ε T V̂ Tᵀ)) itself (SPEC §4.3) is drawn by the engine's blocks
(:mod:`sgmcmc.engine.injection`); its numpy reference is ``tests/reference_noise.py``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ClipCounters:
    """What the engine's clipped draws (:mod:`sgmcmc.engine.injection`) did with full (non-diagonal) covariances in
    this process, per chain and step: ``draws`` covariances drawn from, ``fallbacks`` of them eigendecomposed because their Cholesky
    factorisation failed (a negative, or numerically zero, eigenvalue). Read it around a run
    (:meth:`snapshot` before and after) or :meth:`reset` it; it is never part of a sampler's state."""

    draws: int = 0
    fallbacks: int = 0

    def reset(self) -> None:
        self.draws = self.fallbacks = 0

    def snapshot(self) -> tuple[int, int]:
        """(draws, fallbacks) so far."""
        return self.draws, self.fallbacks


clip_counters = ClipCounters()
