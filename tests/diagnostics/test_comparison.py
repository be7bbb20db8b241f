"""Verdicts from the spread (SPEC §4.15) against hand-computed standard errors."""

import math

import pytest

from sgmcmc.diagnostics.comparison import compare, compare_means, compare_paired, compare_to_value


def test_welch_standard_error_by_hand():
    # a: mean 2, sample variance 1; b: mean 5, sample variance 4 -> s.e. sqrt(1/3 + 4/3) = sqrt(5/3)
    result = compare([1.0, 2.0, 3.0], [3.0, 5.0, 7.0])
    assert result.difference == pytest.approx(-3.0)
    assert result.standard_error == pytest.approx(math.sqrt(5.0 / 3.0))
    assert result.verdict == "below"  # 3 > 2 * 1.29


def test_a_difference_inside_two_standard_errors_is_a_tie():
    # the recipe-fig3 case of issue 16: 2426.3 vs 2425.5 with seed sd 8-16 is a tie, not "below"
    sghmc, sgld = [2407.0, 2434.0, 2436.0], [2433.0, 2418.0, 2428.0]
    result = compare(sghmc, sgld)
    assert result.verdict == "tie"
    assert "tie" in result.sentence("SGHMC", "SGLD")


def test_above_and_threshold():
    assert compare([10.0, 11.0], [1.0, 2.0]).verdict == "above"
    # difference 1, s.e. sqrt(0.5/2 + 0.5/2) = 0.707: 1.41 s.e. -> tie at 2, "above" at 1
    assert compare([1.0, 2.0], [0.0, 1.0]).verdict == "tie"
    assert compare([1.0, 2.0], [0.0, 1.0], threshold=1.0).verdict == "above"


def test_one_value_has_no_spread_and_is_a_tie():
    result = compare([1.0], [100.0, 101.0])
    assert result.verdict == "tie" and math.isnan(result.standard_error)
    assert "no spread" in result.sentence("A", "B")


def test_paired_uses_the_spread_of_the_differences():
    # differences 1, 2, 3: mean 2, s.e. 1/sqrt(3) -> below/above decided by 2 / 0.577 = 3.5 s.e.
    result = compare_paired([11.0, 22.0, 33.0], [10.0, 20.0, 30.0])
    assert result.difference == pytest.approx(2.0)
    assert result.standard_error == pytest.approx(1.0 / math.sqrt(3.0))
    assert result.verdict == "above"
    # unpaired, the same numbers are a tie: the seed-to-seed spread swamps the difference
    assert compare([11.0, 22.0, 33.0], [10.0, 20.0, 30.0]).verdict == "tie"


def test_against_a_fixed_value_uses_the_standard_error_of_the_mean():
    """Values 0.70, 0.72, 0.74 against 0.76: mean 0.72, s = 0.02, s.e. = 0.02/√3 = 0.01155; difference −0.04 is
    3.5 s.e. ("below"); against 0.73 it is −0.87 s.e. ("tie")."""
    below = compare_to_value([0.70, 0.72, 0.74], 0.76)
    assert below.difference == pytest.approx(-0.04) and below.standard_error == pytest.approx(0.02 / math.sqrt(3))
    assert below.verdict == "below"
    assert compare_to_value([0.70, 0.72, 0.74], 0.73).verdict == "tie"
    assert compare_to_value([0.70], 0.5).verdict == "tie"


def test_compare_means_is_compare_from_summaries():
    """Means 1.0 and 0.5, sds 0.2 and 0.3, n 4 and 9: s.e. = √(0.04/4 + 0.09/9) = √0.02 = 0.1414; z = 3.54."""
    result = compare_means(1.0, 0.2, 4, 0.5, 0.3, 9)
    assert result.standard_error == pytest.approx(math.sqrt(0.02)) and result.verdict == "above"
    assert compare_means(1.0, 0.2, 4, 0.9, 0.3, 9).verdict == "tie"
    assert compare_means(1.0, 0.2, 1, 0.5, 0.3, 9).verdict == "tie"


def test_values_without_spread_on_either_side_give_a_verdict_and_say_why():
    """Five seeds that all find 25 modes against five that all find 4: a difference with a standard error of 0 is
    above (not a nan in the sentence); equal constants are a tie."""
    above = compare([25.0] * 5, [4.0] * 5)
    assert above.verdict == "above" and above.z == math.inf
    assert above.sentence("cSGLD", "SGLD") == ("cSGLD vs SGLD: cSGLD above SGLD (difference +21; every value the "
                                               "same on each side)")
    tie = compare([25.0] * 5, [25.0] * 5)
    assert tie.verdict == "tie" and tie.z == 0.0 and "nan" not in tie.sentence("a", "b")
