"""IDX reading and writing."""

import gzip

import numpy as np
import pytest

from sgmcmc.data import DataError, read_idx, write_idx


@pytest.mark.parametrize("name", ["images.idx", "images.idx.gz"])
def test_round_trip(tmp_path, name):
    array = np.random.default_rng(1).integers(0, 256, (5, 3, 4), dtype=np.uint8)
    path = write_idx(tmp_path / name, array)
    back = read_idx(path)
    assert back.dtype == np.uint8 and back.shape == (5, 3, 4)
    np.testing.assert_array_equal(back, array)


def test_header_is_big_endian_ubyte(tmp_path):
    path = write_idx(tmp_path / "labels.idx", np.arange(300, dtype=np.int64).astype(np.uint8))
    raw = path.read_bytes()
    assert raw[:8] == bytes([0, 0, 0x08, 1, 0, 0, 0x01, 0x2C])
    assert len(raw) == 8 + 300


def test_gzip_file_is_gzip(tmp_path):
    path = write_idx(tmp_path / "labels.idx.gz", np.zeros(7, np.uint8))
    assert gzip.decompress(path.read_bytes())[:4] == bytes([0, 0, 8, 1])


def test_truncated_file_names_the_file(tmp_path):
    path = write_idx(tmp_path / "images.idx", np.ones((4, 2, 2), np.uint8))
    path.write_bytes(path.read_bytes()[:-1])
    with pytest.raises(DataError, match="truncated") as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_extra_bytes_name_the_file(tmp_path):
    path = write_idx(tmp_path / "images.idx", np.ones((4, 2, 2), np.uint8))
    path.write_bytes(path.read_bytes() + b"\0")
    with pytest.raises(DataError, match="extra bytes") as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_truncated_header(tmp_path):
    path = tmp_path / "short.idx"
    path.write_bytes(bytes([0, 0, 8, 3, 0, 0, 0, 4]))
    with pytest.raises(DataError, match="truncated"):
        read_idx(path)


def test_wrong_magic(tmp_path):
    path = tmp_path / "wrong.idx"
    path.write_bytes(b"PK\x03\x04" + bytes(20))
    with pytest.raises(DataError, match="not an IDX file") as error:
        read_idx(path)
    assert str(path) in str(error.value)


def test_other_data_types_are_refused(tmp_path):
    path = tmp_path / "floats.idx"
    path.write_bytes(bytes([0, 0, 0x0D, 1, 0, 0, 0, 1]) + bytes(4))
    with pytest.raises(DataError, match="0x0d"):
        read_idx(path)


def test_corrupt_gzip_is_a_data_error(tmp_path):
    path = write_idx(tmp_path / "images.idx.gz", np.ones((40, 2, 2), np.uint8))
    path.write_bytes(path.read_bytes()[:-12])
    with pytest.raises(DataError, match=str(path).replace(".", r"\.")):
        read_idx(path)


def test_write_idx_refuses_other_dtypes(tmp_path):
    with pytest.raises(ValueError):
        write_idx(tmp_path / "x.idx", np.zeros(3, np.int32))
