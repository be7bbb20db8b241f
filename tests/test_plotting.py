"""sgmcmc.plotting's metric figures from a run's trace rows (dicts, no pandas) are the ones drawn from the same
trace as a DataFrame, byte for byte; a trace with nothing to draw gives no figure."""

import numpy as np
import pandas as pd

from sgmcmc import plotting


def trace_rows():
    rows = [{"step": 100, "n_samples": 0, "step_size": 0.1, "kl_pq": None, "kl_qp": None, "w1": None}]
    for i in range(2, 8):
        rows.append({"step": 100 * i, "n_samples": 1000 * (i - 1), "step_size": 0.1, "kl_pq": 0.3 / i,
                     "kl_qp": 0.1 / i**2, "w1": 1e-10 if i == 5 else 0.2 / i})  # 1e-10: clipped at 1e-8
    return rows


def data_rows():
    return [{"step": 10 * i, "passes": i / 4, "test_error": 0.5 / i, "test_log_likelihood": None if i == 3 else -i}
            for i in range(1, 9)]


def test_metric_figures_from_rows_equal_those_from_a_data_frame(tmp_path):
    for name, rows in (("metrics", trace_rows()), ("data", data_rows())):
        from_rows = plotting.metric_trace(rows, tmp_path / f"{name}_rows.png")
        from_frame = plotting.metric_trace(pd.DataFrame(rows), tmp_path / f"{name}_frame.png")
        assert from_rows is not None and from_frame is not None
        assert from_rows.read_bytes() == from_frame.read_bytes(), name


def test_no_metric_columns_no_figure(tmp_path):
    rows = [{"step": 1, "n_samples": 0, "kl_pq": None}, {"step": 2, "n_samples": 10, "kl_pq": np.nan}]
    assert plotting.metric_trace(rows, tmp_path / "m.png") is None
    assert plotting.metric_trace(pd.DataFrame(rows), tmp_path / "m.png") is None
    assert not (tmp_path / "m.png").exists()


def test_a_trace_with_only_the_kernel_stein_discrepancy_is_drawn(tmp_path):
    """A target with a gradient but no exact density (a user's model): its trace's ksd column gets the figure."""
    rows = [{"step": 100 * i, "n_samples": 10 * i, "ksd": None if i == 1 else 1.0 / i} for i in range(1, 6)]
    assert plotting.metric_trace(rows, tmp_path / "m.png") == tmp_path / "m.png"
    assert (tmp_path / "m.png").stat().st_size > 0
