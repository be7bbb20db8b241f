"""Shang et al. Fig. 3: the seed summary on a made-up table (always), and a smoke run (part of `make validate`) on
the real letter files (skipped without them): Hydra multiruns with 2 passes write the figure and the summary,
and ``--into`` adds the extra-seed sweeps to that folder."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from experiments import ccadl_fig3
from tests.helpers import one_thread, smoke_run
from tests.test_ccadl_fig2 import DATA


def _rows(errors: dict) -> pd.DataFrame:
    """Completed letter runs at the largest h: ``errors[(A, seed)] = (CCAdL, SGHMC, SGNHT)``."""
    return pd.DataFrame([{"dataset": "letter", "h": 5e-3, "A": a, "seed": seed, "method": method, "status": "completed",
                          "test_error": value}
                         for (a, seed), values in errors.items() for method, value in zip(("CCAdL", "SGHMC", "SGNHT"), values)])


def test_paired_difference_is_ccadl_minus_the_better_other_per_seed():
    rows = _rows({(1, 0): (0.10, 0.12, 0.11), (1, 1): (0.15, 0.12, 0.13), (10, 0): (0.20, 0.19, 0.25)})
    differences = ccadl_fig3.paired_differences(ccadl_fig3.largest_step(rows)).set_index(["A", "seed"]).difference
    assert differences.to_dict() == pytest.approx({(1, 0): -0.01, (1, 1): 0.03, (10, 0): 0.01})


def test_seed_summary_gives_mean_sd_and_seeds_no_worse():
    rows = _rows({(1, 0): (0.10, 0.12, 0.11), (1, 1): (0.14, 0.12, 0.13), (1, 2): (0.12, 0.13, 0.14)})
    # columns SGHMC, SGNHT, CCAdL; CCAdL minus the better other per seed: -0.01, +0.02, -0.01
    text = ccadl_fig3.seed_verdicts(ccadl_fig3.largest_step(pd.concat([rows, rows.assign(h=1e-3)])))
    assert "| letter | 1 | 0.123 ± 0.006 (n=3) | 0.127 ± 0.015 (n=3) | 0.120 ± 0.020 (n=3) |" in text
    assert "+0.000 ± 0.017; 2 of 3 |" in text
    assert ccadl_fig3.seed_verdicts(ccadl_fig3.largest_step(rows[rows.seed == 0])) == ""


def test_seed_verdicts_are_paired_by_seed_with_a_tie_inside_two_standard_errors():
    """By hand: CCAdL − SGHMC per seed = −0.02, +0.02, −0.01: mean −0.0033, s.e. 0.0120 → tie; CCAdL − SGNHT =
    −0.03, −0.035, −0.03: mean −0.0317, s.e. 0.0017 (19 s.e.) → below."""
    rows = _rows({(1, 0): (0.10, 0.12, 0.13), (1, 1): (0.14, 0.12, 0.175), (1, 2): (0.12, 0.13, 0.15)})
    text = ccadl_fig3.seed_verdicts(ccadl_fig3.largest_step(pd.concat([rows, rows.assign(h=1e-3)])))
    assert "- letter, A = 1: CCAdL vs SGHMC: tie (difference -0.00333 ± 0.012," in text
    assert "- letter, A = 1: CCAdL vs SGNHT: CCAdL below SGNHT (difference -0.0317 ± 0.00167, 19.0" in text


def test_path_measures_average_only_the_last_quarter_for_the_window_error():
    seen = []
    target = SimpleNamespace(trace_metrics=lambda mean: seen.append(mean) or {"test_error": 0.5})
    theta = np.arange(8.0)[:, None] * np.array([[1.0, -2.0]])  # 8 kept samples on a straight path
    measures = ccadl_fig3.path_measures(target, theta)
    assert np.allclose(seen[0], [[6.5, -13.0]])  # the mean of the last 2 of 8
    assert measures["window_error"] == 0.5
    assert measures["sample_spread"] == pytest.approx(np.std(np.arange(8.0)) * 1.5)
    assert measures["path_length"] == pytest.approx(7 * np.sqrt(5))


@pytest.mark.parametrize("args, key", [(["--extra-seeds", "1,x"], "--extra-seeds"), (["--extra-seeds", "0"], "--extra-seeds"),
                                       (["--datasets", "mnist"], "--datasets"), (["--into", "/nonexistent"], "--into")])
def test_bad_options_exit_2_with_one_line(args, key, capsys):
    with pytest.raises(SystemExit) as stop:
        ccadl_fig3.main(args)
    error = capsys.readouterr().err.strip()
    assert stop.value.code == 2 and error.startswith(f"error: {key}") and "\n" not in error


@pytest.mark.validate
@pytest.mark.skipif(not (DATA / "libsvm").is_dir(), reason="needs the LIBSVM files (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary_and_into_adds_seeds(tmp_path, monkeypatch):
    with one_thread(monkeypatch):  # the sweeps, and the test-set passes over the collected samples
        folder, table = smoke_run(ccadl_fig3, "ccadl-fig3", tmp_path, monkeypatch, DATA,
                                  ["--datasets", "letter", "--extra-seeds", ""], ["fig3_drbm.png"])
    assert len(table) == 18 and (table.status == "completed").all() and set(table.seed) == {0}
    assert table.test_error.between(0, 1).all() and table.window_error.between(0, 1).all()
    assert (table.path_length > 0).all() and (table.sample_spread > 0).all()
    assert "letter: at the largest h (seed 0, one run per method: no spread" in (folder / "summary.md").read_text()
    assert not (folder / "fig3_seeds.png").exists()

    with one_thread(monkeypatch):
        ccadl_fig3.main(["--smoke", "--jobs", "1", "--datasets", "letter", "--extra-seeds", "1", "--into", str(folder)])
    table = pd.read_csv(folder / "summary.csv")
    seeded = table[table.seed == 1]
    assert len(table) == 24 and (table.status == "completed").all()
    assert len(seeded) == 6 and set(seeded.h) == {5e-3} and set(seeded.A) == {1, 10}
    assert (folder / "fig3_seeds.png").stat().st_size > 0
    assert "Largest step size over seeds 0, 1" in (folder / "summary.md").read_text()


def test_a_rebuild_keeps_the_sample_measures_of_the_previous_summary(tmp_path):
    """samples.npz is not committed: --summarise on a clone takes the sample-derived columns from summary.csv."""
    pd.DataFrame([{"folder": "runs/a/1", "test_error": 0.2, "predictive_error": 0.11, "path_length": 9.0},
                  {"folder": "runs/a/2", "test_error": 0.3, "predictive_error": None, "path_length": 8.0}]
                 ).to_csv(tmp_path / "summary.csv", index=False)
    paper = SimpleNamespace(path=tmp_path)
    assert ccadl_fig3.previous_sample_measures(paper) == {"runs/a/1": {"predictive_error": 0.11, "path_length": 9.0},
                                                          "runs/a/2": {"path_length": 8.0}}
