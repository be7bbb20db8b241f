"""Smoke run of Shang et al. Table 1 / Fig. 1 (part of `make validate`): three Hydra multirun sweeps with
tiny settings write the table, the thermostat table and the figure. The i.i.d. floor of the density RMSE that the
summary reports is checked against its multinomial expectation, sqrt(mean_i p_i(1 − p_i)/(m w²)) per coordinate,
from the exact marginals' bin probabilities p_i (independent of the sampler and of the histogram code)."""

import re

import numpy as np
import pandas as pd
import pytest

from sgmcmc.targets import make_target

from experiments import ccadl_table1


@pytest.mark.validate
def test_smoke_run_writes_table_and_figure(tmp_path):
    ccadl_table1.main(["--smoke", "--root", str(tmp_path), "--jobs", "1"])
    (folder,) = (tmp_path / "ccadl-table1").glob("2*")
    for name in ("fig1_marginals.png", "summary.csv", "summary.md", "provenance.json"):
        assert (folder / name).stat().st_size > 0, name
    rows = pd.read_csv(folder / "summary.csv")
    table = rows[rows.sweep == "table"]
    assert len(table) == 12 and set(table.method) == {"SGHMC", "SGNHT", "CCAdL"}
    assert (rows.status == "completed").all()
    assert set(rows.sweep) == {"table", "exact_scale", "exact_gradient"}
    # every setting is what its config says: h, A and the data target
    assert set(zip(table.h, table.A)) == {(0.001, 1.0), (0.001, 10.0), (0.01, 1.0), (0.01, 10.0)}
    assert (rows[rows.sweep == "exact_gradient"].batch_size == 100).all()
    text = (folder / "summary.md").read_text()
    assert "published_rmse" in text and "CCAdL against SGHMC (verdicts over seeds" in text
    m, floor = re.search(r"Density RMSE of ([\d,]+) independent exact draws \(same bins\): ([\d.]+)", text).groups()
    assert abs(float(floor) / expected_iid_rmse(int(m.replace(",", ""))) - 1) < 0.25, floor
    # SGHMC at h = 0.01, A = 1 needs 2A < h·Σ̂: its noise must have been clipped
    clipped = table[(table.method == "SGHMC") & (table.h == 0.01) & (table.A == 1.0)].noise_clips.iloc[0]
    assert clipped > 0


def expected_iid_rmse(m: int, data_seed: int = 0) -> float:
    """E of the squared density error of m i.i.d. draws is mean_i p_i(1 − p_i)/(m w_i²) (multinomial counts) plus the
    squared gap between the bin-average and the centre density (negligible for 0.01 bins); mean over µ and γ of
    its square root."""
    target = make_target("normal_gamma", data_seed=data_seed)
    values = []
    for marginal, edges in zip(target.marginals(), target.histogram_edges()):
        p, w = np.diff(marginal.cdf(edges)), np.diff(edges)
        values.append(np.sqrt(np.mean(p * (1 - p) / (m * w**2))))
    return float(np.mean(values))
