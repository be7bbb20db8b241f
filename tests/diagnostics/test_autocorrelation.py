"""Autocorrelation, τ, ESS and R-hat (SPEC §3 "Autocorrelation time", §4.12) against independent truths.

The truth is the stationary AR(1) chain x_t = φ x_{t−1} + √(1−φ²) e_t (e_t iid N(0, 1), x_0 ~ N(0, 1)), whose
autocorrelation is ρ_s = φ^s exactly, so that

* the untruncated integrated autocorrelation time is τ = 1 + 2 Σ_{s≥1} φ^s = (1 + φ)/(1 − φ) (textbook), and an
  ideal ESS of N draws is N/τ = N(1 − φ)/(1 + φ);
* SPEC §3's estimator, τ = 1 + 2 Σ_{s=1}^{S} (1 − s/L) ρ_s truncated before the first lag with ρ_s < 0.05, has
  for ρ_s = φ^s the closed form of :func:`tau_truncated_ar1` (geometric sums; S from logarithms, no loop).

Tolerances come from the Monte Carlo error of the estimate: var(τ̂) ≈ 2(2M + 1)τ²/N for a window of M lags and
N draws (Madras & Sokal 1988; Sokal 1997, Eq. 3.19), four standard errors each, with a fixed seed. They are a few
per cent, so a factor-2 error (τ = 1 + Σρ without the 2, τ doubled, ESS of one chain instead of all, aucTime.m's
ρ-less sum) fails by far.
"""

import importlib
import math

import numpy as np
import pytest
from scipy import signal
from scipy.special import ndtri
from scipy.stats import rankdata

from sgmcmc.diagnostics import autocorrelation, effective_sample_size, integrated_autocorrelation_time, split_rhat
from sgmcmc.diagnostics.autocorrelation import rank_diagnostics, stationary_split_rhat

THRESHOLD = 0.05  # SPEC §3: truncate at the first lag with ρ_s < 0.05


def ar1(rng, phi, n_chains, n_draws, dim=1):
    """Stationary AR(1) chains (n_chains, n_draws, dim), ρ_s = φ^s, unit variance."""
    e = rng.standard_normal((n_chains, n_draws, dim))
    u = np.sqrt(1.0 - phi**2) * e
    u[:, 0, :] = e[:, 0, :]  # start in the stationary N(0, 1)
    return signal.lfilter([1.0], [1.0, -phi], u, axis=1)


def tau_ar1(phi):
    """Untruncated τ = (1 + φ)/(1 − φ) of AR(1)."""
    return (1.0 + phi) / (1.0 - phi)


def tau_truncated_ar1(phi, n_draws, threshold=THRESHOLD):
    """SPEC §3's τ for the exact ρ_s = φ^s, in closed form; returns (τ, S).

    The first lag with φ^s < threshold is s* = ⌊log(threshold)/log φ⌋ + 1, so S = s* − 1, and with
    G = Σ_{s=1}^{S} φ^s = φ(1 − φ^S)/(1 − φ) and K = Σ_{s=1}^{S} s φ^s = φ(1 − (S+1)φ^S + Sφ^{S+1})/(1 − φ)²,
    τ = 1 + 2(G − K/L)."""
    ratio = math.log(threshold) / math.log(phi)
    assert abs(ratio - round(ratio)) > 0.1, "φ^s too close to the threshold: the truncation lag would be random"
    S = math.floor(ratio)
    G = phi * (1.0 - phi**S) / (1.0 - phi)
    K = phi * (1.0 - (S + 1) * phi**S + S * phi ** (S + 1)) / (1.0 - phi) ** 2
    return 1.0 + 2.0 * (G - K / n_draws), S


def sokal_se(tau, window, n_total):
    """Standard error of an integrated autocorrelation time summed over ``window`` lags from ``n_total`` draws:
    √(2(2M + 1)/N)·τ (Madras–Sokal)."""
    return tau * math.sqrt(2.0 * (2 * window + 1) / n_total)


def test_closed_forms_agree_with_direct_sums():
    """The closed forms above against the plain sums (so the truth itself is checked)."""
    for phi, n_draws in ((0.9, 5000), (0.75, 20000), (0.5, 40)):
        tau, S = tau_truncated_ar1(phi, n_draws)
        assert phi**S >= THRESHOLD > phi ** (S + 1)
        direct = 1.0 + 2.0 * sum((1.0 - s / n_draws) * phi**s for s in range(1, S + 1))
        assert tau == pytest.approx(direct, rel=1e-12)
        assert tau_ar1(phi) == pytest.approx(1.0 + 2.0 * sum(phi**s for s in range(1, 10_000)), rel=1e-12)
    assert tau_truncated_ar1(0.9, 5000)[1] == 28  # 0.9^28 = 0.052, 0.9^29 = 0.047


