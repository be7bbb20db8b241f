"""sgmcmc.results.code_is_dirty: a tracked change outside results/ makes the code dirty; outputs written under
results/ (a changed LATEST) do not; outside a repository the answer is None (checked in a throwaway repository).
sgmcmc.results.write_rows: the trace's CSV as pandas writes it, without pandas."""

import subprocess

import numpy as np
import pandas as pd
import pytest

from sgmcmc.results import code_is_dirty, rows_csv, write_rows


def _git(folder, *args):
    subprocess.run(["git", *args], cwd=folder, check=True, capture_output=True)


def test_only_changes_outside_results_make_the_code_dirty(tmp_path):
    repository = tmp_path / "repository"
    (repository / "results" / "paper").mkdir(parents=True)
    (repository / "code.py").write_text("x = 1\n")
    (repository / "results" / "paper" / "LATEST").write_text("old\n")
    _git(repository, "init", "-q")
    _git(repository, "add", ".")
    _git(repository, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "start")
    assert code_is_dirty(repository) is False
    (repository / "results" / "paper" / "LATEST").write_text("new\n")
    (repository / "results" / "paper" / "new_folder").mkdir()
    assert code_is_dirty(repository) is False
    (repository / "code.py").write_text("x = 2\n")
    assert code_is_dirty(repository) is True
    (tmp_path / "elsewhere").mkdir()
    assert code_is_dirty(tmp_path / "elsewhere") is None


# -- trace.csv without pandas -------------------------------------------------------------------------------------
def random_rows(rng, n_rows):
    """Rows as traces have them: ints, Python and numpy floats of all sizes, NaN, inf, None, absent keys, bools."""
    kinds = ["int", "float", "numpy float", "float32", "numpy int", "bool", "numpy bool", "int or missing",
             "float or missing", "int and float", "none"]
    rows = []
    for i in range(n_rows):
        row = {"step": (i + 1) * 100}
        for j, kind in enumerate(kinds):
            scale = 10.0 ** rng.integers(-20, 20)
            value = {"int": int(rng.integers(-10**12, 10**12)), "float": float(rng.standard_normal() * scale),
                     "numpy float": np.float64(rng.standard_normal() * scale),
                     "float32": np.float32(rng.standard_normal() * scale), "numpy int": np.int64(rng.integers(0, 9)),
                     "bool": bool(rng.integers(2)), "numpy bool": np.bool_(rng.integers(2)),
                     "int or missing": int(rng.integers(0, 99)) if rng.random() < 0.7 else None,
                     "float or missing": rng.choice([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e16, 1e-5, 0.1, 123.0]),
                     "int and float": int(i) if i % 2 else float(i) / 3, "none": None}[kind]
            if rng.random() < 0.9 or kind in ("int", "numpy int", "bool", "numpy bool"):
                row[f"{kind} {j}"] = value
        rows.append(row)
    return rows


def test_rows_csv_is_what_pandas_writes():
    """The CSV text of :func:`write_rows` equals ``pd.DataFrame(rows).to_csv(index=False)``: column order of first
    appearance, int columns as ints, a number column with a gap or a float as float64 (``3.0``, ``1e-05``, ``inf``,
    float32's float64 digits), a column of numpy floats only in its own type (float32 digits), bool columns,
    missing values and absent keys as empty fields, no rows, empty rows."""
    rng = np.random.default_rng(0)
    cases = [[], [{}], [{}, {}], [{"a": None}], [{"a": 1}, {"a": 2.5}], [{"a": 1}, {}], [{"a": True}, {"a": None}],
             [{"step": 100, "n_samples": 0, "kl_pq": None}, {"step": 200, "n_samples": 1000, "kl_pq": 0.23149591409500392}],
             [{"a": 2**62}, {"a": -5}], [{"a": 1e300, "b": 5e-324, "c": -1.5e-7}],
             [{"a": np.float16(0.1), "b": np.float32(0.1)}, {"a": np.float32(0.1), "b": np.float32(0.2)}],
             [{"a": np.float32(0.1)}, {"a": None}], [{"a": np.float32(0.1)}, {"a": 1}], [{"a": np.int8(3)}, {}]]
    cases += [random_rows(rng, n) for n in (1, 2, 5, 40) for _ in range(5)]
    for rows in cases:
        assert rows_csv(rows) == pd.DataFrame(rows).to_csv(index=False), rows


@pytest.mark.parametrize("rows", [[{"a": "text"}], [{"a": 1}, {"a": True}], [{"a": np.zeros(2)}], [{"a": 2**70}],
                                  [{"a": np.longdouble(0.1)}]])
def test_rows_pandas_formats_itself_are_left_to_pandas(rows, tmp_path):
    """Text, bools among numbers, arrays, ints beyond int64: pandas writes them (same file either way)."""
    assert rows_csv(rows) is None
    write_rows(tmp_path / "trace.csv", rows)
    pd.DataFrame(rows).to_csv(tmp_path / "pandas.csv", index=False)
    assert (tmp_path / "trace.csv").read_text() == (tmp_path / "pandas.csv").read_text()


def test_write_rows_writes_the_file(tmp_path):
    rows = [{"step": 1, "w1": 0.5}, {"step": 2, "w1": None}]
    write_rows(tmp_path / "trace.csv", rows)
    assert (tmp_path / "trace.csv").read_text() == "step,w1\n1,0.5\n2,\n"
    assert pd.read_csv(tmp_path / "trace.csv")["step"].tolist() == [1, 2]
