"""Autocorrelation, integrated autocorrelation time, ESS and R-hat (SPEC §3 "Metric definitions"; SPEC §4.12)."""

from __future__ import annotations

import logging
import warnings

import numpy as np
from scipy import fft

__all__ = ["autocorrelation", "integrated_autocorrelation_time", "effective_sample_size", "split_rhat"]


def _as_chains(chains: np.ndarray) -> np.ndarray:
    """(n_chains, n_draws, dim) float array; a 2D input is read as dim = 1."""
    x = np.asarray(chains, dtype=float)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(f"chains must have shape (n_chains, n_draws >= 2, dim); got {np.shape(chains)}")
    return x


def autocorrelation(chains: np.ndarray) -> np.ndarray:
    """Normalised autocorrelation ρ_s, s = 0..n_draws−1, averaged over chains.

    For each chain and coordinate the series is centred at its own mean, ``x_t = θ_t − θ̄``, and (Hoffman & Gelman,
    NUTS paper §4.4, the estimator behind SPEC §3's autocorrelation time)::

        ρ_s = [ (1/(L−s)) Σ_{t=1}^{L−s} x_t x_{t+s} ] / [ (1/L) Σ_{t=1}^{L} x_t² ],   L = n_draws,

    i.e. each chain's lag-s autocovariance is averaged over its L−s products and normalised by its lag-0 value; the
    result is then averaged over chains. The lag sums are computed by FFT with zero padding to at least 2L−1 (no
    circular wrap). At lags close to L the estimate rests on few products and is noisy. A chain with zero variance
    gives NaN.

    Parameters
    ----------
    chains : ndarray, shape (n_chains, n_draws, dim)

    Returns
    -------
    ndarray, shape (n_draws, dim)
        ρ_0 = 1, ρ_1, ..., ρ_{L−1} per coordinate.
    """
    x = _as_chains(chains)
    n = x.shape[1]
    x = x - x.mean(axis=1, keepdims=True)
    nfft = fft.next_fast_len(2 * n - 1, real=True)
    spec = fft.rfft(x, n=nfft, axis=1)
    lag_sums = fft.irfft(spec * np.conj(spec), n=nfft, axis=1)[:, :n, :]  # Σ_t x_t x_{t+s}
    acov = lag_sums / (n - np.arange(n))[None, :, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        rho = acov / acov[:, :1, :]
    return rho.mean(axis=0)


def integrated_autocorrelation_time(chains: np.ndarray, threshold: float = 0.05) -> float:
    """Integrated autocorrelation time in steps (SPEC §3, Hoffman–Gelman truncation), averaged over coordinates.

    ``τ = 1 + 2 Σ_{s=1}^{S} (1 − s/L) ρ_s`` with ρ_s from :func:`autocorrelation` (averaged over chains),
    ``L = n_draws`` and ``S`` the last lag before the first lag ``s ≥ 1`` with ``ρ_s < threshold`` (that lag is not
    included; if ρ never drops below the threshold, ``S = L − 1``). Computed per coordinate, then averaged. Unlike
    [c:SGHMC ``aucTime.m``], every lag contributes ``2(1 − s/L) ρ_s``, not ``2(1 − s/L)``.

    Parameters
    ----------
    chains : ndarray, shape (n_chains, n_draws, dim)
    threshold : float, default 0.05

    Returns
    -------
    float
    """
    rho = autocorrelation(chains)  # (L, dim)
    n_lags = rho.shape[0]
    below = rho[1:] < threshold  # NaN compares False
    first = np.where(below.any(axis=0), np.argmax(below, axis=0) + 1, n_lags)  # first lag below threshold
    s = np.arange(n_lags)[:, None]
    keep = (s >= 1) & (s < first[None, :])
    taper = 1.0 - s / n_lags
    tau = 1.0 + 2.0 * np.sum(np.where(keep, taper * rho, 0.0), axis=0)
    if np.any(~np.isfinite(rho[0])):
        tau = np.where(np.isfinite(rho[0]), tau, np.nan)
    return float(np.mean(tau))


def _dataset(chains: np.ndarray):
    logging.getLogger("arviz").setLevel(logging.WARNING)  # arviz 0.23 logs its optional packages at INFO
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz as az
    return az, az.convert_to_dataset({"x": _as_chains(chains)})


def effective_sample_size(chains: np.ndarray) -> np.ndarray:
    """ArviZ bulk effective sample size per coordinate (SPEC §4.12 cross-check of τ).

    ``arviz.ess(..., method="bulk")``: rank-normalised split-chain ESS (Vehtari et al. 2021).

    Parameters
    ----------
    chains : ndarray, shape (n_chains, n_draws, dim)

    Returns
    -------
    ndarray, shape (dim,)
    """
    az, ds = _dataset(chains)
    return np.asarray(az.ess(ds, method="bulk")["x"].values, dtype=float).reshape(-1)


def split_rhat(chains: np.ndarray) -> np.ndarray:
    """R-hat per coordinate via ``arviz.rhat`` (its default ``method="rank"``).

    This is the rank-normalised split-R-hat of Vehtari et al. (2021): the maximum of the split-R-hat of the
    rank-normalised draws and of the rank-normalised folded draws; the threshold R-hat < 1.01 of SPEC §4.9 refers
    to it.

    Parameters
    ----------
    chains : ndarray, shape (n_chains, n_draws, dim)

    Returns
    -------
    ndarray, shape (dim,)
    """
    az, ds = _dataset(chains)
    return np.asarray(az.rhat(ds)["x"].values, dtype=float).reshape(-1)
