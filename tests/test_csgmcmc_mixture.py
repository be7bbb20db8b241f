"""Zhang et al. (2020) Fig. 2 (experiments/csgmcmc_mixture.py, SPEC §6): the smoke version of `make csgmcmc-mixture`
writes its figures, summary and provenance; the runs keep the samples each method should (cSGLD: none of the
exploration steps; the authors' variant: every step, the first 50 of each cycle dropped by the experiment); the mode
count follows its stated rule; the verdicts follow the seed spread."""

import json

import numpy as np
import pandas as pd
import pytest

from experiments import csgmcmc_mixture as experiment
from sgmcmc.targets.gaussian_mixture_25 import CENTRES
from tests.helpers import smoke_run
from tests.test_recipe_fig3 import expected_verdict


@pytest.mark.validate
def test_smoke_run_writes_figures_and_summary(tmp_path, monkeypatch):
    folder, table = smoke_run(experiment, "csgmcmc-mixture", tmp_path, monkeypatch, tmp_path / "data", (),
                              ["fig_mixture.png", "fig_mode_counts.png"])
    smoke = experiment.SMOKE
    assert list(table.method.unique()) == list(experiment.METHODS) and (table.status == "completed").all()
    assert len(table) == len(experiment.METHODS) * len(smoke["seeds"])
    cycles = smoke["n_cycles"] * experiment.DISCARDED
    kept = {"SGLD": smoke["n_steps"], "cSGLD": smoke["n_steps"] - cycles, "cSGLD (mog25.m)": smoke["n_steps"] - cycles}
    assert all(row.kept_per_chain == kept[row.method] for row in table.itertuples())
    assert table.modes_found.between(0, 25).all() and (table.modes_found <= table.modes_visited).all()
    # the cSGLD run itself kept only the sampling steps: its step sizes are those of cycle positions >= 50
    provenance = json.loads((folder / "provenance.json").read_text())
    run = next(r for r in provenance["runs"] if r["method"] == "cSGLD")
    with np.load(folder / run["folder"] / "samples.npz") as data:
        assert data["theta"].shape == (smoke["n_chains"], kept["cSGLD"], 2)
        length = -(-smoke["n_steps"] // smoke["n_cycles"])
        first_kept = 0.5 * experiment.CSGLD_STEP * (np.cos(np.pi * experiment.DISCARDED / length) + 1)
        assert data["step_size"].max() == pytest.approx(first_kept)  # ε of cycle position 50 (Eq. 1), no larger
    summary = (folder / "summary.md").read_text()
    values = {method: part.modes_found.to_numpy() for method, part in table.groupby("method")}
    word = {"above": "cSGLD above SGLD", "below": "cSGLD below SGLD", "tie": "tie"}[
        expected_verdict(values["cSGLD"], values["SGLD"])]
    assert f"cSGLD vs SGLD: {word} (difference" in summary
    assert "published 4" in summary and "published 25" in summary and "mog25.m" in summary


def test_mode_counting_rule():
    rng = np.random.default_rng(0)
    # 1,000 samples: 600 at mode 0, 300 at mode 7, 40 at mode 12 (share 40 = 1,000/25: the rule needs 4), 3 at mode 3
    parts = [(0, 600), (7, 300), (12, 40), (3, 3)]
    samples = [CENTRES[k] + 0.1 * rng.standard_normal((n, 2)) for k, n in parts]
    samples.append(np.full((57, 2), 1.0))  # between the modes: no mode's
    counts, found, visited = experiment.mode_counts(np.concatenate(samples))
    assert counts[0] == 600 and counts[7] == 300 and counts[12] == 40 and counts[3] == 3 and counts.sum() == 943
    assert (found, visited) == (3, 4)  # mode 3's 3 samples are below a tenth of its share (4)


def test_the_authors_variant_drops_the_first_50_steps_of_each_cycle():
    theta = np.arange(2 * 300 * 2, dtype=float).reshape(2, 300, 2)  # 3 cycles of 100 steps
    kept = experiment.kept_samples(theta, "cSGLD (mog25.m)", 300, 3)
    assert kept.shape == (2, 150, 2)
    np.testing.assert_array_equal(kept[0, :, 0] / 2, np.concatenate([np.arange(50, 100), np.arange(150, 200),
                                                                     np.arange(250, 300)]))
    assert experiment.kept_samples(theta, "cSGLD", 300, 3) is theta
    from sgmcmc.schedules import make_schedule

    schedule = make_schedule("cyclical", 0.07, 50_000, n_cycles=30,
                             exploration=experiment.exploration_fraction(50_000, 30))
    assert schedule.length == 1667 and schedule.exploration_steps == experiment.DISCARDED
