"""The SGHMC paper's online BPMF (experiments/sghmc_bpmf.py, SPEC T12/E8): the smoke version of `make sghmc-bpmf` on the
small synthetic set writes the figure, the table beside each fold's noise floor and the verdicts; with a ratings.dat in
the data folder (here a synthetic one standing in for MovieLens-1M) the table stands beside the published numbers;
without it the experiment stops with one line saying where to put the file."""

import shutil

import numpy as np
import pytest

from experiments import sghmc_bpmf
from sgmcmc.data import movielens
from sgmcmc.data.synthetic_ratings import SIZES, draw_ratings, expected_rating
from tests.helpers import smoke_run
from tests.test_recipe_fig3 import expected_verdict


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
    values = {method: part.rmse.to_numpy() for method, part in table.groupby("method")}
    for a, b in (("SGHMC", "SGD"), ("SGLD", "SGD")):
        word = {"below": f"{a} below {b}", "above": f"{a} above {b}", "tie": "tie"}[expected_verdict(values[a], values[b])]
        assert f"{a} vs {b}: {word} (difference" in summary, (a, b, word)
    assert "noise_floor_mean" in summary and "published" not in summary


def test_with_a_ratings_file_in_the_data_folder_the_table_stands_beside_the_published_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))
    small = sghmc_bpmf.synthetic_file("small", tmp_path / "cache")
    data = tmp_path / "data"
    (data / "movielens" / "ml-1m").mkdir(parents=True)
    shutil.copy(small, data / movielens.RATINGS_PATH)
    folder, _ = smoke_run(sghmc_bpmf, "sghmc-bpmf", tmp_path / "out", monkeypatch, data,
                          ["--ratings", "real", "--folds", "1,2"], ["fig_bpmf_rmse.png"])
    summary = (folder / "summary.md").read_text()
    assert "published_mean" in summary and "0.8411" in summary and "noise_floor" not in summary


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
