"""Smoke run of Shang et al. Fig. 3 (part of `make test`) on the real letter and connect-4 files (skipped
without them): Hydra multiruns with 2 passes write the figure and the summary."""

import pytest

from experiments import ccadl_fig3
from tests.helpers import smoke_run
from tests.test_ccadl_fig2 import DATA


@pytest.mark.skipif(not (DATA / "libsvm").is_dir(), reason="needs the LIBSVM files (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    folder, table = smoke_run(ccadl_fig3, "ccadl-fig3", tmp_path, monkeypatch, DATA, ["--datasets", "letter"], ["fig3_drbm.png"])
    assert len(table) == 18 and (table.status == "completed").all()
    assert table.test_error.between(0, 1).all()
    assert "letter: at the largest h, CCAdL" in (folder / "summary.md").read_text()