def test_autocorrelation_matches_brute_force():
    """ρ_s of :func:`autocorrelation` (FFT) against the double loop of its documented estimator."""
    rng = np.random.default_rng(20)
    x = rng.standard_normal((3, 50, 2)).cumsum(axis=1)
    rho = autocorrelation(x)
    assert rho.shape == (50, 2)
    n = x.shape[1]
    expected = np.zeros((n, 2))
    for c in range(3):
        for d in range(2):
            y = x[c, :, d] - x[c, :, d].mean()
            c0 = y @ y / n
            for s in range(n):
                expected[s, d] += (y[: n - s] @ y[s:] / (n - s)) / c0 / 3
    np.testing.assert_allclose(rho, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rho[0], 1.0)


def test_autocorrelation_of_ar1_is_phi_to_the_s():
    """ρ̂_s → φ^s; the error of ρ̂_s is √(var/N) with Bartlett's var = (1+φ²)(1−φ^{2s})/(1−φ²) − 2sφ^{2s}."""
    rng = np.random.default_rng(25)
    phi, n_chains, n_draws = 0.75, 100, 20_000
    rho = autocorrelation(ar1(rng, phi, n_chains, n_draws))[:, 0]
    s = np.arange(1, 21)
    bartlett = (1 + phi**2) * (1 - phi ** (2 * s)) / (1 - phi**2) - 2 * s * phi ** (2 * s)
    se = np.sqrt(bartlett / (n_chains * n_draws))
    assert np.all(np.abs(rho[s] - phi**s) < 4.5 * se), np.max(np.abs(rho[s] - phi**s) / se)


def test_tau_formula_and_truncation_on_estimated_rho():
    """τ̂ equals 1 + 2 Σ_{s=1}^{S} (1 − s/L) ρ̂_s with S the last lag before the first ρ̂_s < 0.05, recomputed
    here from the (brute-force-checked) ρ̂ by a plain loop. Short chains, so the taper (1 − s/L) matters; the third
    coordinate is a noisy cosine of period 8 whose ρ̂ rises above the threshold again after its first drop, and
    those later lags must not count."""
    rng = np.random.default_rng(26)
    n_chains, L = 30, 40
    phase = rng.uniform(0, 2 * np.pi, (n_chains, 1))
    wave = np.cos(2 * np.pi * np.arange(L) / 8 + phase) + 0.3 * rng.standard_normal((n_chains, L))
    x = np.concatenate([ar1(rng, 0.8, n_chains, L, dim=2), wave[:, :, None]], axis=2)
    rho = autocorrelation(x)
    per_coordinate = []
    for d in range(3):
        total, s = 1.0, 1
        while s < L and rho[s, d] >= THRESHOLD:
            total += 2.0 * (1.0 - s / L) * rho[s, d]
            s += 1
        per_coordinate.append(total)
        if d == 2:
            assert s <= 3 and np.any(rho[s + 1 :, d] >= THRESHOLD)  # later lags above the threshold exist
    assert integrated_autocorrelation_time(x) == pytest.approx(np.mean(per_coordinate), rel=1e-12)
    assert integrated_autocorrelation_time(x[:, :, 2:]) == pytest.approx(per_coordinate[2], rel=1e-12)
    assert integrated_autocorrelation_time(x, threshold=1.1) == 1.0  # every ρ̂_1 < 1.1: S = 0


