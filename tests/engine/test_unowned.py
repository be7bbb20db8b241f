"""sgmcmc.engine.unowned: arrays handed on without reference counts point at their owners' memory."""

from __future__ import annotations

import numba
import numpy as np

from sgmcmc.engine.unowned import keep, unowned


@numba.njit
def _write_through(owner, nested):
    """Writes through unowned views of ``owner`` and of the arrays in ``nested`` (a tuple with a tuple and a float in
    it), and returns what the unowned views read back."""
    view = unowned(owner)
    first, (second, number) = unowned(nested)
    view[1] = 7.0
    first[0, 1] = number
    second[2] = view[1] + first[0, 1]
    keep((owner, nested))
    return view.shape[0], first.shape, second.sum()


def test_compiled_unowned_arrays_are_their_owners_memory():
    """Compiled: the same shapes and data, so a write through the unowned view is a write to the owner (a copy, or a
    view of the wrong data, fails here); the float in the tuple is passed as it is."""
    owner, first, second = np.zeros(3), np.zeros((2, 2)), np.ones(4)
    size, shape, total = _write_through(owner, (first, (second, 2.5)))
    assert (size, shape) == (3, (2, 2))
    np.testing.assert_array_equal(owner, [0.0, 7.0, 0.0])
    np.testing.assert_array_equal(first, [[0.0, 2.5], [0.0, 0.0]])
    np.testing.assert_array_equal(second, [1.0, 1.0, 9.5, 1.0])
    assert total == 12.5


def test_in_python_unowned_is_the_value_itself():
    """The Python backend runs the driver's source as it is: ``unowned(x)`` is ``x``, ``keep`` does nothing."""
    value = (np.zeros(2), (np.ones(1), 3))
    assert unowned(value) is value
    assert keep(value) is None
