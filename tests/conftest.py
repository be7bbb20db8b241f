"""Fixtures shared by the tests, and numba's compilations shared by pytest-xdist's workers."""

import fcntl
import hashlib
import os
import sys
import tempfile
import threading
from pathlib import Path

import numba.core.caching
import numba.core.dispatcher
import pytest

# The generic compiled blocks, not one per combination of options (sgmcmc.engine.static.SPECIALISE; the two give the same
# bits, tests/engine/test_driver.py); set before sgmcmc is imported, and inherited by the runs tests start.
os.environ.setdefault("SGMCMC_SPECIALISE_KERNELS", "0")


class CompileOnceAcrossWorkers:
    """Wraps numba's ``Dispatcher.compile`` so that the test workers compile each function and signature one at a
    time: a worker takes an flock on a file named after the function and its signature (one folder per test run)
    before it compiles or loads it; and wraps the save of numba's on-disk cache so that one worker at a time writes a
    function's cache index.

    numba looks in its on-disk cache (``cache=True``: the ``__pycache__`` folders every worker shares) before it
    compiles, so a worker that needs a kernel another worker is compiling waits for that one signature and then loads
    it from the cache: no worker compiles what another has compiled (a function whose cache is off, and the runs that
    tests start as subprocesses, compile on their own), and workers compiling different functions or signatures do
    not wait for each other (a lock on the whole compiler made them: results/test-times/measurements-20261127.md,
    section 2; a lock per function serialised the engine's blocks, one function compiled for every model and
    integrator). The save reads a function's index, adds its entry and writes it back: two workers saving two
    signatures of one function at once would lose an entry, or give two entries one data file."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.folder.mkdir(parents=True, exist_ok=True)
        self.held = threading.local()  # the signatures this thread is compiling (one compiled inside its own: no wait)
        self.compile = numba.core.dispatcher.Dispatcher.compile
        self.save = numba.core.caching.IndexDataCacheFile.save

    def locked(self, name: str):
        """An open file whose exclusive flock the caller takes, named after ``name``."""
        return open(self.folder / hashlib.sha1(name.encode()).hexdigest(), "a")

    def __call__(self, dispatcher, signature):
        name = f"{dispatcher.py_func.__module__}.{dispatcher.py_func.__qualname__}{signature}"
        held = self.held.__dict__.setdefault("names", set())
        if name in held:
            return self.compile(dispatcher, signature)
        with self.locked(name) as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            held.add(name)
            try:
                return self.compile(dispatcher, signature)
            finally:
                held.discard(name)
                fcntl.flock(lock, fcntl.LOCK_UN)

    def save_entry(self, cache_file, key, data):
        with self.locked(f"index:{cache_file._index_path}") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                return self.save(cache_file, key, data)
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)


def pytest_configure(config):
    """In each worker of one ``pytest -n`` run, before any test module is imported: the lock files live beside the
    workers' temporary folders, in the run's own, which pytest removes with its old runs (nothing to delete here
    while another worker may still compile)."""
    _keep_absl_off_the_capture()
    if not hasattr(config, "workerinput"):
        return
    basetemp = config.option.basetemp  # <the run's temporary folder>/popen-gw<n>
    folder = (Path(basetemp).parent if basetemp else Path(tempfile.gettempdir()) /
              f"sgmcmc-{config.workerinput['testrunuid']}") / "numba-compile-locks"
    compile_once = CompileOnceAcrossWorkers(folder)
    numba.core.dispatcher.Dispatcher.compile = lambda dispatcher, signature: compile_once(dispatcher, signature)
    numba.core.caching.IndexDataCacheFile.save = lambda cache_file, key, data: compile_once.save_entry(cache_file, key,
                                                                                                       data)


def _keep_absl_off_the_capture():
    """Where jax is installed (the peers extra): absl's logging handler, made when jax is first imported, writes to
    the sys.stderr of that moment, which inside a test is pytest's capture; and it closes that stream when a later
    test's in-process run (Hydra's logging set-up) closes every handler, so every test after it failed with "I/O
    operation on closed file". Here, before any test, it writes to the process's own stderr, which it never closes."""
    try:
        from absl import logging as absl_logging  # only with jax; imported here for the reason above
    except ImportError:
        return
    absl_logging.get_absl_handler().python_handler.stream = sys.__stderr__
