"""The terminal's two streams of a run's log (``configs/hydra/job_logging/console.yaml``): its warnings on stderr,
the rest on stdout. An error is not a warning here: run.py prints a failed run's one line on stderr itself."""

from __future__ import annotations

import logging


class Warnings(logging.Filter):
    """Passes the WARNING records (``keep`` true) or every other record (``keep`` false)."""

    def __init__(self, keep: bool):
        super().__init__()
        self.keep = bool(keep)

    def filter(self, record: logging.LogRecord) -> bool:
        return (logging.WARNING <= record.levelno < logging.ERROR) == self.keep
