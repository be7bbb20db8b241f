import math

import pytest

from sgmcmc.schedules import make_schedule


def test_constant():
    schedule = make_schedule("constant", 0.1, 100)
    assert schedule(0) == schedule(99) == 0.1


def test_polynomial_matches_welling_teh_form():
    """ε_t = ε₀(1 + t/b)^−γ equals a(b + t)^−γ with a = ε₀ b^γ (SPEC T13: a = 0.19955, b = 231.066 ⇒ ε₀ = 0.01)."""
    b, gamma = 231.066, 0.55
    a = 0.19955
    schedule = make_schedule("polynomial", a * b**-gamma, 10**6, b=b, gamma=gamma)
    assert schedule(0) == pytest.approx(0.01, rel=1e-3)
    for t in (0, 10, 1000, 10**6 - 1):
        assert schedule(t) == pytest.approx(a * (b + t) ** -gamma, rel=1e-12)
    assert schedule(10**6 - 1) == pytest.approx(1e-4, rel=0.01)


def test_polynomial_delay_is_the_sgld_schedule_of_zhang_et_al():
    """sgld.m of ruqizhang/csgmcmc: η = a for t ≤ 500 (1-based), then a(t − 500)^−0.55 (b = 0 there, 1 here, 0-based)."""
    schedule = make_schedule("polynomial", 0.043, 50_000, b=1.0, gamma=0.55, delay=500)
    for k in (1, 250, 500, 501, 502, 1000, 50_000):  # the authors' 1-based t; our step t = k − 1
        expected = 0.043 if k < 501 else 0.043 * (k - 500) ** -0.55
        assert schedule(k - 1) == pytest.approx(expected, rel=1e-12)
    assert make_schedule("polynomial", 0.1, 10, b=5.0, gamma=0.5)(7) == make_schedule(
        "polynomial", 0.1, 10, b=5.0, gamma=0.5, delay=0)(7)


def test_cyclical_restarts_each_cycle():
    schedule = make_schedule("cyclical", 0.2, 100, n_cycles=4)
    assert schedule(0) == schedule(25) == schedule(50) == pytest.approx(0.2)
    assert schedule(12) == pytest.approx(0.1 * (math.cos(math.pi * 12 / 25) + 1))
    assert min(schedule(t) for t in range(100)) > 0


def test_unknown_schedule():
    with pytest.raises(KeyError, match="allowed"):
        make_schedule("nope", 0.1, 10)
