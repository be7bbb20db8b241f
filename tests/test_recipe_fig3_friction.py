"""The measurement of why gSGRHMC sits above SGRLD on online LDA (experiments/recipe_fig3_friction.py): every gSGRHMC
setting's overdamped limit is SGRLD's step (c·ε²/2 = a, written out here), the overdamped fraction counts ε_T·c·θ > 1,
and the smoke run's verdicts are recomputed from its per-seed perplexities (part of `make validate`)."""

import math

import numpy as np
import pytest

from experiments import recipe_fig3_friction
from experiments.recipe_fig3_friction import overdamped_fraction, settings_table
from tests.helpers import smoke_run
from tests.test_ccadl_fig2 import DATA
from tests.test_recipe_fig3 import expected_verdict


def test_every_scale_holds_the_overdamped_limit_at_sgrlds_step():
    rows = settings_table({"sgrld": 1e-4, "sgrhmc": 3e-3}, (1.0, 10.0, 1000.0))
    assert [row["sampler"] for row in rows] == ["sgrld", "sgrhmc", "sgrhmc", "sgrhmc", "sgrhmc"]
    assert rows[1]["a"] == 3e-3 and rows[1]["scale"] == 1.0
    for row in rows[2:]:
        assert row["scale"] * row["a"] ** 2 / 2 == pytest.approx(1e-4, rel=1e-12)


def test_overdamped_fraction_is_the_share_of_coordinates_past_one(tmp_path):
    """ε_T = a(1 + (T − 1)/b)^−γ at the last step; θ (1, kept, d) with ε_T·c·θ above 1 in 2 of 4 coordinates."""
    schedule = {"b": 1000.0, "gamma": 0.55}
    last = 0.01 * (1 + 199 / 1000.0) ** -0.55
    theta = np.array([[[0.0, 0.0, 0.0, 0.0], [0.5 / last, 2.0 / last, 0.9 / last, 5.0 / last]]]) / 10.0
    np.savez(tmp_path / "samples.npz", theta=theta)
    assert overdamped_fraction(tmp_path, 0.01, 10.0, 200, schedule) == 0.5
    assert math.isnan(overdamped_fraction(tmp_path / "none", 0.01, 10.0, 200, schedule))


@pytest.mark.validate
@pytest.mark.skipif(not (DATA / "wikipedia").is_dir(), reason="needs the Wikipedia sample (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_verdicts(tmp_path, monkeypatch):
    folder, table = smoke_run(recipe_fig3_friction, "recipe-fig3-friction", tmp_path, monkeypatch, DATA,
                              ["--seeds", "1,2"], ["perplexity.png"])
    assert (table.status == "completed").all() and table.label.nunique() == 4 and len(table) == 8
    summary = (folder / "summary.md").read_text()
    sgrld = table[table.sampler == "sgrld"].perplexity.to_numpy()
    for label, part in table[table.sampler == "sgrhmc"].groupby("label"):
        verdict = expected_verdict(part.perplexity.to_numpy(), sgrld)
        line = next(line for line in summary.splitlines() if line.startswith(f"- {label}:"))
        assert (f"gSGRHMC {verdict} SGRLD" if verdict != "tie" else ": tie") in line, line
