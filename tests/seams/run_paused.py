"""Test seam: ``python tests/seams/run_paused.py <n> <run.py arguments>`` runs ``run.py`` and stops the process
(SIGSTOP) right after its n-th checkpoint is written, so that a test can kill or signal it at a known step.

Production code carries no hook for this: the seam wraps :meth:`sgmcmc.checkpoint.Checkpointer.save` here.
``run.py`` is imported as a module first, so its start-up (the worker threads that leave SIGINT/SIGTERM to the
main thread) happens exactly as in ``python run.py``.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    stop_after, arguments = int(sys.argv[1]), sys.argv[2:]
    spec = importlib.util.spec_from_file_location("run", ROOT / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)

    from sgmcmc.checkpoint import Checkpointer

    save = Checkpointer.save

    def save_then_pause(self, checkpoint):
        written = save(self, checkpoint)
        if written and self.saves == stop_after:
            os.kill(os.getpid(), signal.SIGSTOP)
        return written

    Checkpointer.save = save_then_pause
    sys.argv = [str(ROOT / "run.py"), *arguments]
    run.main()


if __name__ == "__main__":
    main()
