"""sgmcmc.engine.static's ``leadN``: a model's function called with as many of the leading arguments as it takes, the
same compiled (chosen when the caller compiles) and as plain Python."""

import numba
import numpy as np

from sgmcmc.engine.static import arity, lead3, static


def takes_one(a):
    return a + 1.0


def takes_two(a, b):
    return a + 10.0 * b


@numba.njit
def takes_three(a, b, c):
    return a + 10.0 * b + 100.0 * c


@numba.njit
def caller(function, a, b, c):
    return lead3(function, a, b, c)


def test_the_leading_arguments_a_function_takes():
    expected = {takes_one: 2.0, takes_two: 21.0, takes_three: 321.0}
    for function, value in expected.items():
        assert caller(static(function), 1.0, 2.0, 3.0) == value
        assert lead3(function, 1.0, 2.0, 3.0) == value
    assert [arity(f) for f in expected] == [1, 2, 3]
    assert arity(static(takes_two)) == 2
    np.testing.assert_array_equal(lead3(takes_two, np.ones(2), np.zeros(2), None), np.ones(2))
