"""Fixtures shared by the tests, and numba's compiler lock held across pytest-xdist's workers."""

import fcntl
import os
import tempfile
import threading
from pathlib import Path

import numba.core.compiler_lock
import pytest

# The generic compiled kernels, not one per dispatch combination (sgmcmc.engine.kernels.SPECIALISE; the two give the same
# bits, tests/engine/test_specialised.py); set before sgmcmc is imported, and inherited by the runs tests start.
os.environ.setdefault("SGMCMC_SPECIALISE_KERNELS", "0")


class CompilerLockAcrossWorkers:
    """numba's global compiler lock (a thread RLock: one compilation at a time in a process), held across the test
    workers too, with an flock on one file per test run while a worker holds it.

    numba looks in its on-disk cache (``cache=True``: the ``__pycache__`` folders every worker shares) inside that
    lock before it compiles. So a worker that needs a kernel another worker is compiling waits for it and then loads
    it from the cache: no worker compiles what another already has (a cold cache costs about a minute of compilation)."""

    def __init__(self, path: Path):
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._file = open(path, "a")  # noqa: SIM115 (held for the worker's life)

    def acquire(self, blocking=True, timeout=-1):
        if not self._thread_lock.acquire(blocking, timeout):
            return False
        self._depth += 1
        if self._depth == 1:
            fcntl.flock(self._file, fcntl.LOCK_EX)
        return True

    def release(self):
        self._depth -= 1
        if self._depth == 0:
            fcntl.flock(self._file, fcntl.LOCK_UN)
        self._thread_lock.release()

    def _is_owned(self):  # what numba's is_locked asks
        return self._thread_lock._is_owned()


# set in every worker of one `pytest -n` run; each opens the file before any compilation (conftest is imported first)
LOCK_FILE = (Path(tempfile.gettempdir()) / f"sgmcmc-numba-compile-{os.environ['PYTEST_XDIST_TESTRUNUID']}.lock"
             if "PYTEST_XDIST_TESTRUNUID" in os.environ else None)
if LOCK_FILE is not None:
    numba.core.compiler_lock.global_compiler_lock._lock = CompilerLockAcrossWorkers(LOCK_FILE)


def pytest_unconfigure(config):
    if LOCK_FILE is not None:  # the workers still running hold it open: the lock lives on until the last one ends
        LOCK_FILE.unlink(missing_ok=True)


@pytest.fixture
def numpy_steps(monkeypatch):
    """Run every sampler on its numpy steps (the reference the compiled kernels are pinned to), for tests that put a
    deliberate bug into a numpy step to show that a statistical test catches it."""
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