def test_tau_ar1_closed_form():
    """τ̂ of 100 × 20,000 draws of AR(1) with φ = 0.75 against the closed-form truncated τ (S = 10,
    φ^10 = 0.056 and φ^11 = 0.042, ≥ 4 standard errors of ρ̂ from the threshold, so S is not random), within four
    Madras–Sokal standard errors (≈ 0.03 here, 0.5 %). The centring bias of ρ̂ (≈ τ/L per lag, ≈ 0.007 in τ) is
    below a quarter of one standard error."""
    rng = np.random.default_rng(21)
    phi, n_chains, n_draws = 0.75, 100, 20_000
    expected, S = tau_truncated_ar1(phi, n_draws)
    assert S == 10 and expected == pytest.approx(6.662, abs=1e-3)  # below the untruncated τ = 7 by the tail
    se = sokal_se(expected, S, n_chains * n_draws)
    tau = integrated_autocorrelation_time(ar1(rng, phi, n_chains, n_draws))
    assert abs(tau - expected) < 4 * se, (tau, expected, se)
    # The tolerance is tight: the usual factor-2 slips are far outside it.
    assert 4 * se < 0.05 * expected
    assert abs((1 + (expected - 1) / 2) - expected) > 10 * se  # τ = 1 + Σρ (the 2 forgotten)
    assert abs(1 + 2 * S - expected) > 10 * se  # aucTime.m: 2(1 − s/L) per lag without ρ_s


def test_tau_iid_and_coordinate_average():
    """iid draws: ρ̂_1 ≈ 0 < 0.05, so τ̂ = 1 exactly; a second coordinate AR(1) with φ = 0.5 (S = 4, φ^4 = 0.0625,
    φ^5 = 0.031, each > 4 standard errors of ρ̂ from the threshold): τ̂ is the average of the closed forms,
    within four Madras–Sokal standard errors of the AR(1) coordinate halved."""
    rng = np.random.default_rng(22)
    n_chains, n_draws = 50, 4000
    iid = rng.standard_normal((n_chains, n_draws, 1))
    assert integrated_autocorrelation_time(iid) == 1.0
    x = np.concatenate([iid, ar1(rng, 0.5, n_chains, n_draws)], axis=2)
    tau_half, S = tau_truncated_ar1(0.5, n_draws)
    assert S == 4
    expected = 0.5 * (1.0 + tau_half)
    se = 0.5 * sokal_se(tau_half, S, n_chains * n_draws)
    assert abs(integrated_autocorrelation_time(x) - expected) < 4 * se


def test_ess_iid():
    """iid draws: ESS = N (window of a few lags: relative standard error ≈ √(2·(2·5+1)/N) ≈ 2.6 % at N = 32,000)."""
    rng = np.random.default_rng(23)
    x = rng.standard_normal((8, 4000, 3))
    ess = effective_sample_size(x)
    assert ess.shape == (3,)
    n_total = x.shape[0] * x.shape[1]
    np.testing.assert_allclose(ess, n_total, rtol=4 * sokal_se(1.0, 5, n_total))


def test_ess_ar1_textbook():
    """ESS of AR(1) chains against the textbook N(1 − φ)/(1 + φ) (φ = 0.9: N/19; φ = 0.5: N/3), per coordinate.

    ArviZ's bulk ESS (Geyer's initial monotone sequence, no 0.05 cut-off) estimates the untruncated τ; its window
    is at most a few τ, so M = 5τ bounds the Madras–Sokal error from above: 4 standard errors are 8.7 % (φ = 0.9)
    and 3.5 % (φ = 0.5) at N = 8×10⁵. (SPEC §3's truncated τ would be 18.06 for φ = 0.9, 5 % lower.)"""
    rng = np.random.default_rng(27)
    n_chains, n_draws = 40, 20_000
    phis = np.array([0.9, 0.5])
    x = np.concatenate([ar1(rng, phi, n_chains, n_draws) for phi in phis], axis=2)
    n_total = n_chains * n_draws
    ess = effective_sample_size(x)
    assert ess.shape == (2,)
    for k, phi in enumerate(phis):
        tau = tau_ar1(phi)
        expected = n_total / tau
        rel_tolerance = 4 * sokal_se(tau, math.ceil(5 * tau), n_total) / tau
        assert rel_tolerance < 0.1
        assert ess[k] == pytest.approx(expected, rel=rel_tolerance), (phi, ess[k], expected)
    # about 420 for the old 4 × 2,000 draws with φ = 0.9 (the review's number)
    assert 8000 / tau_ar1(0.9) == pytest.approx(421.05, abs=0.01)




# -- the numpy bulk ESS against ArviZ's ----------------------------------------------------------------------------
def arviz_bulk_ess(x):
    """``arviz.ess(..., method="bulk")`` per coordinate of (n_chains, n_draws, dim), as the run used to compute it."""
    import logging
    import warnings

    logging.getLogger("arviz").setLevel(logging.ERROR)  # its NaN and shape warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", UserWarning)  # "More chains than draws": the shape is meant
        import arviz as az

        return np.asarray(az.ess(az.convert_to_dataset({"x": x}), method="bulk")["x"].values, dtype=float).reshape(-1)


