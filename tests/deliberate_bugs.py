"""Deliberate bugs on the engine's blocks, for the tests that show a statistical check catches one: each breaks what a
block hands its compiled integrator (the step's random numbers, ...) and leaves the compiled code as it is, so no
update is copied and no block is compiled again."""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import driver

REAL_BLOCK_DRAWS = driver.block_draws


def doubled_noise_draws(*args, **kwargs):
    """:func:`sgmcmc.engine.driver.block_draws` with slot 1, the injected noise's standard normals, times √2: every
    integrator that injects from slot 1 (Langevin, the momentum and thermostat steps) injects twice its variance."""
    rows, normals, uniforms = REAL_BLOCK_DRAWS(*args, **kwargs)
    normals[:, 1] *= np.sqrt(2.0)
    return rows, normals, uniforms


def double_the_injected_noise(monkeypatch) -> None:
    """Every block of the test draws :func:`doubled_noise_draws`."""
    monkeypatch.setattr(driver, "block_draws", doubled_noise_draws)
