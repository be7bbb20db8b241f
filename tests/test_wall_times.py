"""Wall times of the paper reproductions: every folder records its own (sgmcmc.paper.PaperFolder.finish), and README's
table is read from the newest folders (scripts/wall_times.py), never typed."""

import json
import os
import time
from pathlib import Path

from scripts.wall_times import README_END, README_START, table
from sgmcmc.paper import PaperFolder

ROOT = Path(__file__).resolve().parents[1]


def test_a_paper_folder_records_its_wall_time_and_machine(tmp_path):
    paper = PaperFolder.create("wall-test", root=tmp_path)
    time.sleep(0.2)
    record = json.loads((paper.finish({"smoke": True}, ["x"]) / "provenance.json").read_text())
    assert 0.2 <= record["wall_seconds"] < 60
    assert record["started_utc"] <= record["finished_utc"]
    assert record["machine"]["cores"] == os.cpu_count() and record["machine"]["cpu"]


def test_readme_wall_time_table_is_the_folders():
    text = (ROOT / "README.md").read_text()
    assert f"{README_START}\n{table()}\n{README_END}" in text, "python scripts/wall_times.py --readme"
