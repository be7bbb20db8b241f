"""Where the test suite's time goes to numba: a pytest plugin that logs each top-level compilation (its function and
the seconds it took, nested compilations counted in their caller's) with the test that triggered it, and a summary of
such logs by function and by test file.

On a fresh clone (numba's on-disk cache empty), from the repository root:

    PYTHONPATH=scripts PYTEST_ADDOPTS="-p numba_compile_log" COMPILE_LOG=/tmp/compile.jsonl make test
    python scripts/numba_compile_log.py /tmp/compile.jsonl.* [--output results/numba-compile/<sha>-make-test.json]

Each pytest process (every xdist worker) appends to ``$COMPILE_LOG.<pid>``, one JSON line per compilation. A cache
hit also passes through numba's compile event, in a few milliseconds: the summary counts only the events that took
at least ``--at-least`` seconds (0.1). Compilations in a subprocess a test starts (``run.py``) are not seen.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import time
from pathlib import Path

from numba.core import event

_TEST = {"id": None}
_OPEN = {"depth": 0, "start": 0.0, "name": None}


class _TopLevel(event.Listener):
    """Times the outermost ``numba:compile`` event and appends it to this process's log."""

    def __init__(self, path: Path):
        self.path = path

    def on_start(self, ev):
        if _OPEN["depth"] == 0:
            dispatcher = (ev.data or {}).get("dispatcher")
            _OPEN.update(start=time.perf_counter(), name=getattr(getattr(dispatcher, "py_func", None), "__name__", "?"))
        _OPEN["depth"] += 1

    def on_end(self, ev):
        _OPEN["depth"] -= 1
        if _OPEN["depth"] == 0:
            row = {"test": _TEST["id"], "function": _OPEN["name"], "seconds": time.perf_counter() - _OPEN["start"]}
            with self.path.open("a") as log:
                log.write(json.dumps(row) + "\n")


def pytest_configure(config):
    """Registers the listener (the plugin is loaded with ``-p numba_compile_log``)."""
    path = Path(os.environ.get("COMPILE_LOG", "compile.jsonl") + f".{os.getpid()}")
    event.register("numba:compile", _TopLevel(path))


def pytest_runtest_setup(item):
    _TEST["id"] = item.nodeid


def summary(paths: list[Path], at_least: float) -> dict:
    """The logs' compilations of at least ``at_least`` seconds: totals, by function and by test file."""
    rows = [json.loads(line) for path in paths for line in path.read_text().splitlines() if line]
    rows = [row for row in rows if row["seconds"] >= at_least]
    by_function, count, by_file = collections.Counter(), collections.Counter(), collections.Counter()
    for row in rows:
        by_function[row["function"]] += row["seconds"]
        count[row["function"]] += 1
        by_file[(row["test"] or "(collection)").split("::")[0]] += row["seconds"]
    return {"compilations": len(rows), "seconds": round(sum(row["seconds"] for row in rows), 1),
            "by_function": {name: {"compilations": count[name], "seconds": round(seconds, 1)}
                            for name, seconds in by_function.most_common()},
            "by_test_file": {name: round(seconds, 1) for name, seconds in by_file.most_common()}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", nargs="+", type=Path)
    parser.add_argument("--at-least", type=float, default=0.1)
    parser.add_argument("--output", type=Path)
    arguments = parser.parse_args()
    report = summary(arguments.logs, arguments.at_least)
    text = json.dumps(report, indent=1)
    if arguments.output:
        arguments.output.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
