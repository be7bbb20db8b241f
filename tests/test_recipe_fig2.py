"""Smoke run of the recipe Fig. 2 reproduction (part of `make validate`), and its KL-against-steps helper."""

import numpy as np
import pandas as pd
import pytest

from experiments import recipe_fig2
from sgmcmc.targets import make_target


@pytest.mark.validate
def test_smoke_run_writes_figures_and_summaries(tmp_path):
    recipe_fig2.main(["--smoke", "--root", str(tmp_path), "--jobs", "1"])
    (folder,) = (tmp_path / "recipe-fig2").glob("2*")
    assert (tmp_path / "recipe-fig2" / "LATEST").read_text().strip() == folder.name
    for name in ("fig2_left_kl_bars.png", "fig2_right_kl_vs_steps.png", "summary.csv", "summary.md", "provenance.json"):
        assert (folder / name).stat().st_size > 0, name
    summary = pd.read_csv(folder / "summary.csv")
    left = summary[summary.panel == "left"]
    assert set(left.sampler) == set(recipe_fig2.LEFT_SAMPLERS) and set(left.target) == set(recipe_fig2.LEFT_TARGETS)
    assert np.isfinite(left.kl_pq_mean).all()
    right = summary[summary.panel == "right"]
    assert list(sorted(right.x.unique())) == [1, 2, 3, 4]  # 2700 smoke steps reach x = 4
    text = (folder / "summary.md").read_text()
    assert "Published" in text and "with verdicts over chains" in text and "(KL(p‖q), verdicts over seeds)" in text


def test_kl_against_steps_uses_the_first_samples_of_each_chain():
    target = make_target("correlated_2d")
    rng = np.random.default_rng(0)
    exact = np.column_stack([rng.standard_normal(900) * 0.01, np.full(900, -1.2)])  # stuck at one point
    spread = np.column_stack([rng.uniform(-2, 2, 900), rng.uniform(-1.9, 0.5, 900)])
    curves = recipe_fig2.kl_against_steps(np.stack([exact, spread]), target)
    assert list(curves.steps.unique()) == [100, 300, 900]
    stuck = curves[curves.chain == 0].kl_pq.to_numpy()
    assert np.all(stuck > 1.0)  # a chain stuck in one bin is far from the target
