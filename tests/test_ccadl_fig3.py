"""Smoke run of Shang et al. Fig. 3 (part of `make test`) on the real letter and connect-4 files (skipped
without them): Hydra multiruns with 2 passes write the figure and the summary."""

import pandas as pd
import pytest

from experiments import ccadl_fig3
from tests.test_ccadl_fig2 import DATA


@pytest.mark.skipif(not (DATA / "libsvm").is_dir(), reason="needs the LIBSVM files (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    monkeypatch.setenv("SGMCMC_DATA", str(DATA))
    ccadl_fig3.main(["--smoke", "--root", str(tmp_path), "--jobs", "1", "--datasets", "letter"])
    (folder,) = (tmp_path / "ccadl-fig3").glob("2*")
    for name in ("fig3_drbm.png", "summary.csv", "summary.md", "provenance.json"):
        assert (folder / name).stat().st_size > 0, name
    table = pd.read_csv(folder / "summary.csv")
    assert len(table) == 18 and (table.status == "completed").all()
    assert table.test_error.between(0, 1).all()
    assert "letter: at the largest h, CCAdL" in (folder / "summary.md").read_text()
