"""Derived caches live in a cache folder of their own (``cache_dir``), never in the data folder: a user's data folder
may be shared or read-only. The real MNIST files (../shared/data or SGMCMC_DATA) are copied, so that the test may
make its data folder read-only or watch it for writes."""

import os
import shutil
import stat
from pathlib import Path

import numpy as np
import pytest

import sgmcmc.targets.logistic_regression as logistic_regression
from sgmcmc.keys import validate_config
from sgmcmc.data import resolve_cache_dir
from sgmcmc.data.folder import DEFAULT_CACHE_DIR, PROJECT_ROOT
from sgmcmc.targets import make_target

DATA = Path(os.environ.get("SGMCMC_DATA", PROJECT_ROOT.parent / "shared" / "data"))
CACHE_FILE = "logistic_mnist79-proj0-d100.npz"


def test_resolve_cache_dir_prefers_configured_then_env_then_the_project_s_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "from-env"))
    assert resolve_cache_dir(tmp_path / "configured") == tmp_path / "configured"
    assert resolve_cache_dir(str(tmp_path / "configured")) == tmp_path / "configured"
    assert resolve_cache_dir() == resolve_cache_dir("") == tmp_path / "from-env"
    monkeypatch.delenv("SGMCMC_CACHE")
    assert resolve_cache_dir() == DEFAULT_CACHE_DIR == PROJECT_ROOT / ".cache"
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_cache_dir("~/cache") == tmp_path / "cache"


def test_cache_dir_is_a_top_level_key_that_the_logistic_target_gets(monkeypatch):
    from experiments.common import compose

    monkeypatch.delenv("SGMCMC_CACHE", raising=False)
    config = validate_config(compose(["target=logistic_mnist79"]))
    assert config["cache_dir"] is None and config["target"]["cache_dir"] is None  # resolve_cache_dir's default
    monkeypatch.setenv("SGMCMC_CACHE", "/from/env")
    assert validate_config(compose(["target=logistic_mnist79"]))["target"]["cache_dir"] == "/from/env"
    config = validate_config(compose(["target=logistic_mnist79", "cache_dir=/some/cache"]))
    assert config["cache_dir"] == config["target"]["cache_dir"] == "/some/cache"


def _listing(folder: Path) -> dict:
    """Every path below ``folder`` with its mode, size and modification time."""
    return {str(path.relative_to(folder)): (path.stat().st_mode, path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*"))}


def _set_read_only(folder: Path, read_only: bool) -> None:
    for path in [folder, *folder.rglob("*")]:
        mode = path.stat().st_mode | stat.S_IWUSR
        path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) if read_only else mode)


@pytest.fixture
def data_copy(tmp_path):
    """A copy of the data folder with the MNIST files only (writable: the test decides)."""
    if not (DATA / "mnist").is_dir():
        pytest.skip("needs the MNIST files (../shared/data or SGMCMC_DATA)")
    copy = tmp_path / "data"
    shutil.copytree(DATA / "mnist", copy / "mnist")
    _set_read_only(copy, False)
    yield copy
    _set_read_only(copy, False)  # so that pytest can remove it


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only", "writable"])
def test_the_logistic_target_writes_its_cache_into_cache_dir_and_nothing_into_the_data_folder(
        read_only, data_copy, tmp_path, monkeypatch):
    """The projected features go to cache_dir (here through SGMCMC_CACHE, as configs/config.yaml reads it), also when
    the data folder could be written; a second build reads them from there."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("SGMCMC_CACHE", str(cache))
    _set_read_only(data_copy, read_only)
    before = _listing(data_copy)
    first = make_target("logistic_mnist79", data_dir=str(data_copy))
    assert _listing(data_copy) == before
    assert sorted(path.name for path in cache.iterdir()) == [CACHE_FILE]  # no temporary file left

    def no_projection(*args):
        raise AssertionError("projected again: the cache in cache_dir was not read")

    monkeypatch.setattr(logistic_regression, "_project", no_projection)
    again = make_target("logistic_mnist79", data_dir=str(data_copy), cache_dir=str(cache))
    np.testing.assert_array_equal(again.features, first.features)
    np.testing.assert_array_equal(again.test_features, first.test_features)
    assert _listing(data_copy) == before
