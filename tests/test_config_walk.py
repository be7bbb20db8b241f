"""The config's walk from run.py's entry (issue 33: at most 25 stops): ``scripts/config_walk.py`` traces a short run in
a process of its own and counts the repository's functions that receive the config as an argument."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.validate
def test_the_config_stops_in_at_most_25_places():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "config_walk.py")], capture_output=True, text=True,
                            cwd=ROOT, timeout=300)
    assert result.returncode == 0, result.stderr
    stops, files = map(int, re.search(r"(\d+) stops in (\d+) files", result.stdout).groups())
    assert "run.task" in result.stdout and "sgmcmc.experiment.run_experiment" in result.stdout  # the walk was traced
    assert stops <= 25, result.stdout
