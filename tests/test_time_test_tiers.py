"""scripts/time_test_tiers.py reads pytest's own report (the 25 slowest tests and the summary line), and README quotes its
newest report."""

import json
import subprocess
from pathlib import Path

from scripts.time_test_tiers import README_END, README_START, readme_sentence, report_lines

ROOT = Path(__file__).resolve().parents[1]

OUTPUT = """........ [100%]
============================= slowest 25 durations =============================
27.89s call     tests/test_check_cli.py::test_all
0.51s setup    tests/test_user.py::test_posterior
=========================== short test summary info ============================
SKIPPED [1] tests/data/test_movielens.py:186: MovieLens-1M is not here
========== 1953 passed, 12 skipped, 128 warnings in 316.32s (0:05:16) ==========
"""


def test_report_lines_takes_the_slowest_block_and_the_summary():
    report = report_lines(OUTPUT)
    assert report["slowest"] == ["27.89s call     tests/test_check_cli.py::test_all",
                                 "0.51s setup    tests/test_user.py::test_posterior"]
    assert report["summary"] == "1953 passed, 12 skipped, 128 warnings in 316.32s (0:05:16)"


def test_report_lines_of_an_output_without_them():
    assert report_lines("error: no such file\n") == {"slowest": [], "summary": ""}



def test_readme_quotes_the_newest_report():
    """README's line on the tiers' times is the one the newest committed report gives (a report just written and not
    yet committed is left out: it goes into README when it is committed)."""
    tracked = subprocess.run(["git", "ls-files", "results/test-times"], capture_output=True, text=True, cwd=ROOT,
                             check=True).stdout.split()
    reports = sorted(ROOT / name for name in tracked if name.endswith(".json"))
    assert reports, "no report in results/test-times: python scripts/time_test_tiers.py"
    newest = reports[-1]
    report = json.loads(newest.read_text())
    assert {run["tier"] for run in report["runs"]} == {"test", "validate"}
    assert all(run["returncode"] == 0 and run["wall_minutes"] <= run["limit_minutes"] for run in report["runs"]), report
    text = (ROOT / "README.md").read_text()
    assert f"{README_START}\n{readme_sentence(report, newest.name)}\n{README_END}" in text, \
        f"python scripts/time_test_tiers.py --readme {newest.relative_to(ROOT)}"
