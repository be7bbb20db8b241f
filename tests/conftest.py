"""Fixtures shared by the tests, and numba's compilations shared by pytest-xdist's workers."""

import fcntl
import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import numba.core.dispatcher
import pytest

# The generic compiled kernels, not one per dispatch combination (sgmcmc.engine.kernels.SPECIALISE; the two give the same
# bits, tests/engine/test_specialised.py); set before sgmcmc is imported, and inherited by the runs tests start.
os.environ.setdefault("SGMCMC_SPECIALISE_KERNELS", "0")


class CompileOnceAcrossWorkers:
    """Wraps numba's ``Dispatcher.compile`` so that the test workers compile each function one at a time: a worker
    takes an flock on a file named after the function (one folder per test run) before it compiles or loads it.

    numba looks in its on-disk cache (``cache=True``: the ``__pycache__`` folders every worker shares) before it
    compiles, so a worker that needs a kernel another worker is compiling waits for that one function and then loads
    it from the cache: no worker compiles what another already has, and workers compiling different functions do not
    wait for each other (a lock on the whole compiler made them: 350 s against 322 s for a cold `make test`)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.held: set[str] = set()  # this worker's locks (a function compiled inside its own compilation: no wait)
        self.compile = numba.core.dispatcher.Dispatcher.compile

    def __call__(self, dispatcher, signature):
        name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}"
        if name in self.held:
            return self.compile(dispatcher, signature)
        self.folder.mkdir(exist_ok=True)  # (again after a worker that ended first removed it)
        with open(self.folder / hashlib.sha1(name.encode()).hexdigest(), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            self.held.add(name)
            try:
                return self.compile(dispatcher, signature)
            finally:
                self.held.discard(name)
                fcntl.flock(lock, fcntl.LOCK_UN)


# set in every worker of one `pytest -n` run; conftest is imported before any test module compiles anything
LOCK_FOLDER = (Path(tempfile.gettempdir()) / f"sgmcmc-numba-compile-{os.environ['PYTEST_XDIST_TESTRUNUID']}"
               if "PYTEST_XDIST_TESTRUNUID" in os.environ else None)
if LOCK_FOLDER is not None:
    compile_once = CompileOnceAcrossWorkers(LOCK_FOLDER)
    numba.core.dispatcher.Dispatcher.compile = lambda dispatcher, signature: compile_once(dispatcher, signature)


def pytest_unconfigure(config):
    if LOCK_FOLDER is not None:  # a worker still compiling holds its lock file open: removing the folder is harmless
        shutil.rmtree(LOCK_FOLDER, ignore_errors=True)


@pytest.fixture
def numpy_steps(monkeypatch):
    """Run every sampler on its numpy steps (the reference the compiled kernels are pinned to), for tests that put a
    deliberate bug into a numpy step to show that a statistical test catches it."""
    monkeypatch.setattr("sgmcmc.engine.blocks.COMPILED", False)
