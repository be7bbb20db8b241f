"""Smoke run of the recipe paper's Fig. 3 (online LDA; part of `make test`; needs the Wikipedia sample and the
vocabulary of ../shared/data or SGMCMC_DATA): tuning, the four samplers over seeds, the online-VB baseline."""

import pytest

from experiments import recipe_fig3
from tests.helpers import smoke_run
from tests.test_ccadl_fig2 import DATA


@pytest.mark.skipif(not (DATA / "wikipedia").is_dir(), reason="needs the Wikipedia sample (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    folder, table = smoke_run(recipe_fig3, "recipe-fig3", tmp_path, monkeypatch, DATA, ["--seeds", "1,2"], ["fig3_lda.png"])
    assert set(table.method) == {"SGLD", "SGHMC", "SGRLD", "SGRHMC", "online VB"}
    assert (table.status == "completed").all() and len(table) == 10
    assert (table.perplexity > 1).all() and (table.seconds_per_100_documents > 0).all()
    summary = (folder / "summary.md").read_text()
    assert "tuned a: SGLD" in summary and "Riemannian samplers below both Euclidean ones" in summary
