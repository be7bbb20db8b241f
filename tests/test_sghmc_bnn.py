"""The SGHMC paper's BNN on MNIST (experiments/sghmc_bnn.py, SPEC T11/E11): the smoke version of `make sghmc-bnn`
writes the figure, summary and provenance with every method over seeds, and its verdicts follow the seed spread."""

import json

import numpy as np
import pandas as pd
import pytest

from experiments import sghmc_bnn
from tests.helpers import smoke_run
from tests.test_ccadl_fig2 import DATA
from tests.test_recipe_fig3 import expected_verdict


@pytest.mark.validate
@pytest.mark.skipif(not (DATA / "mnist").is_dir(), reason="needs MNIST (../shared/data or SGMCMC_DATA)")
def test_smoke_run_writes_figure_and_summary(tmp_path, monkeypatch):
    folder, table = smoke_run(sghmc_bnn, "sghmc-bnn", tmp_path, monkeypatch, DATA, ["--seeds", "0,1"],
                              ["fig_bnn_test_error.png"])
    assert set(table.method) == {"SGD", "SGD with momentum", "SGLD", "SGHMC"} and len(table) == 8
    assert (table.status == "completed").all() and (table.epochs == sghmc_bnn.SMOKE["epochs"]).all()
    assert table.test_error.between(0, 1).all() and (table.test_log_likelihood < 0).all()
    summary = (folder / "summary.md").read_text()
    values = {method: part.test_error.to_numpy() for method, part in table.groupby("method")}
    for a, b in (("SGHMC", "SGD with momentum"), ("SGHMC", "SGLD")):
        word = {"below": f"{a} below {b}", "above": f"{a} above {b}", "tie": "tie"}[expected_verdict(values[a], values[b])]
        assert f"{a} vs {b}: {word} (difference" in summary, (a, b, word)
    assert "not statistically significant" in summary  # the authors' own note
    # each method's learning rate was chosen on the validation split from the one grid, and the table says so
    provenance = json.loads((folder / "provenance.json").read_text())
    rates = provenance["settings"]["learning_rates"]
    assert set(rates) == set(sghmc_bnn.METHODS) and set(rates.values()) <= set(sghmc_bnn.SMOKE["grid"])
    assert "Tuning on the validation split" in summary and summary.count("| SGHMC ") >= 2 + 2
    # every final run (after the tuning runs) traced an averaged predictive after burn-in (samplers) and the Gibbs-step
    # precisions
    trace = pd.read_csv(sorted((folder / "runs").glob("*-sghmc-bnn_mnist-*"))[-1] / "trace.csv")
    assert trace.predictions_averaged.iloc[-1] == sghmc_bnn.SMOKE["epochs"] - sghmc_bnn.SMOKE["burn_in_epochs"]
    assert np.all(np.isfinite(trace.precision_w1)) and trace.precision_w1.nunique() > 1


def test_without_mnist_it_stops_with_one_line(tmp_path, monkeypatch, capsys):
    import sgmcmc.data.files as files

    def offline(url, out):
        raise OSError("network unreachable")

    monkeypatch.setattr(files, "copy_url", offline)
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as stopped:
        sghmc_bnn.main(["--smoke", "--root", str(tmp_path / "out")])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and error.startswith("error: data_dir: MNIST file") and not (tmp_path / "out").exists()
