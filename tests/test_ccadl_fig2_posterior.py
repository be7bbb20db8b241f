"""Smoke run of the long-chain Fig. 2 bottom row (part of `make validate`; needs the MNIST files and the
committed HMC reference)."""

import pytest

from experiments import ccadl_fig2_posterior
from tests.helpers import one_thread, smoke_run
from tests.test_ccadl_fig2 import DATA


@pytest.mark.validate
@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="needs the MNIST files (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    with one_thread(monkeypatch):  # SGHMC's clipped 100×100 draws in the sweep
        folder, table = smoke_run(ccadl_fig2_posterior, "ccadl-fig2-posterior", tmp_path, monkeypatch, DATA,
                                  ["--step-sizes", "1e-4,2e-5"], ["posterior_w2_w5.png"])
    assert set(table.method) == {"SGHMC", "SGNHT", "CCAdL"} and (table.chains == 2).all()
    assert sorted(table.h.unique()) == [2e-5, 1e-4] and len(table) == 6
    assert (table.mean_rms_z > 0).all() and (table.sampling_rms_z > 0).all()


def test_step_sizes_outside_the_paper_are_refused():
    with pytest.raises(SystemExit, match="--step-sizes: 0.001 is not one of"):
        ccadl_fig2_posterior.parse_step_sizes("1e-4,1e-3")
