"""Deterministic delivery of SIGINT and SIGTERM: only the main thread ever takes them.

A signal sent to a stopped process (Ctrl-Z, or a test that pauses the run) stays pending until the process
continues, and then the first of its threads to wake may take it. When that is a BLAS or numba worker, Python
runs its handler on the main thread only at some later point, possibly after the run has checked whether to
stop and taken one more step. A thread started while the stop signals are blocked inherits the block, so
every worker started inside :func:`workers_ignore_stop_signals` leaves them to the main thread, whose handler
then runs before the next check (the main thread takes the pending signal as it resumes).

No numpy here: ``run.py`` imports numpy (which starts OpenBLAS's threads) inside the block.
"""

from __future__ import annotations

import signal
import sys
from contextlib import contextmanager

STOP_SIGNALS = frozenset({signal.SIGINT, signal.SIGTERM})


@contextmanager
def workers_ignore_stop_signals():
    """Block SIGINT/SIGTERM in the calling thread while the body runs, so threads started there inherit the
    block; the caller's mask is restored afterwards (a signal that arrived meanwhile is then taken by it)."""
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


def start_worker_threads() -> None:
    """Start numba's thread pool now, when numba is loaded (a run that uses its parallel loops, e.g. LDA's Gibbs
    kernels), so that it starts inside :func:`workers_ignore_stop_signals` rather than at the first parallel loop
    in the middle of a run. The pool starts at the first parallel launch: one tiny cached kernel."""
    if "numba" in sys.modules:
        import numpy as np

        _parallel_sum(np.ones(2))


def _compile_parallel_sum():
    import numba

    @numba.njit(parallel=True, cache=True)
    def parallel_sum(values):
        total = 0.0
        for i in numba.prange(values.size):
            total += values[i]
        return total

    return parallel_sum


def _parallel_sum(values):
    global _PARALLEL_SUM
    if _PARALLEL_SUM is None:
        _PARALLEL_SUM = _compile_parallel_sum()
    return _PARALLEL_SUM(values)


_PARALLEL_SUM = None
