"""Arrays that compiled code passes around without counting references, for the block driver's step loop.

numba counts the references of every array a compiled function holds: an atomic increment when a variable takes it
(an argument, a tuple's item, a view), a decrement when it dies. The engine's step hands some twenty arrays, and
tuples of them, three levels deep, so a chain-step of a data model made 75-196 of these operations
(``python scripts/data_step_cost.py``, results/bench/data-step-cost-20261129.json), most of its time; with the
driver's arrays unowned, 7-28, and the chain-step 38-59% shorter (results/bench/data-step-cost-20261129-unowned.json).

:func:`unowned` gives an array, or a tuple of arrays (nested, with anything else in it left as it is), that points at
the same memory with no owner (a null meminfo, as numba's ``carray`` of a raw pointer has): numba's reference
counting skips it. The caller must keep the owner alive while the unowned array is used, and must not let the
unowned array out (return or store it): the driver makes them of its arguments and of the per-chain arrays it keeps
referenced until the chain's last step (:func:`keep`). Outside compiled code (the Python backend) ``unowned(x)`` is
``x``.
"""

from __future__ import annotations

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic, overload


def unowned(value):
    """``value`` as it is (the Python backend); compiled, its arrays without an owner (module docstring)."""
    return value


def keep(value) -> None:
    """Nothing: a use of ``value`` that keeps its arrays alive up to this point of compiled code."""


def _unowned_llvm(context, builder, kind, value):
    """The LLVM value ``value`` of numba type ``kind`` with each array in it (in tuples too) given a null meminfo and
    parent: the same data, shape and strides, not counted."""
    if isinstance(kind, types.Array):
        array = context.make_array(kind)(context, builder, value)
        array.meminfo = cgutils.get_null_value(array.meminfo.type)
        array.parent = cgutils.get_null_value(array.parent.type)
        return array._getvalue()
    if isinstance(kind, types.BaseTuple):
        for index, item in enumerate(kind):
            inner = _unowned_llvm(context, builder, item, builder.extract_value(value, index))
            value = builder.insert_value(value, inner, index)
    return value


@intrinsic
def _unowned_value(typing_context, value):
    def codegen(context, builder, signature, arguments):
        return _unowned_llvm(context, builder, signature.args[0], arguments[0])

    return value(value), codegen


@overload(unowned, inline="always")
def _unowned(value):
    return lambda value: _unowned_value(value)


@overload(keep, inline="never")
def _keep(value):
    return lambda value: None

