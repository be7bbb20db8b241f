"""The checks after a run (sgmcmc/diagnostics/after_run.py) and the run-level diagnostics they read
(sgmcmc.evaluation.chain_diagnostics): each check fires just past its bound and not just inside it, names a remedy
as a config key and value, and a run with a deliberately wrong setting says so on stderr and in metrics.json, which
stays valid JSON; a run with a right setting says nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sgmcmc.diagnostics.after_run import RunFacts, warnings_after_run
from sgmcmc.evaluation import chain_diagnostics
from sgmcmc.results import write_json

ROOT = Path(__file__).resolve().parents[2]
FACTS = RunFacts(n_chains=4, n_steps=1000, burn_in=500, step_size=0.2, dim=2)


def _metrics(**changes):
    final = {"rhat_max": 1.0, "ess_bulk_min": 900.0, "ess_tail_min": 800.0, "chains_stuck": 0}
    final.update(changes.pop("final", {}))
    return {"status": "completed", "steps_done": 1000, "acceptance_rate": None, "noise_clips": 0, "final": final,
            **changes}


def _checks(metrics, facts=FACTS):
    return [warning.check for warning in warnings_after_run(metrics, facts)]


def test_a_healthy_run_has_no_warning_and_a_failed_one_none_of_these():
    assert _checks(_metrics()) == []
    assert _checks(_metrics(status="failed", final={"rhat_max": 3.0})) == []


@pytest.mark.parametrize("final, fires", [({"rhat_max": 1.011}, True), ({"rhat_max": 1.009}, False),
                                          ({"rhat_max": float("inf")}, True), ({"rhat_max": float("nan")}, False)])
def test_rhat_past_1_01(final, fires):
    assert _checks(_metrics(final=final)) == (["rhat"] if fires else [])


@pytest.mark.parametrize("excess, fires, says", [(1.003, False, None), (1.02, True, "1.02 times what stationary"),
                                                 (float("nan"), True, "too short"), (None, True, "too short")])
def test_rhat_past_1_01_warns_only_past_what_stationary_chains_of_its_length_give(excess, fires, says):
    """The default run's R-hat 1.04 of 1,000 chains of 1,000 draws is 1.003 times what stationary chains give: no
    warning; 1.02 times: the warning says so; not judged (NaN, or a record without it): R-hat alone, said so."""
    warned = warnings_after_run(_metrics(final={"rhat_max": 1.04, "rhat_excess_max": excess}), FACTS)
    assert [w.check for w in warned] == (["rhat"] if fires else [])
    assert not fires or says in warned[0].message


@pytest.mark.parametrize("final, chains, fires", [
    ({"ess_bulk_min": 399.0}, 4, True), ({"ess_bulk_min": 401.0}, 4, False), ({"ess_tail_min": 399.0}, 8, True),
    ({"ess_bulk_min": 99.0}, 1, True), ({"ess_bulk_min": 101.0}, 1, False)])
def test_ess_below_100_a_chain_up_to_four(final, chains, fires):
    facts = RunFacts(chains, FACTS.n_steps, FACTS.burn_in, FACTS.step_size, FACTS.dim)
    assert _checks(_metrics(final=final), facts) == (["ess"] if fires else [])


def test_stuck_chains_and_a_low_acceptance_each_name_a_smaller_step():
    warned = warnings_after_run(_metrics(final={"chains_stuck": 3}, acceptance_rate=0.05), FACTS)
    assert [w.check for w in warned] == ["stuck", "acceptance"]
    assert "3 of 4 chains never moved" in warned[0].message and warned[0].remedy.startswith("sampler.step_size=0.02")
    assert warned[1].remedy.startswith("sampler.step_size=0.05")
    assert _checks(_metrics(acceptance_rate=0.11)) == []


@pytest.mark.parametrize("mean, se, fires", [(1.2, 0.01, True), (1.05, 0.01, False), (1.3, 0.1, False),
                                             (172.0, 3.0, True)])
def test_thermostat_off_its_prediction_by_4_standard_errors_and_10_percent(mean, se, fires):
    final = {"thermostat_mean": mean, "thermostat_se": se, "thermostat_predicted": 1.0}
    assert _checks(_metrics(final=final)) == (["thermostat"] if fires else [])
    assert _checks(_metrics(final={**final, "thermostat_predicted": float("nan")})) == []


def test_clipping_of_more_than_1_percent_of_the_variances():
    variances = 1000 * FACTS.n_chains * FACTS.dim
    assert _checks(_metrics(noise_clips=int(0.011 * variances))) == ["clipping"]
    assert _checks(_metrics(noise_clips=int(0.009 * variances))) == []


def test_every_remedy_is_a_config_override():
    final = {"rhat_max": 2.0, "ess_bulk_min": 3.0, "chains_stuck": 1, "thermostat_mean": 5.0, "thermostat_se": 0.1,
             "thermostat_predicted": 1.0}
    warned = warnings_after_run(_metrics(final=final, acceptance_rate=0.0, noise_clips=10**6), FACTS)
    assert sorted(w.check for w in warned) == ["acceptance", "clipping", "stuck", "thermostat"]  # R-hat, ESS: stuck
    warned += warnings_after_run(_metrics(final={**final, "chains_stuck": 0}), FACTS)
    assert {"ess", "rhat"} <= {w.check for w in warned}
    for warning in warned:
        key, value = warning.remedy.split()[0].split("=")
        assert key.split(".")[0] in ("run", "sampler") and float(value) > 0, warning


def test_chain_diagnostics_of_chains_that_never_moved():
    """All chains stuck at θ₀ = 0 (a rejecting HMC from the default start): ESS 0, not the number of draws, and every
    chain counted; stuck at different points: the chains counted, R-hat infinite or huge."""
    same = chain_diagnostics(np.zeros((4, 50, 2)))
    assert same["ess_bulk_min"] == 0.0 and same["ess_tail_min"] == 0.0 and same["chains_stuck"] == 4
    assert np.isnan(same["rhat_max"])
    apart = chain_diagnostics(np.repeat(np.arange(4.0)[:, None, None], 50, axis=1) * np.ones((1, 1, 2)))
    assert apart["chains_stuck"] == 4 and not apart["rhat_max"] < 100
    mixing = chain_diagnostics(np.random.default_rng(0).standard_normal((4, 500, 2)))
    assert mixing["chains_stuck"] == 0 and mixing["rhat_max"] < 1.01 and mixing["ess_bulk_min"] > 1000
    assert np.isnan(chain_diagnostics(np.random.default_rng(1).standard_normal((1, 500, 2)))["rhat_max"])


def test_metrics_json_has_null_where_a_number_is_not_finite(tmp_path):
    write_json(tmp_path / "m.json", {"a": float("nan"), "b": [np.float64("inf"), 1.5, np.int64(3)],
                                     "c": {"d": -np.inf, "e": np.array([1.0, np.nan])}, "f": (1, 2)})
    text = (tmp_path / "m.json").read_text()
    parsed = json.loads(text, parse_constant=lambda word: pytest.fail(f"{word} in {text}"))
    assert parsed == {"a": None, "b": [None, 1.5, 3], "c": {"d": None, "e": [1.0, None]}, "f": [1, 2]}


def _run(tmp_path, *overrides):
    return subprocess.run([sys.executable, str(ROOT / "run.py"), "target=gaussian_1d", "run.n_chains=4",
                           f"run.results_dir={tmp_path}", "run.progress=false", *overrides],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_a_wrong_step_size_is_said_on_stderr_and_in_metrics_json(tmp_path):
    """HMC at ε = 20 on N(0, 1): every proposal rejected and the chains never move; a right ε says nothing."""
    wrong = _run(tmp_path / "wrong", "sampler=hmc", "sampler.step_size=20", "run.n_steps=400", "run.burn_in=100")
    assert wrong.returncode == 0, wrong.stderr
    lines = wrong.stderr.strip().splitlines()
    stuck = "WARNING: 4 of 4 chains never moved; remedy: sampler.step_size=2"
    assert any(line.startswith(stuck) for line in lines), lines
    assert any("accepted 0.0% of the proposals" in line for line in lines), lines
    assert "never moved" not in wrong.stdout
    (metrics,) = (tmp_path / "wrong").glob("*/metrics.json")
    record = json.loads(metrics.read_text(), parse_constant=lambda word: pytest.fail(word))
    assert [w["check"] for w in record["warnings"]] == ["stuck", "acceptance"]
    assert record["status"] == "completed" and record["final"]["chains_stuck"] == 4
    right = _run(tmp_path / "right", "sampler=sgld", "sampler.step_size=0.05", "sampler.noise_estimate=known",
                 "run.n_steps=6000", "run.burn_in=1000")
    assert right.returncode == 0 and "WARNING" not in right.stderr, right.stderr
    (metrics,) = (tmp_path / "right").glob("*/metrics.json")
    assert json.loads(metrics.read_text())["warnings"] == []
