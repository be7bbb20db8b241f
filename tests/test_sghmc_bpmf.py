"""The SGHMC paper's online BPMF (experiments/sghmc_bpmf.py, SPEC T12/E8): the smoke version of `make sghmc-bpmf` on the
small synthetic set writes the figure, the table beside each fold's noise floor and the verdicts; with a ratings.dat in
the data folder (here a synthetic one standing in for MovieLens-1M) the table stands beside the published numbers;
without it the experiment stops with one line saying where to put the file."""

import json
import shutil

import numpy as np
import pytest

from experiments import sghmc_bpmf
from sgmcmc.data import movielens
from sgmcmc.data.synthetic_ratings import SIZES, draw_ratings, expected_rating
from tests.helpers import smoke_run


@pytest.mark.validate
def test_smoke_run_on_the_synthetic_set(tmp_path, monkeypatch):
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))
    folder, table = smoke_run(sghmc_bpmf, "sghmc-bpmf", tmp_path / "out", monkeypatch, tmp_path / "data",
                              ["--folds", "1,2"], ["fig_bpmf_rmse.png"])
    assert set(table.method) == {"SGD", "SGD with momentum", "SGLD", "SGHMC"} and len(table) == 8
    assert (table.status == "completed").all() and (table.rounds == sghmc_bpmf.SMOKE["rounds"]).all()
    assert table.rmse.between(0.5, 2.0).all()
    # each fold's floor, computed here from the generating model's means (the file's lines in order)
    drawn = draw_ratings(*SIZES["small"], seed=0)
    best = expected_rating(drawn.mean, drawn.noise_sd)
    for fold in (1, 2):
        test = movielens.fold_mask(len(drawn.ratings), fold, 5)
        floor = np.sqrt(np.mean((best[test] - drawn.ratings[test]) ** 2))
        assert np.allclose(table[table.fold == fold].noise_floor, floor)
    summary = (folder / "summary.md").read_text()
    values = {method: part.sort_values("fold").rmse.to_numpy() for method, part in table.groupby("method")}
    for a, b in (("SGHMC", "SGD"), ("SGLD", "SGD")):
        differences = values[a] - values[b]  # paired by fold, written out here
        error = differences.std(ddof=1) / np.sqrt(differences.size)
        verdict = "tie" if abs(differences.mean()) <= 2 * error else ("below" if differences.mean() < 0 else "above")
        word = {"below": f"{a} below {b}", "above": f"{a} above {b}", "tie": "tie"}[verdict]
        assert f"{a} vs {b}: {word} (difference {differences.mean():+.3g}" in summary, (a, b, word)
    assert "noise_floor_mean" in summary and "published" not in summary
    # the optimisers' learning rates were chosen for each fold on its own validation split, and the table says so
    provenance = json.loads((folder / "provenance.json").read_text())
    factors = provenance["settings"]["optimiser_factors"]
    assert set(factors) == set(sghmc_bpmf.OPTIMISERS) and all(set(chosen) == {"1", "2"} for chosen in factors.values())
    assert {factor for chosen in factors.values() for factor in chosen.values()} <= set(sghmc_bpmf.SMOKE["factors"])
    assert "tuned on each fold's validation split" in summary
    tuning = [run for run in provenance["runs"] if "factor" in run]
    assert len(tuning) == 2 * 2 * 2 and all("target.evaluate_on=validation" in run["overrides"] for run in tuning)
    for run in provenance["runs"]:  # every final optimiser run at its own fold's chosen factor
        if "factor" not in run and run["method"] == "SGD":
            step = float(next(item for item in run["overrides"] if item.startswith("sampler.step_size="))
                         .split("=")[1])
            assert step == pytest.approx(1e-5 * factors["sgd"][str(run["fold"])], rel=1e-5)
    assert all(f"run.noise_free_steps={2 * 20}" in run["overrides"] for run in provenance["runs"])


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_with_a_ratings_file_in_the_data_folder_the_table_stands_beside_the_published_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))
    small = sghmc_bpmf.synthetic_file("small", tmp_path / "cache")
    data = tmp_path / "data"
    (data / "movielens" / "ml-1m").mkdir(parents=True)
    shutil.copy(small, data / movielens.RATINGS_PATH)
    monkeypatch.setattr(movielens, "check_movielens_1m", lambda data, path: None)  # the stand-in passes as the real file
    folder, _ = smoke_run(sghmc_bpmf, "sghmc-bpmf", tmp_path / "out", monkeypatch, data,
                          ["--ratings", "real", "--folds", "1,2"], ["fig_bpmf_rmse.png"])
    summary = (folder / "summary.md").read_text()
    assert "published_mean" in summary and "SGHMC 0.8411 ± 0.0011" in summary and "noise_floor" not in summary


def test_a_stand_in_at_the_real_files_place_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    """A synthetic file where MovieLens-1M belongs is never reported beside the published numbers."""
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))
    small = sghmc_bpmf.synthetic_file("small", tmp_path / "cache")
    (tmp_path / "data" / "movielens" / "ml-1m").mkdir(parents=True)
    shutil.copy(small, tmp_path / "data" / movielens.RATINGS_PATH)
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path / "data"))
    with pytest.raises(SystemExit) as stopped:
        sghmc_bpmf.main(["--root", str(tmp_path / "out")])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "is not MovieLens-1M's ratings.dat" in error and "timestamps are 0" in error
    assert not (tmp_path / "out").exists()


def test_a_full_size_stand_in_is_told_apart_by_its_timestamps(tmp_path):
    path = tmp_path / "ratings.dat"
    path.write_text("1::1::5::0\n")  # the counts are checked too; a synthetic file of the full size has timestamps 0
    data = movielens.read_ratings(path)
    monkeypatch_counts = (len(data), data.n_users, data.n_items)
    original = movielens.MOVIELENS_1M_COUNTS
    try:
        movielens.MOVIELENS_1M_COUNTS = monkeypatch_counts
        with pytest.raises(movielens.DataError, match="timestamps are 0"):
            movielens.check_movielens_1m(data, path)
        path.write_text("1::1::5::978300760\n")
        movielens.check_movielens_1m(movielens.read_ratings(path), path)
    finally:
        movielens.MOVIELENS_1M_COUNTS = original


@pytest.mark.parametrize("option", [["--folds", "1,x"], ["--rounds", "ten"], ["--rounds", "5", "--burn-in-rounds", "5"]])
def test_bad_options_are_one_line(option, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        sghmc_bpmf.main(["--ratings", "synthetic", "--root", str(tmp_path), *option])
    assert stopped.value.code == 2 and "\n" not in capsys.readouterr().err.strip()


def test_without_the_real_file_it_stops_with_one_line(tmp_path, monkeypatch, capsys):
    def offline(url, out):
        raise OSError("network unreachable")

    monkeypatch.setattr(movielens, "copy_url", offline)
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path))
    with pytest.raises(SystemExit) as stopped:
        sghmc_bpmf.main(["--root", str(tmp_path / "out")])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and str(tmp_path / movielens.RATINGS_PATH) in error and "--ratings synthetic" in error
    assert not (tmp_path / "out").exists()
