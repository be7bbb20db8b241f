"""Smoke run of Shang et al. Table 1 / Fig. 1 (part of `make test`): three Hydra multirun sweeps with
tiny settings write the table, the thermostat table and the figure."""

import pandas as pd

from experiments import ccadl_table1


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
    assert "published_rmse" in text and "CCAdL below SGHMC in" in text
    # SGHMC at h = 0.01, A = 1 needs 2A < h·Σ̂: its noise must have been clipped
    clipped = table[(table.method == "SGHMC") & (table.h == 0.01) & (table.A == 1.0)].noise_clips.iloc[0]
    assert clipped > 0
