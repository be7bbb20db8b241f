"""sgmcmc.data.movielens: reading ratings.dat, the id mapping, the authors' folds, and fetching ml-1m.zip (offline:
the one-line DataError; with the network call replaced: the download, its MD5 check and the extraction)."""

import hashlib
import io
import os
import random
import urllib.error
import zipfile
from pathlib import Path

import numpy as np
import pytest

from sgmcmc.data import DataError
from sgmcmc.data import movielens
from sgmcmc.data.movielens import fold_mask, load_movielens, ratings_path, read_ratings
from sgmcmc.data.synthetic_ratings import draw_ratings, write_ratings_dat

HAND = "7::30::5::978300760\n7::10::3::978302109\n2::30::1::978301968\n7::20::4::978300275\n2::10::2::978824291\n"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


def test_reads_the_format_in_file_order_with_ids_mapped_by_first_appearance(tmp_path):
    data = read_ratings(_write(tmp_path / "ratings.dat", HAND))
    assert len(data) == 5 and data.n_users == 2 and data.n_items == 3
    np.testing.assert_array_equal(data.ratings, [5, 3, 1, 4, 2])
    np.testing.assert_array_equal(data.users, [0, 0, 1, 0, 1])  # 7 first, then 2
    np.testing.assert_array_equal(data.items, [0, 1, 0, 2, 1])  # 30, 10, 20
    np.testing.assert_array_equal(data.user_ids, [7, 2])
    np.testing.assert_array_equal(data.item_ids, [30, 10, 20])
    assert data.users.dtype == np.int64 and data.items.dtype == np.int64


def test_windows_line_ends_and_a_trailing_blank_line_are_read(tmp_path):
    data = read_ratings(_write(tmp_path / "ratings.dat", HAND.replace("\n", "\r\n") + "\r\n"))
    np.testing.assert_array_equal(data.ratings, [5, 3, 1, 4, 2])


@pytest.mark.parametrize("text, match", [
    ("1::2::3::4\n1::2::3\n", "line 2"),
    ("1::2::3::4\n1::x::3::4\n", "line 2"),
    ("1::2::3::4\n1::2::3.5::4\n", "line 2"),
    ("1::2::3::4\n1::2::3::4::5\n", "line 2"),
    ("1::2::6::4\n", "outside 1..5"),
    ("\n\n", "no ratings"),
])
def test_a_bad_file_is_a_one_line_data_error_naming_it(tmp_path, text, match):
    path = _write(tmp_path / "ratings.dat", text)
    with pytest.raises(DataError, match=match) as error:
        read_ratings(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_the_synthetic_file_reads_back_with_its_ids(tmp_path):
    drawn = draw_ratings(40, 30, 1000, latent_dim=2, seed=4)
    write_ratings_dat(drawn, tmp_path / "ratings.dat")
    data = load_movielens(ratings_file=tmp_path / "ratings.dat")
    np.testing.assert_array_equal(data.user_ids[data.users], drawn.users)
    np.testing.assert_array_equal(data.item_ids[data.items], drawn.items)
    np.testing.assert_array_equal(data.ratings, drawn.ratings)
    assert data.n_users == 40 and data.n_items == len(np.unique(drawn.items))


@pytest.mark.parametrize("n_folds", [5, 3])
def test_folds_match_the_authors_loop_with_random_Random_0(n_folds):
    n = 2_000
    for fold in range(1, n_folds + 1):
        r = random.Random(0)
        # mknfold.py's random.randint(1, nfold) under Python 2, which it is written in: 1 + int(random() * nfold)
        expected = np.array([1 + int(r.random() * n_folds) == fold for _ in range(n)])
        np.testing.assert_array_equal(fold_mask(n, fold, n_folds), expected)
    assert np.array_equal(sum(fold_mask(n, f, n_folds).astype(int) for f in range(1, n_folds + 1)), np.ones(n))


def test_folds_are_python_2s_randint_sequence():
    # random.seed(0); [random.randint(1, 5) for _ in range(10)] printed by Python 2.7.18 (Python 3's randint differs)
    python2 = [5, 4, 3, 2, 3, 3, 4, 2, 3, 3]
    assert [int(np.flatnonzero([fold_mask(10, f)[i] for f in range(1, 6)])[0]) + 1 for i in range(10)] == python2
    r = random.Random(0)
    assert [r.randint(1, 5) for _ in range(10)] != python2


def test_bad_folds_are_refused():
    for fold, n_folds in ((0, 5), (6, 5), (1, 0)):
        with pytest.raises(ValueError, match="fold"):
            fold_mask(10, fold, n_folds)


def _offline(url, out):
    raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")


def test_offline_the_missing_file_is_one_data_error_naming_where_to_put_it(tmp_path, monkeypatch):
    monkeypatch.setattr(movielens, "copy_url", _offline)
    data_dir = tmp_path / "data"
    with pytest.raises(DataError) as error:
        load_movielens(data_dir)
    message = str(error.value)
    assert "\n" not in message
    assert str(data_dir / "movielens" / "ml-1m" / "ratings.dat") in message
    assert "python -m sgmcmc.data.synthetic_ratings" in message
    assert movielens.ARCHIVE_URL in message and "name resolution" in message
    assert not data_dir.exists()  # the folders made for the download are removed again


def test_the_data_folder_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SGMCMC_DATA", str(tmp_path))
    assert ratings_path() == tmp_path / "movielens" / "ml-1m" / "ratings.dat"
    _write(ratings_path(), HAND)
    assert len(load_movielens()) == 5


def _archive_bytes(text: str = HAND) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("ml-1m/README", "MovieLens 1M")
        bundle.writestr("ml-1m/ratings.dat", text)
    return buffer.getvalue()


def test_a_download_is_checked_by_its_md5_and_ratings_dat_extracted(tmp_path, monkeypatch):
    archive = _archive_bytes()
    urls = []

    def serve(url, out):
        urls.append(url)
        out.write(archive)

    monkeypatch.setattr(movielens, "copy_url", serve)
    monkeypatch.setattr(movielens, "ARCHIVE_MD5", hashlib.md5(archive).hexdigest())
    data = load_movielens(tmp_path)
    assert urls == ["https://files.grouplens.org/datasets/movielens/ml-1m.zip"]
    assert len(data) == 5 and data.path == tmp_path / "movielens" / "ml-1m" / "ratings.dat"
    assert (tmp_path / "movielens" / "ml-1m.zip").read_bytes() == archive
    assert sorted(os.listdir(tmp_path / "movielens" / "ml-1m")) == ["ratings.dat"]  # no temporary files left
    load_movielens(tmp_path)
    assert len(urls) == 1  # the extracted file is used from then on


def test_a_download_with_the_wrong_md5_is_refused_and_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(movielens, "copy_url", lambda url, out: out.write(_archive_bytes()))
    with pytest.raises(DataError, match="checksum mismatch") as error:
        load_movielens(tmp_path)
    assert "c4d9eecfca2ab87c1945afe126590906" in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "movielens" / "ml-1m.zip").exists()
    assert not (tmp_path / "movielens" / "ml-1m" / "ratings.dat").exists()