def bulk_ess_cases():
    rng = np.random.default_rng(30)
    for n_chains in (1, 2, 4, 10):
        for n_draws in (4, 5, 7, 10, 51, 400):  # odd lengths drop the middle draw of each chain
            yield f"ar1 {n_chains}x{n_draws}", np.concatenate(
                [ar1(rng, phi, n_chains, n_draws) for phi in (0.0, 0.5, 0.9, 0.99, -0.6)], axis=2)
            yield f"walk {n_chains}x{n_draws}", rng.standard_normal((n_chains, n_draws, 2)).cumsum(axis=1)
            yield f"ties {n_chains}x{n_draws}", rng.integers(0, 3, (n_chains, n_draws, 2)).astype(float)
            shifted = rng.standard_normal((n_chains, n_draws, 1)) + 2.0 * np.arange(n_chains)[:, None, None]
            yield f"shifted chains {n_chains}x{n_draws}", shifted
            yield f"constant {n_chains}x{n_draws}", np.full((n_chains, n_draws, 1), 2.5)
    x = rng.standard_normal((3, 40, 4))
    x[1, 5, 1], x[0, 0, 2], x[2, 3, 3] = np.nan, np.inf, -np.inf
    yield "nan and inf", x
    yield "3 draws", rng.standard_normal((4, 3, 2))


def test_bulk_ess_is_arvizs():
    """The numpy rank-normalised split-chain ESS equals ArviZ's ``ess(method="bulk")`` to 1e-10 relative: chain
    counts 1..10, odd and even lengths down to ArviZ's minimum of 4 draws, AR(1) with φ from −0.6 to 0.99 (short
    chains stop Geyer's sequence at its length limit, long ones at a negative pair), random walks, ties (average
    ranks), chains at different levels, constant chains (ESS = 2m⌊n/2⌋), a NaN (NaN) and infinities (ranked), and
    too few draws (NaN)."""
    count = 0
    for name, x in bulk_ess_cases():
        expected, ess = arviz_bulk_ess(x), effective_sample_size(x)
        assert ess.shape == expected.shape, name
        np.testing.assert_array_equal(np.isnan(ess), np.isnan(expected), err_msg=name)
        np.testing.assert_allclose(ess, expected, rtol=1e-10, atol=0, equal_nan=True, err_msg=name)
        count += 1
    assert count == 4 * 6 * 5 + 2
    assert effective_sample_size(np.full((4, 11, 1), 1.0))[0] == 4 * 2 * 5


def arviz_diagnostic(x, function, **options):
    """``arviz.<function>(..., **options)`` per coordinate of (n_chains, n_draws, dim)."""
    import logging
    import warnings

    logging.getLogger("arviz").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # its NaN, shape and division warnings: the cases mean them
        import arviz as az

        dataset = az.convert_to_dataset({"x": x})
        return np.asarray(getattr(az, function)(dataset, **options)["x"].values, dtype=float).reshape(-1)


@pytest.mark.parametrize("function, options, key", [("ess", {"method": "tail"}, "ess_tail"),
                                                    ("rhat", {}, "rhat")])
def test_tail_ess_and_rank_rhat_are_arvizs(function, options, key):
    """``rank_diagnostics``' tail ESS and rank R-hat equal ArviZ's ``ess(method="tail")`` and ``rhat()`` to 1e-10
    relative on the bulk ESS's cases (one chain: R-hat NaN; constant coordinates: tail ESS every split draw, R-hat
    NaN), and their NaN where ArviZ's are."""
    count = 0
    for name, x in bulk_ess_cases():
        expected = arviz_diagnostic(x, function, **options)
        with np.errstate(all="ignore"):
            got = rank_diagnostics(x)[key]
        np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), err_msg=name)
        np.testing.assert_allclose(got, expected, rtol=1e-10, atol=0, equal_nan=True, err_msg=name)
        count += 1
    assert count == 4 * 6 * 5 + 2


def test_rhat_tells_mixed_chains_from_shifted_ones():
    rng = np.random.default_rng(24)
    x = rng.standard_normal((4, 1000, 2))
    r = split_rhat(x)
    assert r.shape == (2,)
    np.testing.assert_allclose(r, 1.0, atol=0.01)
    x[0] += 3.0
    assert np.all(split_rhat(x) > 1.1)
    spread = rng.standard_normal((4, 1000, 1)) * np.array([1.0, 1.0, 1.0, 3.0])[:, None, None]
    assert split_rhat(spread)[0] > 1.05  # one chain three times as wide: the folded draws' R-hat sees it


