"""``check.py``, the stationarity check on the command line: one sampler, --all, and config errors."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from sgmcmc.samplers import SAMPLERS

ROOT = Path(__file__).resolve().parents[1]


def run_check(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(ROOT / "check.py"), *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)


def test_one_sampler_prints_its_residual():
    result = run_check("sampler=sghmc", "target=double_well", "sampler.step_size=0.1", "target.noise_variance=4", "--grid", "101")
    assert result.returncode == 0, result.stderr
    match = re.search(r"relative residual\s+([0-9.e+-]+)", result.stdout)
    assert match and float(match.group(1)) < 1e-3
    assert "grid 101 x 101" in result.stdout and "verdict: stationary" in result.stdout


def test_sghmc_without_noise_correction_is_flagged():
    result = run_check("sampler=sghmc", "sampler.noise_estimate=zero", "target.noise_variance=4", "--grid", "101")
    assert result.returncode == 0, result.stderr
    assert "verdict: NOT stationary" in result.stdout


@pytest.mark.parametrize("args", [("sampler=nope",), ("sampler=sghmc", "sampler.friction=-1"), ("--grid", "2"), ("target=sgld",)])
def test_bad_input_is_one_line_and_exit_code_2(args):
    result = run_check(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr


def test_unknown_sampler_names_the_allowed_values():
    result = run_check("sampler=nope")
    assert "sampler='nope' is invalid" in result.stderr and "sghmc" in result.stderr


def test_all_lists_every_sampler_with_a_verdict():
    result = run_check("--all")
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line for line in result.stdout.splitlines()[2:] if line.strip() and line.split()[0] in SAMPLERS}
    assert set(rows) == set(SAMPLERS)
    for name in ("naive_sghmc", "naive_sgrhmc"):
        assert rows[name].rstrip().endswith("NOT stationary")
    for name in ("sgld", "sgrld", "hmc", "sghmc", "sgnht", "sgrhmc"):
        assert rows[name].rstrip().endswith(" stationary") and "NOT" not in rows[name]
