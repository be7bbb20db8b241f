"""The HMC reference-posterior experiment (SPEC §4.9) end to end on a tiny fake MNIST, and the loader's
message when no reference exists."""

import numpy as np
import pytest

import sgmcmc.data.mnist as mnist_module
from experiments import reference_logistic
from sgmcmc.reference import ReferenceMissing, load_reference
from tests.helpers import fake_mnist_source


@pytest.mark.validate
def test_smoke_run_writes_a_loadable_reference(monkeypatch, tmp_path):
    monkeypatch.setattr(mnist_module, "load_mnist", lambda data_dir=None, digits=None: fake_mnist_source(n_train=600))
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path / "data"))
    reference_logistic.main(["--smoke", "--root", str(tmp_path / "reference")])
    reference = load_reference(reference_logistic.reference_name(0), tmp_path / "reference")
    assert reference.mean.shape == (100,) and reference.covariance.shape == (100, 100)
    assert reference.draws.shape[1] == 100 and reference.rhat.shape == (100,)
    assert np.all(np.isfinite(reference.draws))
    np.testing.assert_allclose(reference.covariance, reference.covariance.T)
    summary = (reference.folder / "summary.md").read_text()
    assert "split R-hat" in summary and "(w₂, w₅)" in summary
    assert (reference.folder / "provenance.json").is_file()


def test_missing_reference_says_how_to_make_it(tmp_path):
    with pytest.raises(ReferenceMissing, match="make reference-logistic"):
        load_reference("logistic_mnist79-proj0", tmp_path, make_target="reference-logistic")
