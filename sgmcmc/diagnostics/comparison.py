"""Verdicts from the spread (SPEC §4.15): "A below B" only when the difference of the means exceeds
``threshold`` (default 2) combined standard errors over seeds (or chains); otherwise "tie".

The combined standard error of mean(a) − mean(b) is √(s_a²/n_a + s_b²/n_b) with s the sample standard
deviation (ddof 1); for paired values (the same seeds on both sides) it is s_d/√n of the differences; against a fixed value
without a spread (a published number with no error bar) it is s_a/√n.
With fewer than two values on a side there is no spread, and the verdict is "tie".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

TIE_THRESHOLD = 2.0


@dataclass(frozen=True)
class Comparison:
    """mean(a) − mean(b), its combined standard error, and the verdict for a: "below", "above" or "tie"."""

    difference: float
    standard_error: float
    verdict: str
    threshold: float = TIE_THRESHOLD

    @property
    def z(self) -> float:
        """The difference in combined standard errors: nan without a spread (fewer than 2 values), ±inf (or 0) when
        every value on each side is the same (a spread of zero)."""
        if math.isnan(self.standard_error):
            return math.nan
        if self.standard_error == 0:
            return 0.0 if self.difference == 0 else math.copysign(math.inf, self.difference)
        return self.difference / self.standard_error

    def sentence(self, a: str, b: str, digits: int = 3) -> str:
        """E.g. "SGHMC vs SGLD: tie (difference +0.8 ± 10.4, 0.1 combined s.e.)"."""
        word = {"below": f"{a} below {b}", "above": f"{a} above {b}", "tie": "tie"}[self.verdict]
        if math.isnan(self.standard_error):
            return f"{a} vs {b}: {word} (difference {self.difference:+.{digits}g}; no spread: fewer than 2 values)"
        if self.standard_error == 0:
            return f"{a} vs {b}: {word} (difference {self.difference:+.{digits}g}; every value the same on each side)"
        return (f"{a} vs {b}: {word} (difference {self.difference:+.{digits}g} ± {self.standard_error:.{digits}g}, "
                f"{abs(self.z):.1f} combined s.e.)")


def _verdict(difference: float, standard_error: float, threshold: float) -> str:
    if not standard_error >= 0 or math.isnan(difference):
        return "tie"
    if abs(difference) > threshold * standard_error:
        return "below" if difference < 0 else "above"
    return "tie"


def compare(a, b, threshold: float = TIE_THRESHOLD) -> Comparison:
    """Compare independent values ``a`` and ``b`` (e.g. one per seed): Welch's combined standard error."""
    a = np.asarray(a, dtype=float).ravel()
    b = np.asarray(b, dtype=float).ravel()
    if a.size < 2 or b.size < 2:
        return Comparison(float(a.mean() - b.mean()), math.nan, "tie", threshold)
    return compare_means(a.mean(), a.std(ddof=1), a.size, b.mean(), b.std(ddof=1), b.size, threshold)


def compare_means(mean_a: float, sd_a: float, n_a: int, mean_b: float, sd_b: float, n_b: int,
                  threshold: float = TIE_THRESHOLD) -> Comparison:
    """:func:`compare` from summaries: means, sample sds (ddof 1) and counts of two independent groups (e.g. a
    run's mean and sd over its chains, where only those were kept)."""
    difference = float(mean_a - mean_b)
    if n_a < 2 or n_b < 2:
        return Comparison(difference, math.nan, "tie", threshold)
    error = math.sqrt(sd_a**2 / n_a + sd_b**2 / n_b)
    return Comparison(difference, error, _verdict(difference, error, threshold), threshold)


def compare_paired(a, b, threshold: float = TIE_THRESHOLD) -> Comparison:
    """Compare values paired by position (the same seeds on both sides): the standard error of the mean difference."""
    differences = np.asarray(a, dtype=float).ravel() - np.asarray(b, dtype=float).ravel()
    difference = float(differences.mean())
    if differences.size < 2:
        return Comparison(difference, math.nan, "tie", threshold)
    error = float(differences.std(ddof=1) / math.sqrt(differences.size))
    return Comparison(difference, error, _verdict(difference, error, threshold), threshold)


def compare_to_value(a, value: float, threshold: float = TIE_THRESHOLD) -> Comparison:
    """Compare values ``a`` (e.g. one per seed) with a fixed ``value`` that has no spread of its own (a published
    number without an error bar): the standard error is that of mean(a), s_a/√n."""
    a = np.asarray(a, dtype=float).ravel()
    difference = float(a.mean() - value)
    if a.size < 2:
        return Comparison(difference, math.nan, "tie", threshold)
    error = float(a.std(ddof=1) / math.sqrt(a.size))
    return Comparison(difference, error, _verdict(difference, error, threshold), threshold)