def test_many_short_stationary_chains_have_the_rhat_of_their_length_and_chains_apart_exceed_it():
    """1,000 stationary AR(1) chains of 1,000 draws, τ = (1 + φ)/(1 − φ) = 43.4 (the default run's): R-hat is 1.04 (its
    halves are short, not apart), and the stationary R-hat of their measured autocorrelation is the closed form
    √((τ/(1 − τ/n') + n' − 1)/n') at the true τ within 0.3% (a τ half the truth is 2% off), so that R-hat over it is
    below 1.01; the halves' τ taken about their own means with no bias correction (τ_w, 14% low) leaves R-hat 1.01
    above it. Half the chains shifted by +0.3 sd, half by −0.3 (stuck apart): 1.01 above. Four long chains with two
    shifted: as far above as R-hat itself (their stationary R-hat is 1). Chains of τ over a tenth of a half's draws:
    not judged (NaN)."""
    rng = np.random.default_rng(5)
    phi, half = 0.955, 500
    x = ar1(rng, phi, 1000, 2 * half, 2)
    ranks = rank_diagnostics(x)
    assert np.all(ranks["rhat"] > 1.03) and np.all(ranks["rhat_excess"] < 1.01)
    tau = tau_ar1(phi)
    exact = math.sqrt((tau / (1.0 - tau / half) + half - 1.0) / half)
    z = x.reshape(2000, half, 2)  # the split halves (the raw draws: an AR(1)'s ranks have nearly its τ)
    np.testing.assert_allclose(stationary_split_rhat(z), exact, rtol=0.003)
    apart = x + np.where(np.arange(1000) < 500, 0.3, -0.3)[:, None, None]
    assert np.all(rank_diagnostics(apart)["rhat_excess"] > 1.01)
    long = ar1(rng, 0.5, 4, 4000, 1) + np.array([0.2, 0.2, -0.2, -0.2])[:, None, None]
    long_ranks = rank_diagnostics(long)
    np.testing.assert_allclose(long_ranks["rhat_excess"], long_ranks["rhat"], rtol=2e-3)
    assert np.all(np.isnan(rank_diagnostics(ar1(rng, 0.97, 100, 1000, 1))["rhat_excess"]))  # τ = 66 > 50


def test_bulk_ess_in_blocks_of_coordinates(monkeypatch):
    """Many coordinates are done in blocks (bounded memory): the same numbers as in one block."""
    import importlib

    module = importlib.import_module("sgmcmc.diagnostics.autocorrelation")  # the package's name is the function
    rng = np.random.default_rng(31)
    x = np.concatenate([ar1(rng, 0.8, 4, 60, dim=5), np.full((4, 60, 1), 1.0), ar1(rng, 0.3, 4, 60, dim=4)], axis=2)
    x[0, 0, 2] = np.nan
    whole = effective_sample_size(x)
    monkeypatch.setattr(module, "ESS_BLOCK_NUMBERS", 3 * 4 * 60)  # 3 coordinates a block
    np.testing.assert_array_equal(effective_sample_size(x), whole)
    np.testing.assert_allclose(whole, arviz_bulk_ess(x), rtol=1e-10, equal_nan=True)


# -- the ranks' integer-key sort against scipy ---------------------------------------------------------------------
def rank_cases():
    rng = np.random.default_rng(40)
    yield "normal", rng.standard_normal((1000, 3))
    yield "ties", np.round(rng.standard_normal((500, 2)), 1)
    yield "constant", np.full((7, 1), -2.0)
    yield "one and two draws", rng.standard_normal((1, 1)), rng.standard_normal((2, 3))
    special = rng.standard_normal((300, 2))
    for value, fraction in ((np.inf, 0.1), (-np.inf, 0.1), (0.0, 0.1), (-0.0, 0.1)):  # −0 ties with +0
        special[rng.random(special.shape) < fraction] = value
    yield "infinities and signed zeros", special
    # values that differ in their last bits only (the keys' low bits hold positions: these runs are ordered by value)
    yield "last bits", 1.0 + rng.integers(0, 40, (2000, 2)) * 2.0**-52, -3.0 - rng.integers(0, 5, (100, 1)) * 2.0**-50
    yield "tiny", rng.integers(0, 3, (200, 1)) * 5e-324


