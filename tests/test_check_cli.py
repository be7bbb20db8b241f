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


@pytest.mark.parametrize("sampler, verdict", [("psgld", "verdict: stationary"), ("psgld_no_gamma", "verdict: NOT stationary")])
def test_psgld_with_and_without_gamma(sampler, verdict):
    """pSGLD's stationary preconditioner D(θ) = 1/(λ + √(U′² + V)) with its Γ, and without it (Li et al. 2016)."""
    result = run_check(f"sampler={sampler}", "target=double_well")
    assert result.returncode == 0, result.stderr
    assert verdict + " " in result.stdout, result.stdout


def test_the_running_preconditioner_is_checked_as_the_update_it_takes_and_its_bias_measured():
    """pSGLD's running preconditioner takes no Γ: check.py checks psgld_no_gamma's dynamics (NOT stationary) and
    measures the bias that means: E θ² on the double well above the exact value (by quadrature) by over 4 standard
    errors (1000 independent chains). The verdict with the noise known and subtracted, where only a missing Γ can make
    the dynamics NOT stationary; the bias with noise_estimate=zero, the running preconditioner's default (with the
    noise known the running average's V₀ = 0 makes the first step's covariance not PSD, and the measurement says the
    run did not complete)."""
    result = run_check("sampler=psgld", "sampler.preconditioner=running", "sampler.noise_estimate=known",
                       "target=double_well")
    assert result.returncode == 0, result.stderr
    assert "note: preconditioner=running takes no Γ" in result.stdout and "verdict: NOT stationary " in result.stdout
    assert "measured: " in result.stdout, result.stdout
    result = run_check("sampler=psgld", "sampler.preconditioner=running", "sampler.noise_estimate=zero",
                       "sampler.step_size=0.01", "target=double_well")
    assert result.returncode == 0, result.stderr
    match = re.search(r"measured: E θ1² = ([0-9.]+) ± ([0-9.]+) against the exact ([0-9.]+)", result.stdout)
    assert match, result.stdout
    mean, error, exact = map(float, match.groups())
    assert exact == pytest.approx(0.8327, abs=1e-3) and (mean - exact) > 4 * error, result.stdout


@pytest.mark.parametrize("args", [("sampler=nope",), ("sampler=sghmc", "sampler.friction=-1"), ("--grid", "2"), ("target=sgld",)])
def test_bad_input_is_one_line_and_exit_code_2(args):
    result = run_check(*args)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in result.stderr


def test_unknown_sampler_names_the_allowed_values():
    result = run_check("sampler=nope")
    assert "sampler='nope' is invalid" in result.stderr and "sghmc" in result.stderr


def _table_rows(text):
    return {line.split()[0]: line for line in text.splitlines() if line.strip() and line.split()[0] in SAMPLERS}


@pytest.mark.validate  # every sampler on the Gaussian with its KSD (30 s): the long tier; tests/samplers checks each
def test_all_lists_every_sampler_with_a_verdict_and_its_kernel_stein_discrepancy():
    """``make check-samplers`` as it runs: about 25 s, and it cannot be cheaper, because the KSD table's claims are
    about each sampler's run at its default length (1,000 chains, the last state of each; the compiled kernels): a
    shorter run would check other numbers than the ones the command prints. The stationarity half alone is
    :func:`test_all_without_the_ksd_table`."""
    result = run_check("--all")
    assert result.returncode == 0, result.stderr
    stationarity, _, ksd_table = result.stdout.partition("Kernel Stein discrepancy on gaussian_2d_cov")
    rows = _table_rows(stationarity)
    assert set(rows) == set(SAMPLERS)
    for name in ("naive_sghmc", "naive_sgrhmc", "psgld_no_gamma"):
        assert rows[name].rstrip().endswith("NOT stationary")
    for name in ("sgld", "sgrld", "hmc", "sghmc", "sgnht", "sgrhmc", "psgld"):
        assert rows[name].rstrip().endswith(" stationary") and "NOT" not in rows[name]
    # the KSD table: every sampler; the exact draws' KSD near the level sqrt(E k0(X, X)/n) of an exact sample (0.112 for
    # Σ = [[1, .9], [.9, 1]], n = 1000: sqrt((tr Σ⁻¹ + 2)/1000)); the correct samplers at their default step sizes within
    # 2.5 times that level, naive SGHMC (no noise correction, SPEC §0) over 10 times it
    rows = _table_rows(ksd_table)
    assert set(rows) == set(SAMPLERS)
    header = ksd_table.splitlines()[1].split()
    trace_precision = 2 / (1 - 0.9**2)
    level = ((trace_precision + 2) / 1000) ** 0.5
    ksd = {name: float(line.split()[header.index("ksd")]) for name, line in rows.items() if SAMPLERS[name].kind != "optimiser"}
    exact = {float(line.split()[header.index("ksd") + 1]) for name, line in rows.items() if name in ksd}
    assert len(exact) == 1 and 0.7 * level < exact.pop() < 1.1 * level
    for name in ("sgld", "sgrld", "hmc", "sghmc", "sgnht", "sgrhmc", "sghmc_mh", "ccadl"):
        assert ksd[name] < 2.5 * level, (name, ksd[name], level)
    assert ksd["naive_sghmc"] > 10 * level
    # the verdict against the exact draws' spread: naive SGHMC above it, the recipe's SGHMC not
    assert rows["naive_sghmc"].rstrip().endswith("above exact draws") and rows["sghmc"].rstrip().endswith("as exact draws")


def test_all_without_the_ksd_table():
    result = run_check("--all", "--no-ksd", "--grid", "21")
    assert result.returncode == 0, result.stderr
    assert "Kernel Stein discrepancy" not in result.stdout and set(_table_rows(result.stdout)) == set(SAMPLERS)
