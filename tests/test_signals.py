"""sgmcmc.signals: a thread started inside ``workers_ignore_stop_signals`` blocks SIGINT and SIGTERM, the caller's
mask is restored afterwards, and a thread started outside it does not block them (read from
/proc/self/task/<tid>/status, the kernel's own record of each thread's mask)."""

import signal
import threading
from pathlib import Path

from sgmcmc.signals import workers_ignore_stop_signals

BOTH = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))


def _blocked_in_new_thread() -> int:
    """The SigBlk mask of a thread started now, read while it is alive."""
    seen, release = [], threading.Event()

    def body():
        tid = threading.get_native_id()
        (line,) = [line for line in Path(f"/proc/self/task/{tid}/status").read_text().splitlines()
                   if line.startswith("SigBlk:")]
        seen.append(int(line.split()[1], 16))
        release.wait(5)

    thread = threading.Thread(target=body)
    thread.start()
    while not seen:
        pass
    release.set()
    thread.join()
    return seen[0]


def test_threads_started_inside_block_the_stop_signals_and_the_mask_is_restored():
    before = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    with workers_ignore_stop_signals():
        inside = _blocked_in_new_thread()
    assert inside & BOTH == BOTH
    assert signal.pthread_sigmask(signal.SIG_BLOCK, []) == before
    assert _blocked_in_new_thread() & BOTH == 0  # outside: the default, so the check above can tell them apart
