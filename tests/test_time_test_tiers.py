"""scripts/time_test_tiers.py reads pytest's own report: the 25 slowest tests and the summary line."""

from scripts.time_test_tiers import report_lines

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