def test_rank_normal_scores_are_scipys():
    """The rank-normal scores are ``ndtri((rankdata(..., "average") − 3/8)/(N + 1/4))`` bit for bit (ArviZ's
    ``_z_scale``): ties, infinities, ±0, values equal but for their last bits, one and two draws."""
    module = importlib.import_module("sgmcmc.diagnostics.autocorrelation")  # the package's name is the function
    for name, *arrays in rank_cases():
        for x in arrays:
            expected = ndtri((rankdata(x, axis=0, method="average") - 3.0 / 8.0) / (x.shape[0] + 1.0 / 4.0))
            np.testing.assert_array_equal(module._rank_normal_scores(x), expected, err_msg=name)


def test_bulk_ess_is_arvizs_on_many_draws():
    """Many chains and draws, with ties and values equal but for their last bits: ArviZ's bulk ESS to 1e-10."""
    rng = np.random.default_rng(41)
    x = np.concatenate([ar1(rng, 0.9, 50, 2001), np.round(ar1(rng, 0.5, 50, 2001), 1),
                        1.0 + np.round(ar1(rng, 0.7, 50, 2001) * 4) * 2.0**-52], axis=2)
    np.testing.assert_allclose(effective_sample_size(x), arviz_bulk_ess(x), rtol=1e-10)


def test_autocorrelation_matches_brute_force_across_shapes():
    """ρ_s against the documented estimator's double loop on 1..5 chains, 2..60 draws, with a constant chain (NaN)."""
    rng = np.random.default_rng(42)
    for n_chains, n_draws, dim in ((1, 2, 1), (2, 3, 2), (5, 60, 3), (4, 17, 1)):
        x = rng.standard_normal((n_chains, n_draws, dim)).cumsum(axis=1)
        expected = np.zeros((n_draws, dim))
        for c in range(n_chains):
            for d in range(dim):
                y = x[c, :, d] - x[c, :, d].mean()
                for s in range(n_draws):
                    expected[s, d] += (y[: n_draws - s] @ y[s:] / (n_draws - s)) / (y @ y / n_draws) / n_chains
        np.testing.assert_allclose(autocorrelation(x), expected, rtol=1e-9, atol=1e-12)
    x = rng.standard_normal((3, 20, 2))
    x[1, :, 0] = 4.0
    rho = autocorrelation(x)
    assert np.all(np.isnan(rho[:, 0])) and np.all(np.isfinite(rho[:, 1]))


def test_lag_sums_in_blocks_of_chains(monkeypatch):
    """The FFT runs over a few chains at a time: the same ρ and ESS as over all chains at once."""
    module = importlib.import_module("sgmcmc.diagnostics.autocorrelation")
    x = ar1(np.random.default_rng(43), 0.8, 7, 100, dim=2)
    whole_rho, whole_ess = autocorrelation(x), effective_sample_size(x)
    monkeypatch.setattr(module, "FFT_BLOCK_NUMBERS", 3 * 200)  # 3 chains or 1 coordinate a block (200 padded)
    np.testing.assert_allclose(autocorrelation(x), whole_rho, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(effective_sample_size(x), whole_ess, rtol=1e-12)


def test_tau_from_direct_lags_is_the_ffts():
    """τ from the first lags summed directly (one or two rounds) or, where ρ decays slowly, from the FFT of all lags:
    the number that the FFT's ρ of every lag gives, to rounding; a constant coordinate gives NaN."""
    module = importlib.import_module("sgmcmc.diagnostics.autocorrelation")
    rng = np.random.default_rng(44)
    for phi, n_chains, n_draws in ((0.1, 3, 500), (0.95, 2, 4000), (0.97, 4, 3000), (0.995, 2, 3000), (0.5, 2, 5)):
        x = np.concatenate([ar1(rng, phi, n_chains, n_draws, dim=2), ar1(rng, 0.3, n_chains, n_draws)], axis=2)
        expected = np.mean(module._truncated_tau(autocorrelation(x), n_draws, THRESHOLD))
        assert integrated_autocorrelation_time(x) == pytest.approx(expected, rel=1e-12), phi
    x = ar1(rng, 0.5, 3, 100, dim=2)
    x[:, :, 1] = 2.0
    assert np.isnan(integrated_autocorrelation_time(x))
