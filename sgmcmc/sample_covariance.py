"""S²(θ), the sample covariance of the rows' gradients over all N rows, summed in chunks: the known noise's V(θ).

One home for the sum that a data target (:meth:`~sgmcmc.targets.data.DataTarget.per_example_covariance`) and the
replay of a vectorised model (:func:`sgmcmc.engine.replay.row_covariance`) both take; the compiled blocks' per-chain
sum is :func:`sgmcmc.engine.estimators._full_data_covariance`.
"""

from __future__ import annotations

from typing import Iterable

import numpy as np


def chunked_sample_covariance(chunks: Iterable[np.ndarray], n_data: int, diagonal: bool = False) -> np.ndarray:
    """S² = Σ_i (h_i − h̄)(h_i − h̄)ᵀ/(N − 1) over the N rows handed in ``chunks`` of shape (k, m, d) (the k points
    at once): (k, d, d), or its diagonal (k, d). Summed about the first chunk's mean (a numerically stable one pass):
    with c_i = h_i − shift, S² = (Σ c_i c_iᵀ − (Σ c_i)(Σ c_i)ᵀ/N)/(N − 1)."""
    shift = first = second = None
    for chunk in chunks:
        chunk = np.asarray(chunk, dtype=float)
        if shift is None:
            shift = chunk.mean(axis=1, keepdims=True)
            k, _, d = chunk.shape
            first, second = np.zeros((k, d)), np.zeros((k, d) if diagonal else (k, d, d))
        chunk = chunk - shift
        first += chunk.sum(axis=1)
        second += (chunk * chunk).sum(axis=1) if diagonal else np.matmul(chunk.transpose(0, 2, 1), chunk)  # BLAS
    outer = first * first if diagonal else first[:, :, None] * first[:, None, :]
    return (second - outer / n_data) / (n_data - 1)
