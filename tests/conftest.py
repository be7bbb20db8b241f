"""Fixtures shared by the tests."""

import pytest


@pytest.fixture
def numpy_steps(monkeypatch):
    """Run every sampler on its numpy steps (the reference the compiled kernels are pinned to), for tests that put a
    deliberate bug into a numpy step to show that a statistical test catches it."""
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
