"""LIBSVM loading on small generated files, plus one check on the real files when they are present."""

import bz2
import hashlib
from pathlib import Path

import numpy as np
import pytest

from sgmcmc.data import DataError, DataFile
from sgmcmc.data.libsvm import LIBSVM_FILES, LIBSVM_SETS, LibsvmSet, fetch_libsvm, load_libsvm, seeded_split

SHARED_DATA = Path(__file__).resolve().parents[2].parent / "shared/data"
OFFLINE_URL = "http://127.0.0.1:9/x"

TRAIN = "3 1:0.5 3:-1 \n1 2:0.25 \n2 1:1 2:1 3:1 4:1 \n3 4:-0.5 \n1 1:-1 \n"
TEST = "2 3:0.75 \n1 1:0.125 \n3 2:1 \n"


def _write(folder: Path, relative_path: str, text: str, checksum: bool = True, urls=()) -> DataFile:
    """Write ``text`` bzip2-compressed to folder/relative_path; its DataFile (with or without checksum)."""
    path = folder / relative_path
    path.parent.mkdir(parents=True, exist_ok=True)
    content = text.encode()
    path.write_bytes(bz2.compress(content))
    digest = hashlib.sha256(content).hexdigest() if checksum else None
    return DataFile(relative_path, tuple(urls), digest, len(content), "LIBSVM test")


def _pair_spec(tmp_path, train=TRAIN, test=TEST, rows=(5, 3), n_features=4, labels=(1, 2, 3)) -> LibsvmSet:
    files = (_write(tmp_path, "libsvm/t/a.tr.bz2", train), _write(tmp_path, "libsvm/t/a.t.bz2", test))
    return LibsvmSet("toy", files, rows, n_features, labels)


def _connect_like(tmp_path, n_rows=40, n_train=32) -> LibsvmSet:
    rng = np.random.default_rng(5)
    lines = [f"{rng.integers(-1, 2)} {i % 6 + 1}:1 {i % 7 + 7}:{i}" for i in range(n_rows)]
    data_file = _write(tmp_path, "libsvm/c/c.bz2", "\n".join(lines) + "\n")
    return LibsvmSet("toy4", (data_file,), (n_rows,), 13, (-1, 0, 1), split=(n_train, n_rows - n_train))


def test_registry():
    assert LIBSVM_FILES["letter.scale.tr"].relative_path == "libsvm/letter/letter.scale.tr.bz2"
    assert LIBSVM_FILES["connect-4"].sha256.startswith("6fd5ca7f") and LIBSVM_FILES["connect-4"].size == 14_744_061
    assert LIBSVM_FILES["acoustic_scale"].sha256 is None
    assert LIBSVM_FILES["letter.scale.t"].urls == (
        "https://www.csie.ntu.edu.tw/~cjlin/libsvmtools/datasets/multiclass/letter.scale.t",
    )
    assert LIBSVM_SETS["connect4"].split == (54_046, 13_511)
    assert LIBSVM_SETS["letter"].rows == (10_500, 5_000) and LIBSVM_SETS["acoustic"].rows == (78_823, 19_705)


def test_unknown_name():
    with pytest.raises(ValueError, match="letter"):
        load_libsvm("mnist")


def test_parse_and_label_mapping(tmp_path):
    data = load_libsvm("toy", tmp_path, spec=_pair_spec(tmp_path))
    assert data.train_x.shape == (5, 4) and data.train_x.dtype == np.float64
    assert data.test_x.shape == (3, 4)
    np.testing.assert_array_equal(data.train_x[0], [0.5, 0, -1, 0])
    np.testing.assert_array_equal(data.test_x[1], [0.125, 0, 0, 0])
    assert data.train_y.dtype == np.int64
    np.testing.assert_array_equal(data.train_y, [2, 0, 1, 2, 0])
    np.testing.assert_array_equal(data.test_y, [1, 0, 2])
    assert data.n_classes == 3 and data.label_values == (1, 2, 3) and data.name == "toy"


def test_negative_labels_map_in_sorted_order(tmp_path):
    data = load_libsvm("toy4", tmp_path, spec=_connect_like(tmp_path))
    assert data.label_values == (-1, 0, 1)
    assert set(np.concatenate([data.train_y, data.test_y]).tolist()) == {0, 1, 2}


def test_seeded_split(tmp_path):
    spec = _connect_like(tmp_path)
    a, b = load_libsvm("toy4", tmp_path, split_seed=1, spec=spec), load_libsvm("toy4", tmp_path, split_seed=1, spec=spec)
    c = load_libsvm("toy4", tmp_path, split_seed=2, spec=spec)
    assert a.train_x.shape == (32, 13) and a.test_x.shape == (8, 13)
    np.testing.assert_array_equal(a.train_x, b.train_x)
    np.testing.assert_array_equal(a.test_y, b.test_y)
    assert not np.array_equal(a.train_x, c.train_x)
    # Column 7..12 holds the row number: train and test together are every row once.
    rows = np.concatenate([a.train_x, a.test_x])[:, 6:].sum(axis=1)
    assert sorted(rows.tolist()) == list(range(40))
    train, test = seeded_split(67_557, 54_046, 0)
    assert train.size == 54_046 and test.size == 13_511


