"""Fixtures shared by the tests."""

import os

import pytest

# The generic compiled kernels, not one per dispatch combination (sgmcmc.engine.kernels.SPECIALISE; the two give the same
# bits, tests/engine/test_specialised.py); set before sgmcmc is imported, and inherited by the runs tests start.
os.environ.setdefault("SGMCMC_SPECIALISE_KERNELS", "0")


@pytest.fixture
def numpy_steps(monkeypatch):
    """Run every sampler on its numpy steps (the reference the compiled kernels are pinned to), for tests that put a
    deliberate bug into a numpy step to show that a statistical test catches it."""
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