def test_an_archive_put_into_the_data_folder_is_used_without_a_download(tmp_path, monkeypatch):
    archive = _archive_bytes()
    (tmp_path / "movielens").mkdir()
    (tmp_path / "movielens" / "ml-1m.zip").write_bytes(archive)
    monkeypatch.setattr(movielens, "copy_url", _offline)
    with pytest.raises(DataError, match="expected MD5 c4d9eecfca2ab87c1945afe126590906"):
        load_movielens(tmp_path)  # not GroupLens's archive
    monkeypatch.setattr(movielens, "ARCHIVE_MD5", hashlib.md5(archive).hexdigest())
    assert len(load_movielens(tmp_path)) == 5


def test_an_archive_without_ratings_dat_is_a_data_error(tmp_path, monkeypatch):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as bundle:
        bundle.writestr("ml-1m/README", "no ratings")
    (tmp_path / "movielens").mkdir()
    (tmp_path / "movielens" / "ml-1m.zip").write_bytes(buffer.getvalue())
    monkeypatch.setattr(movielens, "ARCHIVE_MD5", hashlib.md5(buffer.getvalue()).hexdigest())
    with pytest.raises(DataError, match="cannot extract ml-1m/ratings.dat"):
        load_movielens(tmp_path)
    assert not (tmp_path / "movielens" / "ml-1m" / "ratings.dat").exists()


def test_a_missing_ratings_file_names_the_synthetic_command(tmp_path):
    with pytest.raises(DataError, match="python -m sgmcmc.data.synthetic_ratings"):
        load_movielens(ratings_file=tmp_path / "nowhere.dat")


def test_the_real_file_when_present():
    path = ratings_path()
    if not path.is_file():
        pytest.skip(f"MovieLens-1M is not at {path}")
    data = read_ratings(path)
    if len(data) != 1_000_209:
        pytest.skip(f"{path} is not MovieLens-1M (a synthetic stand-in?)")
    assert (data.n_users, data.n_items) == (6040, 3706)
    assert int(fold_mask(len(data), 1).sum()) == 200_612
