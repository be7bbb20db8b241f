"""Autocorrelation, integrated autocorrelation time, ESS and R-hat (SPEC §3 "Metric definitions"; SPEC §4.12)."""

from __future__ import annotations

import numba
import numpy as np
from scipy import fft
from scipy.special import ndtri

__all__ = ["autocorrelation", "integrated_autocorrelation_time", "effective_sample_size", "rank_diagnostics",
           "split_rhat", "stationary_split_rhat"]


def _as_chains(chains: np.ndarray) -> np.ndarray:
    """(n_chains, n_draws, dim) float array; a 2D input is read as dim = 1."""
    x = np.asarray(chains, dtype=float)
    if x.ndim == 2:
        x = x[:, :, None]
    if x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(f"chains must have shape (n_chains, n_draws >= 2, dim); got {np.shape(chains)}")
    return x


def _mean_lag_sums(x: np.ndarray, padding: int, normalise: bool = False) -> np.ndarray:
    """The mean over chains of Σ_t x_t x_{t+s}, s = 0..n−1, each chain of (chains, n, dim) centred at its own mean
    (and with ``normalise``, its sums divided by its Σ_t x_t²): (n, dim). By FFT zero-padded to at least ``padding``
    (≥ 2n − 1: no circular wrap); the lag sums are linear in the power spectrum |X̂|², so the chains' spectra are
    summed and transformed back once. A few chains and coordinates at a time (:data:`FFT_BLOCK_NUMBERS`): the working
    arrays stay small rather than several times the draws."""
    m, n, dim = x.shape
    nfft = fft.next_fast_len(padding, real=True)
    coordinates = min(dim, max(1, FFT_BLOCK_NUMBERS // nfft))
    chains = max(1, FFT_BLOCK_NUMBERS // (nfft * coordinates))
    total = np.zeros((dim, nfft // 2 + 1))
    for begin in range(0, m, chains):
        # along the last axis of a contiguous copy: pocketfft on the strided axis 1 measured 2.7x slower (100 chains ×
        # 500 draws × 20 coordinates: 0.106 s against 0.039 s)
        rows = np.ascontiguousarray(np.moveaxis(x[begin:begin + chains], 1, 2))  # (c, dim, n)
        for first in range(0, dim, coordinates):
            part = rows[:, first:first + coordinates]
            centred = part - part.mean(axis=2, keepdims=True)
            spectrum = fft.rfft(centred, n=nfft, axis=2)  # (c, k, nfft // 2 + 1)
            power = spectrum.real**2 + spectrum.imag**2
            if normalise:
                power /= np.einsum("ckn,ckn->ck", centred, centred)[:, :, None]
            total[first:first + coordinates] += power.sum(axis=0)
    return fft.irfft(total / m, n=nfft, axis=1)[:, :n].T


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
    with np.errstate(invalid="ignore", divide="ignore"):
        # ρ_s = n/(n − s) · the mean over chains of Σ_t x_t x_{t+s} / Σ_t x_t²
        return _mean_lag_sums(x, 2 * n - 1, normalise=True) * (n / (n - np.arange(n)))[:, None]


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
    x = _as_chains(chains)
    n, dim = x.shape[1], x.shape[2]
    tau = np.empty(dim)
    pending = np.arange(dim)  # the coordinates whose ρ has not yet dropped below the threshold in the lags computed
    lags = min(DIRECT_LAGS, n)
    while True:
        part = x if pending.size == dim else x[:, :, pending]
        with np.errstate(invalid="ignore", divide="ignore"):
            rho = _direct_mean_lag_sums(part, lags) * (n / (n - np.arange(lags)))[:, None]
        done = (rho[1:] < threshold).any(axis=0) | (lags == n)  # NaN compares False
        tau[pending[done]] = _truncated_tau(rho[:, done], n, threshold)
        pending = pending[~done]
        if not pending.size:
            return float(np.mean(tau))
        # where ρ decays geometrically from its last lag computed, the lag at which it crosses the threshold
        last = rho[-1, ~done]
        if not np.all((last > 0.0) & (last < 1.0)):
            break
        crossing = (lags - 1) * np.log(threshold) / np.log(last.max())
        if 1.5 * crossing >= DIRECT_LAGS_MOST:
            break
        lags = min(int(1.5 * crossing) + 1, n)
    tau[pending] = _truncated_tau(autocorrelation(x[:, :, pending]), n, threshold)
    return float(np.mean(tau))


def _truncated_tau(rho: np.ndarray, n_draws: int, threshold: float) -> np.ndarray:
    """τ per coordinate of ρ_s (lags, dim), s from 0, of chains of L = ``n_draws``
    (:func:`integrated_autocorrelation_time`): ``1 + 2 Σ_{s=1}^{S} (1 − s/L) ρ_s``, S the lag before the first below
    ``threshold`` (or the last lag given); NaN where ρ_0 is not finite."""
    n_lags = rho.shape[0]
    below = rho[1:] < threshold  # NaN compares False
    first = np.where(below.any(axis=0), np.argmax(below, axis=0) + 1, n_lags)  # first lag below threshold
    s = np.arange(n_lags)[:, None]
    keep = (s >= 1) & (s < first[None, :])
    taper = 1.0 - s / n_draws
    tau = 1.0 + 2.0 * np.sum(np.where(keep, taper * rho, 0.0), axis=0)
    return np.where(np.isfinite(rho[0]), tau, np.nan)


@numba.njit(cache=True, error_model="numpy")  # a constant chain: 0/0 is NaN, as in numpy
def _direct_mean_lag_sums(x, lags):
    """The mean over chains of Σ_t x_t x_{t+s} / Σ_t x_t², s = 0..lags−1, each chain of (chains, n, dim) centred at
    its own mean: (lags, dim), summed directly (n·lags products per chain and coordinate: cheaper than the FFT of
    :func:`_mean_lag_sums` for the first few lags)."""
    m, n, dim = x.shape
    out = np.zeros((lags, dim))
    series = np.empty(n)
    sums = np.empty(lags)
    for chain in range(m):
        for j in range(dim):
            mean = 0.0
            for t in range(n):
                mean += x[chain, t, j]
            mean /= n
            for t in range(n):
                series[t] = x[chain, t, j] - mean
            sums[:] = 0.0
            for t in range(n):
                value = series[t]
                for s in range(min(lags, n - t)):
                    sums[s] += value * series[t + s]
            for s in range(lags):
                out[s, j] += sums[s] / sums[0]
    return out / m


# The lags of ρ that integrated_autocorrelation_time sums directly, and the most it sums directly where ρ's decay
# predicts its first lag below the threshold by then; the coordinates whose ρ has not dropped below it get an FFT of
# all lags. Measured (CPU): a direct lag costs 0.15–0.3 ns per draw, the FFT 15–20 ns per draw; a user model's 20
# coordinates × 100,000 draws have their first lag below 0.05 near 20 (the FFT: 0.13 s), the double well's 1,000
# chains × 5,000 draws near 150 (the FFT: 0.07 s).
DIRECT_LAGS = 32
DIRECT_LAGS_MOST = 128
# The chain-length limits of ArviZ's bulk ESS: fewer draws per chain give NaN.
ESS_MIN_DRAWS = 4
# Numbers per block of chains and coordinates of the FFT of the lag sums (a block's padded draws; measured, 1,000
# chains × 5,000 draws: the FFT of all chains at once, 80 MB arrays, took 0.06 s reusing memory, 0.23 s in fresh
# memory).
FFT_BLOCK_NUMBERS = 2**19
# Coordinates per block of the bulk ESS (bounds the FFT's working memory to about this many numbers times 8).
ESS_BLOCK_NUMBERS = 2**22


def _rank_normal_scores(x: np.ndarray) -> np.ndarray:
    """Rank-normalised z-scores per column of ``x`` (N, k): average ranks r of ties (1-based), Blom's offset
    ``(r − 3/8)/(N + 1/4)`` and the standard normal quantile (ArviZ's ``_z_scale``: ``scipy.stats.rankdata(...,
    method="average")`` then ``scipy.stats.norm.ppf``, i.e. ``scipy.special.ndtri``). The ranks come from a sort of
    integer keys (:func:`_sorting_keys`; measured, 5·10⁶ draws: 0.05 s, against 0.25 s for numpy's argsort)."""
    n = x.shape[0]
    rows = np.ascontiguousarray(x.T)  # each column as a contiguous row
    bits = max(1, (n - 1).bit_length())  # the keys' low bits that hold a position 0..n−1
    keys = _sorting_keys(rows.view(np.uint64), bits)
    keys.sort(axis=1)
    scores = _average_ranks(rows, keys, bits)
    scores -= 3.0 / 8.0  # in place: the arrays are as large as the draws
    scores /= n - 2.0 * 3.0 / 8.0 + 1.0
    return ndtri(scores, out=scores).T


@numba.njit(cache=True)
def _sorting_keys(bits_of_rows, bits):
    """Keys (k, N) whose order along a row is the order of the values of ``bits_of_rows`` (k, N), their float64 bits,
    up to values that agree in all but their low ``bits`` bits; those low bits hold each entry's position. The float's
    bits map to an unsigned integer of the same order: the sign bit set for a value ≥ 0 (−0 read as +0), all bits
    flipped for one < 0."""
    k, n = bits_of_rows.shape
    sign = np.uint64(1) << np.uint64(63)
    shift = np.uint64(bits)
    keys = np.empty((k, n), dtype=np.uint64)
    for row in range(k):
        for i in range(n):
            unsigned = bits_of_rows[row, i]
            if unsigned == sign:  # −0
                unsigned = np.uint64(0)
            ordered = ~unsigned if unsigned & sign else unsigned | sign
            keys[row, i] = (ordered >> shift << shift) | np.uint64(i)
    return keys


@numba.njit(cache=True)
def _average_ranks(rows, keys, bits):
    """The 1-based rank of every entry of ``rows`` (k, N) in its row, ties given the average of their ranks
    (``scipy.stats.rankdata(..., method="average")``), from the row's :func:`_sorting_keys` sorted: an entry whose key
    agrees with no neighbour's above the low ``bits`` bits has the rank of its place; a run of keys that agree is put
    in order of value (insertion sort: such runs are short) and each run of equal values in it gets the average of
    their places. No NaN (the caller's)."""
    k, n = rows.shape
    shift = np.uint64(bits)
    mask = (np.uint64(1) << shift) - np.uint64(1)
    ranks = np.empty((k, n))
    values, positions = np.empty(n), np.empty(n, dtype=np.int64)
    for row in range(k):
        first = 0
        while first < n:
            prefix = keys[row, first] >> shift
            end = first + 1
            while end < n and keys[row, end] >> shift == prefix:
                end += 1
            if end == first + 1:
                ranks[row, np.int64(keys[row, first] & mask)] = first + 1.0
                first = end
                continue
            for i in range(end - first):  # the run's values in order
                position = np.int64(keys[row, first + i] & mask)
                value = rows[row, position]
                j = i - 1
                while j >= 0 and values[j] > value:
                    values[j + 1], positions[j + 1] = values[j], positions[j]
                    j -= 1
                values[j + 1], positions[j + 1] = value, position
            low = 0
            while low < end - first:
                high = low
                while high + 1 < end - first and values[high + 1] == values[low]:
                    high += 1
                rank = first + 0.5 * (low + high + 2)
                for i in range(low, high + 1):
                    ranks[row, positions[i]] = rank
                low = high + 1
            first = end
    return ranks


def _geyer_tau(z: np.ndarray, between: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """ArviZ's ``_ess`` on each coordinate of ``z`` (n_chains, n_draws, k): FFT autocovariances (divided by
    n_draws), ρ̂_t = 1 − (W − mean over chains of acov_t)/var⁺ with W the mean within-chain variance (ddof 1) and
    var⁺ = W (n−1)/n + the variance of the chain means (ddof 1, more than one chain); Geyer's initial positive
    sequence of pair sums P_0 = 1 + ρ̂_1, P_j = ρ̂_2j + ρ̂_2j+1 (stop after the first P_j ≤ 0, or at
    t = 2j − 1 ≥ n − 3), made monotone (each pair sum the minimum of those before it); τ̂ = −1 + 2 Σ_{j<J} P_j +
    ρ̂_2J (the last ρ̂ when positive or its pair sum was kept); τ̂ and its last lag 2J.
    ``between=False`` leaves the chain means' variance out of var⁺: ρ̂ is then each chain's own autocorrelation about
    its own mean (averaged over chains, each lag's products divided by their number n − t, not n), blind to chains that
    disagree: the within-chain τ̂."""
    m, n, k = z.shape
    chain_means = z.mean(axis=1)  # (m, k)
    mean_acov = _mean_lag_sums(z, 2 * n) / n  # (n, k): the mean over chains of ArviZ's autocov (padding to ≥ 2n)
    if not between:  # each lag's mean over its n − t products
        mean_acov = mean_acov * (n / (n - np.arange(n)))[:, None]
    mean_var = mean_acov[0] * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1 and between:
        var_plus = var_plus + np.var(chain_means, axis=0, ddof=1)
    rho = 1.0 - (mean_var - mean_acov) / var_plus  # ρ̂_t for t ≥ 1 (ρ̂_0 is set to 1)
    n_pairs = max((n - 3) // 2, 0) + 1  # pairs j = 0..J_max; J_max: the last j with 2j − 1 < n − 3
    j_max = n_pairs - 1
    pair_sums = np.empty((n_pairs, k))
    pair_sums[0] = 1.0 + rho[1]
    pair_sums[1:] = rho[2:2 * n_pairs:2] + rho[3:2 * n_pairs + 1:2]
    nonpositive = ~(pair_sums > 0.0)
    # J: the pairs after the first that ArviZ's loop looked at (up to the first P_j ≤ 0, at most J_max)
    stop = np.where(nonpositive.any(axis=0), np.argmax(nonpositive, axis=0), j_max)
    monotone = np.minimum.accumulate(pair_sums, axis=0)
    kept = np.arange(n_pairs)[:, None] < stop[None, :]
    columns = np.arange(k)
    last_rho = rho[2 * stop, columns]
    last_pair = pair_sums[stop, columns]
    last = np.where(stop == 0, 1.0, np.where((last_rho > 0.0) | (last_pair >= 0.0), last_rho, 0.0))
    return -1.0 + 2.0 * np.sum(np.where(kept, monotone, 0.0), axis=0) + last, 2 * stop


def _geyer_ess(z: np.ndarray) -> np.ndarray:
    """ArviZ's ``_ess`` on each coordinate of ``z`` (n_chains, n_draws, k): M/τ̂ (:func:`_geyer_tau`), τ̂ at least
    1/log10(n_chains n_draws)."""
    total = z.shape[0] * z.shape[1]
    return total / np.maximum(_geyer_tau(z)[0], 1.0 / np.log10(total))


def effective_sample_size(chains: np.ndarray) -> np.ndarray:
    """Bulk effective sample size per coordinate (SPEC §4.12 cross-check of τ): the rank-normalised split-chain ESS of
    Vehtari et al. (2021) as ``arviz.ess(..., method="bulk")`` computes it, in numpy (no ArviZ import; pinned to ArviZ
    in ``tests/diagnostics/test_autocorrelation.py``).

    Each chain is split into its first and last ⌊n/2⌋ draws (the middle draw of an odd n is dropped), the draws of
    all 2m halves are replaced by the normal scores of their ranks (:func:`_rank_normal_scores`), and Geyer's initial
    monotone sequence of the FFT autocorrelations gives τ̂ (:func:`_geyer_ess`). A coordinate whose scores are all
    equal (a constant chain) has ESS 2m⌊n/2⌋; one with a NaN, or chains of fewer than 4 draws, has NaN.

    Parameters
    ----------
    chains : ndarray, shape (n_chains, n_draws, dim)

    Returns
    -------
    ndarray, shape (dim,)
    """
    return rank_diagnostics(chains, tail=False, rhat=False)["ess_bulk"]


def rank_diagnostics(chains: np.ndarray, tail: bool = True, rhat: bool = True) -> dict[str, np.ndarray]:
    """Per coordinate (dim,), as ArviZ computes them (Vehtari et al. 2021), in numpy and sharing the split chains and
    their ranks: ``ess_bulk`` (:func:`effective_sample_size`); with ``tail``, ``ess_tail``, ``arviz.ess(...,
    method="tail")``: the least of the split-chain ESS of the indicators I(θ ≤ q) at the 5% and 95% quantiles q of all
    the draws (R's type 7, numpy's default), an indicator that never changes counting every split draw; with ``rhat``,
    ``rhat``, ``arviz.rhat(..., method="rank")``: the larger of the split R-hat √((B/W + n' − 1)/n') of the rank
    scores and of the rank scores of |θ − median| (n' = ⌊n/2⌋ draws a half, B = n' times the variance of the 2m
    halves' means, W their mean variance, both ddof 1), NaN for one chain or a constant coordinate, and
    ``rhat_excess``, the larger of each of the two over :func:`stationary_split_rhat` of its series. A coordinate with
    a NaN, or chains of fewer than 4 draws, has NaN throughout."""
    x = _as_chains(chains)
    n_chains, n_draws, dim = x.shape
    out = {"ess_bulk": np.full(dim, np.nan)}
    if tail:
        out["ess_tail"] = np.full(dim, np.nan)
    if rhat:
        out["rhat"] = np.full(dim, np.nan)
        out["rhat_excess"] = np.full(dim, np.nan)
    if n_draws < ESS_MIN_DRAWS:
        return out
    half = n_draws // 2
    valid = np.flatnonzero(~np.isnan(x).any(axis=(0, 1)))
    block = max(1, ESS_BLOCK_NUMBERS // (2 * n_chains * half))
    for begin in range(0, valid.size, block):
        columns = valid[begin:begin + block]
        chosen = x if columns.size == dim else x[:, :, columns]
        split = _split(chosen, half)
        z = _rank_normal_scores(split.reshape(-1, columns.size)).reshape(split.shape)
        out["ess_bulk"][columns] = _ess(z)
        if rhat and n_chains > 1:
            folded = np.abs(split - np.median(split, axis=(0, 1)))
            spread = _rank_normal_scores(folded.reshape(-1, columns.size)).reshape(split.shape)
            with np.errstate(divide="ignore", invalid="ignore"):
                values = _split_rhat(z), _split_rhat(spread)
                out["rhat"][columns] = np.maximum(*values)
                out["rhat_excess"][columns] = np.maximum(*(value / stationary_split_rhat(series)
                                                           for value, series in zip(values, (z, spread))))
        if tail:
            levels = np.quantile(chosen.reshape(-1, columns.size), [0.05, 0.95], axis=0)  # (2, k)
            out["ess_tail"][columns] = np.minimum(*(_ess(_split((chosen <= level).astype(float), half))
                                                    for level in levels))
    return out


def _split(x: np.ndarray, half: int) -> np.ndarray:
    """Each chain of (m, n, k) as its first and last ``half`` draws, (2m, half, k) (ArviZ's ``_split_chains``): a
    reshape without a copy where n = 2·half."""
    if x.shape[1] == 2 * half:
        return x.reshape(2 * x.shape[0], half, x.shape[2])
    return np.concatenate([x[:, :half], x[:, x.shape[1] - half:]], axis=0)


def _ess(z: np.ndarray) -> np.ndarray:
    """ArviZ's ``_ess`` on each coordinate of split chains (2m, n', k): every draw (2m·n') where a coordinate never
    changes, else :func:`_geyer_ess`."""
    ess = np.full(z.shape[2], float(z.shape[0] * z.shape[1]))
    changing = (z.max(axis=(0, 1)) - z.min(axis=(0, 1))) >= np.finfo(float).resolution
    if changing.any():
        ess[changing] = _geyer_ess(z if changing.all() else z[:, :, changing])
    return ess


# τ over a half-chain's draws beyond which stationary_split_rhat does not judge (under 10 effective draws a half). On
# stationary AR(1) chains its R-hat is within 0.5% of R-hat up to τ = 0.2 n' (100 or 1,000 chains; 2.5% at 0.27 n'
# and 100 chains), but judging up to 0.2 n' silenced the only warning of a run that is wrong: SGHMC + MH (its MH test
# not an exact correction with friction) on examples/exact_models.py's SmallScaleGaussian at its defaults, sds 10-22%
# narrow with R-hat 1.07 and τ = 0.13 n'
STATIONARY_RHAT_MAX_TAU_SHARE = 0.1
# the lags stationary_split_rhat sums: twice the lag where Geyer's sequence of the own-mean autocorrelations stops
# (they turn negative there, by v, while the true ones still carry about a tenth of τ), at most this share of n'
STATIONARY_RHAT_LAG_FACTOR, STATIONARY_RHAT_MAX_LAG_SHARE = 2, 0.45


def stationary_split_rhat(z: np.ndarray) -> np.ndarray:
    """The split R-hat (:func:`_split_rhat`) that chains at stationarity with the measured autocorrelation give, of
    split chains (2m, n', k): a half's mean then varies by v = σ²τ/n' about the common mean and its draws by σ² − v
    about their own, so B/W = τ/(1 − τ/n') and R̂ = √((τ/(1 − τ/n') + n' − 1)/n') (1 for independent draws, τ = 1).

    τ comes from each half's autocovariances about its own mean (averaged over the halves, each lag over its n' − t
    products), blind to halves that disagree: chains stuck apart (in different modes, or still near overdispersed
    starts) have a short τ about their own means, and so a stationary R̂ near 1 that their disagreement exceeds. About
    its own mean each lag's autocovariance is low by v, so the within-chain τ_w summed over the lags |t| ≤ T is
    τ_w = τ(1 − (2T + 1)/n')/(1 − τ/n'), and τ = τ_w/(1 − (2T + 1)/n' + τ_w/n'); T is twice the lag where Geyer's
    initial positive sequence of the own-mean autocorrelations stops (:func:`_geyer_tau` with ``between=False``: they
    turn negative there while the true ones still carry about a tenth of τ), at most 0.45 n'.

    With many short chains R̂ is above 1.01 at stationarity (τ = 43 in halves of 500 draws: 1.044), which measures each
    chain's Monte Carlo error, not whether the chains forgot their starts (Margossian et al. 2024, "Nested R̂", Bayesian
    Analysis): a run is judged by R̂ over this. NaN where τ > :data:`STATIONARY_RHAT_MAX_TAU_SHARE` n' (too few draws
    a half to judge)."""
    n = z.shape[1]
    tau = np.full(z.shape[2], np.nan)
    changing = (z.max(axis=(0, 1)) - z.min(axis=(0, 1))) >= np.finfo(float).resolution
    if changing.any():
        part = z[:, :, changing]
        _, geyer_lag = _geyer_tau(part, between=False)
        lag = np.minimum(STATIONARY_RHAT_LAG_FACTOR * geyer_lag, int(STATIONARY_RHAT_MAX_LAG_SHARE * n))
        acov = _mean_lag_sums(part, 2 * n) / (n - np.arange(n))[:, None]  # about each half's own mean, (n', k)
        summed = np.cumsum(acov[1:], axis=0)[np.maximum(lag - 1, 0), np.arange(lag.size)] * (lag > 0)
        within = 1.0 + 2.0 * summed / acov[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            tau[changing] = within / (1.0 - (2.0 * lag + 1.0) / n + within / n)
    share = np.where((tau > 0) & (tau <= STATIONARY_RHAT_MAX_TAU_SHARE * n), tau / n, np.nan)
    return np.sqrt((share * n / (1.0 - share) + n - 1.0) / n)


def _split_rhat(z: np.ndarray) -> np.ndarray:
    """ArviZ's ``_rhat`` of each coordinate of split chains (2m, n', k): √((B/W + n' − 1)/n')."""
    n = z.shape[1]
    between = n * np.var(z.mean(axis=1), axis=0, ddof=1)
    within = np.var(z, axis=1, ddof=1).mean(axis=0)
    return np.sqrt((between / within + n - 1.0) / n)


def split_rhat(chains: np.ndarray) -> np.ndarray:
    """R-hat per coordinate as ``arviz.rhat`` computes it (its default ``method="rank"``), in numpy
    (:func:`rank_diagnostics`; pinned to ArviZ in ``tests/diagnostics/test_autocorrelation.py``).

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
    return rank_diagnostics(chains, tail=False)["rhat"]
