"""Times the two test tiers as CI runs them: ``make test``, then ``make validate``, each after ``make setup`` (set-up
excluded from the times), and writes what each printed of itself (pytest's 25 slowest tests and its summary line)
with its wall time, the commit and the machine to ``results/test-times/<UTC time>-<commit>.json``; README quotes it.

    python scripts/time_test_tiers.py            # in a fresh clone with ../shared beside it, on an otherwise idle machine
    python scripts/time_test_tiers.py --readme results/test-times/<file>.json   # README's line from a report
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIERS = ("test", "validate")
LIMIT_MINUTES = {"test": 10, "validate": 25}  # the budgets of issue 32, on the 2-core machine
README_START, README_END = "<!-- test times -->", "<!-- end test times -->"


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()


def report_lines(output: str) -> dict:
    """pytest's slowest-tests block and its last summary line, as printed."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "slowest 25 durations" in line), None)
    slowest = [line for line in lines[start + 1:] if re.match(r"\d+\.\d+s (call|setup|teardown) ", line)][:25] \
        if start is not None else []
    summary = next((line.strip("= ") for line in reversed(lines) if " passed" in line or " failed" in line), "")
    return {"slowest": slowest, "summary": summary}


def time_tier(tier: str) -> dict:
    started = time.monotonic()
    result = subprocess.run(["make", tier], capture_output=True, text=True, cwd=ROOT)
    seconds = time.monotonic() - started
    return {"tier": tier, "command": f"make {tier}", "returncode": result.returncode, "wall_seconds": round(seconds, 1),
            "wall_minutes": round(seconds / 60, 2), "limit_minutes": LIMIT_MINUTES[tier],
            "load_average_after": os.getloadavg(), **report_lines(result.stdout)}


def readme_sentence(report: dict, name: str) -> str:
    """README's line on the tiers' times, from a report of :func:`main` (file ``name`` in results/test-times/)."""
    runs = {run["tier"]: run for run in report["runs"]}
    parts = [f"`make {tier}` {runs[tier]['wall_minutes']:.1f} min ({runs[tier]['summary'].split(' in ')[0]})"
             for tier in TIERS if tier in runs]
    return (f"Measured in a fresh clone on this {report['cores']}-core machine at {report['commit'][:7]}, set-up "
            f"excluded: {', '.join(parts)} (`results/test-times/{name}`, written by `python scripts/time_test_tiers.py`).")


def write_readme(readme: Path, report_path: Path) -> None:
    """Puts :func:`readme_sentence` of ``report_path`` between README's ``<!-- test times -->`` markers."""
    text = readme.read_text()
    head, rest = text.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    sentence = readme_sentence(json.loads(report_path.read_text()), report_path.name)
    readme.write_text(f"{head}{README_START}\n{sentence}\n{README_END}{tail}")


def main(argv: list[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiers", default=",".join(TIERS), help="comma-separated, from: test, validate")
    parser.add_argument("--output", default=str(ROOT / "results" / "test-times"))
    parser.add_argument("--readme", metavar="REPORT", help="only write README's line from this report (a JSON file)")
    args = parser.parse_args(argv)
    if args.readme:
        write_readme(ROOT / "README.md", Path(args.readme))
        return Path(args.readme)
    started = datetime.now(timezone.utc)
    subprocess.run(["make", "setup"], capture_output=True, cwd=ROOT, check=True)
    runs = [time_tier(tier) for tier in args.tiers.split(",")]
    commit = git("rev-parse", "HEAD")
    report = {"commit": commit, "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no")),
              "started_utc": f"{started:%Y-%m-%dT%H:%M:%SZ}", "cores": os.cpu_count(),
              "machine": platform.machine(), "python": platform.python_version(), "runs": runs}
    folder = Path(args.output)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{started:%Y%m%d-%H%M%S}-{commit[:8]}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    for run in runs:
        print(f"make {run['tier']}: {run['wall_minutes']:.1f} min (limit {run['limit_minutes']}), "
              f"exit {run['returncode']}: {run['summary']}")
    print(path)
    return path


if __name__ == "__main__":
    main()