def test_malformed_line(tmp_path):
    spec = _pair_spec(tmp_path, test="2 3:0.75 \n1 1:oops \n3 2:1 \n")
    with pytest.raises(DataError, match=r"a\.t\.bz2") as info:
        load_libsvm("toy", tmp_path, spec=spec)
    assert "\n" not in str(info.value)


def test_wrong_row_count(tmp_path):
    spec = _pair_spec(tmp_path, rows=(6, 3))
    with pytest.raises(DataError, match=r"a\.tr\.bz2.*expected 6 rows, found 5"):
        load_libsvm("toy", tmp_path, spec=spec)


def test_feature_beyond_width(tmp_path):
    spec = _pair_spec(tmp_path, train=TRAIN + "2 5:1 \n", rows=(6, 3))
    with pytest.raises(DataError, match=r"a\.tr\.bz2.*4 features"):
        load_libsvm("toy", tmp_path, spec=spec)


def test_label_outside_set(tmp_path):
    spec = _pair_spec(tmp_path, test=TEST.replace("3 2:1", "4 2:1"))
    with pytest.raises(DataError, match=r"a\.t\.bz2.*label 4 outside"):
        load_libsvm("toy", tmp_path, spec=spec)


def test_missing_class(tmp_path):
    spec = _pair_spec(tmp_path, labels=(1, 2, 3, 4))
    with pytest.raises(DataError, match=r"\[4\] never occur"):
        load_libsvm("toy", tmp_path, spec=spec)


def test_checksum_mismatch(tmp_path):
    spec = _pair_spec(tmp_path)
    (tmp_path / "libsvm/t/a.t.bz2").write_bytes(bz2.compress(TEST.replace("0.75", "0.5").encode()))
    with pytest.raises(DataError, match="checksum mismatch"):
        load_libsvm("toy", tmp_path, spec=spec)


def test_offline_acoustic(tmp_path):
    real = LIBSVM_SETS["acoustic"]
    files = tuple(DataFile(f.relative_path, (OFFLINE_URL,), None, 0, f.dataset, f.companions) for f in real.files)
    spec = LibsvmSet("acoustic", files, real.rows, real.n_features, real.labels)
    with pytest.raises(DataError) as info:
        load_libsvm("acoustic", tmp_path, spec=spec)
    message = str(info.value)
    assert "\n" not in message
    assert "libsvm/acoustic/acoustic_scale.bz2" in message and str(tmp_path) in message and OFFLINE_URL in message
    assert not (tmp_path / "libsvm").exists()


def test_existing_file_without_checksum_is_read(tmp_path):
    files = (_write(tmp_path, "a/x.bz2", TRAIN, checksum=False), _write(tmp_path, "a/y.bz2", TEST, checksum=False))
    data = load_libsvm("toy", tmp_path, spec=LibsvmSet("toy", files, (5, 3), 4, (1, 2, 3)))
    assert data.train_x.shape == (5, 4)


def test_download_compresses_uncompressed_source(tmp_path):
    source = tmp_path / "remote" / "a.tr"
    source.parent.mkdir()
    source.write_text(TRAIN)
    template = _write(tmp_path / "scratch", "libsvm/t/a.tr.bz2", TRAIN)
    data_file = DataFile(template.relative_path, (OFFLINE_URL, source.as_uri()), template.sha256, template.size)
    path = fetch_libsvm(data_file, tmp_path / "cache")
    assert path == tmp_path / "cache/libsvm/t/a.tr.bz2"
    assert bz2.decompress(path.read_bytes()).decode() == TRAIN
    assert [p.name for p in path.parent.iterdir()] == ["a.tr.bz2"]


def test_download_of_compressed_source_without_checksum(tmp_path):
    source = tmp_path / "remote" / "a.t.bz2"
    source.parent.mkdir()
    source.write_bytes(bz2.compress(TEST.encode()))
    data_file = DataFile("libsvm/t/a.t.bz2", (source.as_uri(),), None, 0)  # type: ignore[arg-type]
    path = fetch_libsvm(data_file, tmp_path / "cache")
    assert path.read_bytes() == source.read_bytes()


@pytest.mark.skipif(not (SHARED_DATA / "libsvm").exists(), reason="shared LIBSVM data not present")
def test_real_letter_and_connect4():
    letter = load_libsvm("letter", SHARED_DATA)
    assert letter.train_x.shape == (10_500, 16) and letter.test_x.shape == (5_000, 16)
    assert letter.n_classes == 26 and letter.label_values == tuple(range(1, 27))
    connect4 = load_libsvm("connect4", SHARED_DATA)
    assert connect4.train_x.shape == (54_046, 126) and connect4.test_x.shape == (13_511, 126)
    assert connect4.n_classes == 3 and connect4.label_values == (-1, 0, 1)
    assert (np.count_nonzero(connect4.train_x, axis=1) == 42).all()
    assert (np.count_nonzero(connect4.test_x, axis=1) == 42).all()
