"""The data folder: resolving it, and fetching/verifying known files in it."""

import gzip
import hashlib

import numpy as np
import pytest

from sgmcmc.data import DataError, DataFile, fetch, resolve_data_dir, verify
from sgmcmc.data import files as files_module
from sgmcmc.data.folder import DEFAULT_DATA_DIR, PROJECT_ROOT

UNREACHABLE = "http://127.0.0.1:9/nothing"
CONTENT = np.random.default_rng(0).integers(0, 256, 5000, dtype=np.uint8).tobytes()


def _data_file(content=CONTENT, urls=(), relative_path="toy/part-one.bin.gz"):
    """A DataFile whose checksum is that of ``content``."""
    return DataFile(relative_path, tuple(urls), hashlib.sha256(content).hexdigest(), len(content))


def _write_gz(path, content=CONTENT):
    """Write ``content`` gzip-compressed to ``path`` (creating folders)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(gzip.compress(content, mtime=0))
    return path


def test_resolve_data_dir_prefers_configured_then_env_then_default(monkeypatch, tmp_path):
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path / "from-env"))
    assert resolve_data_dir(tmp_path / "configured") == tmp_path / "configured"
    assert resolve_data_dir(str(tmp_path / "configured")) == tmp_path / "configured"
    assert resolve_data_dir() == tmp_path / "from-env"
    monkeypatch.delenv("SGMCMC_DATA")
    assert resolve_data_dir() == DEFAULT_DATA_DIR == PROJECT_ROOT / "data_cache"
    assert (PROJECT_ROOT / "sgmcmc" / "data" / "folder.py").is_file()


def test_resolve_data_dir_expands_home(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert resolve_data_dir("~/data") == tmp_path / "data"
    monkeypatch.setenv("SGMCMC_DATA", "~/env-data")
    assert resolve_data_dir() == tmp_path / "env-data"


def test_data_error_is_one_line():
    assert "\n" not in str(DataError("a\nb\r\n  c"))


def test_fetch_returns_existing_good_file(tmp_path):
    data_file = _data_file(urls=[UNREACHABLE])
    path = _write_gz(tmp_path / data_file.relative_path)
    assert fetch(data_file, tmp_path) == path
    assert fetch(data_file, tmp_path) == path  # second time from the verification cache
    assert verify(path, data_file) == path


def test_verify_reports_changed_content_as_checksum_mismatch(tmp_path):
    data_file = _data_file()
    flipped = bytearray(CONTENT)
    flipped[1234] ^= 0xFF
    path = _write_gz(tmp_path / data_file.relative_path, bytes(flipped))
    with pytest.raises(DataError, match="checksum mismatch") as error:
        fetch(data_file, tmp_path)
    message = str(error.value)
    assert str(path) in message and data_file.sha256 in message and "\n" not in message


def test_verify_reports_truncated_gzip_as_corrupt(tmp_path):
    data_file = _data_file()
    path = _write_gz(tmp_path / data_file.relative_path)
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataError, match="corrupt") as error:
        verify(path, data_file)
    assert str(path) in str(error.value)


def test_verify_checks_plain_files_too(tmp_path):
    data_file = _data_file(relative_path="toy/plain.bin")
    path = tmp_path / "plain.bin"
    path.write_bytes(CONTENT)
    assert verify(path, data_file) == path
    path.write_bytes(CONTENT[:-1])
    with pytest.raises(DataError, match="checksum mismatch"):
        verify(path, data_file)


def test_fetch_missing_file_unreachable_urls_gives_one_line_error(tmp_path):
    data_dir = tmp_path / "data"
    data_file = _data_file(urls=[UNREACHABLE, UNREACHABLE + "/again"])
    with pytest.raises(DataError) as error:
        fetch(data_file, data_dir)
    message = str(error.value)
    assert "\n" not in message
    assert data_file.relative_path in message and str(data_dir) in message
    assert UNREACHABLE in message and "SGMCMC_DATA" in message
    assert not data_dir.exists()  # folders made for the download are removed again


def test_fetch_into_unwritable_folder_gives_data_error(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    data_file = _data_file(urls=[UNREACHABLE])
    with pytest.raises(DataError, match="cannot create") as error:
        fetch(data_file, blocker / "data")
    assert "\n" not in str(error.value)


def test_fetch_downloads_verifies_and_moves_into_place(tmp_path):
    source = _write_gz(tmp_path / "mirror" / "part-one.bin.gz")
    data_dir = tmp_path / "data"
    data_file = _data_file(urls=[UNREACHABLE, source.as_uri()])
    path = fetch(data_file, data_dir)
    assert path == data_dir / data_file.relative_path
    assert path.read_bytes() == source.read_bytes()
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temporary file left


def test_fetch_rejects_a_download_with_the_wrong_content(tmp_path):
    source = _write_gz(tmp_path / "mirror" / "part-one.bin.gz", CONTENT[:-10])
    data_dir = tmp_path / "data"
    data_file = _data_file(urls=[source.as_uri()])
    with pytest.raises(DataError, match="checksum mismatch") as error:
        fetch(data_file, data_dir)
    assert "\n" not in str(error.value)
    assert not data_dir.exists()


def test_fetch_uses_the_verification_cache(tmp_path, monkeypatch):
    data_file = _data_file()
    path = _write_gz(tmp_path / data_file.relative_path)
    fetch(data_file, tmp_path)
    calls = []
    monkeypatch.setattr(files_module, "verify", lambda *args: calls.append(args))
    fetch(data_file, tmp_path)
    assert calls == []
    path.write_bytes(gzip.compress(CONTENT + b"x", mtime=0))  # another version of the file is hashed again
    fetch(data_file, tmp_path)
    assert len(calls) == 1
