"""Smoke run of Shang et al. Fig. 2 (part of `make test`) on the real MNIST 7 vs 9 (skipped without
../shared/data): four Hydra multirun sweeps with tiny settings write the figure and the summary."""

import os
from pathlib import Path

import pandas as pd
import pytest

from experiments import ccadl_fig2

DATA = Path(os.environ.get("SGMCMC_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))


@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="needs the MNIST files (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("SGMCMC_DATA", str(DATA))
    ccadl_fig2.main(["--smoke", "--root", str(tmp_path), "--jobs", "1"])
    (folder,) = (tmp_path / "ccadl-fig2").glob("2*")
    for name in ("fig2_logistic.png", "summary.csv", "summary.md", "provenance.json"):
        assert (folder / name).stat().st_size > 0, name
    table = pd.read_csv(folder / "summary.csv")
    assert len(table) == 18 and (table.status == "completed").all()
    assert set(zip(table.h, table.A)) == {(h, a) for h in (2e-5, 5e-5, 1e-4) for a in (1.0, 10.0)}
    assert table.test_log_likelihood.between(-5000, 0).all()
    assert "test log-likelihood at the pass budget: CCAdL" in (folder / "summary.md").read_text()
