"""Smoke run of the recipe paper's Fig. 3 (online LDA; part of `make validate`; needs the Wikipedia sample and the
vocabulary of ../shared/data or SGMCMC_DATA): tuning, the four samplers over seeds, the online-VB baseline.

Independent truths: a predictor that has learnt nothing (uniform over the vocabulary) has a perplexity of exactly
the vocabulary size, so every method must end below it; and every verdict in the summary is recomputed here by
hand from the per-seed perplexities of summary.csv (Welch's standard error, "tie" within 2 of them, SPEC §4.15)."""

import math

import numpy as np
import pytest

from experiments import recipe_fig3
from tests.helpers import smoke_run
from tests.test_ccadl_fig2 import DATA

PAIRS = [("SGRLD", "SGLD"), ("SGRLD", "SGHMC"), ("SGRHMC", "SGLD"), ("SGRHMC", "SGHMC"), ("SGRHMC", "SGRLD"),
         ("SGHMC", "SGLD")]


def expected_verdict(a: np.ndarray, b: np.ndarray) -> str:
    """"below" / "above" past two Welch standard errors of mean(a) − mean(b), else "tie", written out here."""
    difference = a.mean() - b.mean()
    error = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return "tie" if abs(difference) <= 2 * error else ("below" if difference < 0 else "above")


def vocabulary_size() -> int:
    path = DATA / "lda" / "dictnostops.txt"
    return sum(1 for line in path.read_text().splitlines() if line.strip())


@pytest.mark.validate
@pytest.mark.skipif(not (DATA / "wikipedia").is_dir(), reason="needs the Wikipedia sample (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    folder, table = smoke_run(recipe_fig3, "recipe-fig3", tmp_path, monkeypatch, DATA, ["--seeds", "1,2"], ["fig3_lda.png"])
    assert set(table.method) == {"SGLD", "SGHMC", "SGRLD", "SGRHMC", "online VB"}
    assert (table.status == "completed").all() and len(table) == 10
    assert (table.seconds_per_100_documents > 0).all()
    assert (table.perplexity < vocabulary_size()).all(), table[["method", "seed", "perplexity"]]  # uniform: V
    summary = (folder / "summary.md").read_text()
    values = {method: part.perplexity.to_numpy() for method, part in table.groupby("method")}
    for a, b in PAIRS:
        word = {"below": f"{a} below {b}", "above": f"{a} above {b}", "tie": "tie"}[expected_verdict(values[a], values[b])]
        assert f"{a} vs {b}: {word} (difference" in summary, (a, b, word)
    best = min(("SGLD", "SGHMC", "SGRLD", "SGRHMC"), key=lambda method: values[method].mean())
    word = {"below": f"{best} below online VB", "above": f"{best} above online VB", "tie": "tie"}[
        expected_verdict(values[best], values["online VB"])]
    assert f"{best} vs online VB: {word} (difference" in summary
    assert "tuned a (one grid for every sampler" in summary
