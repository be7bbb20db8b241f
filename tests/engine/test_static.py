"""sgmcmc.engine.static's ``leadN``: a model's function called with as many of the leading arguments as it takes, the
same compiled (chosen when the caller compiles) and as plain Python; and its callbacks (a bound method called from
compiled code in object mode)."""

import functools
import gc
import getpass
import tempfile
import threading
import weakref
from pathlib import Path

import numba
import numpy as np
from numba import types

import sgmcmc.engine.static as static_module
from sgmcmc.engine.static import arity, bind, bindings, call1, callback, lead3, static
from sgmcmc.experiment import build
from tests.helpers import composed


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


def test_the_kept_arity_tells_a_bound_method_and_defaults_apart():
    """arity is kept by code, binding and number of defaults: the same code bound (self not passed) or with a default
    more takes fewer arguments, whichever was asked first; a decorated method is counted by the function it wraps
    (bound), not by the decorator's wrapper, whose code every decorated function shares."""
    class Model:
        def gradient(self, theta, index):
            return theta

    def with_default(default):
        def function(a, b=default):
            return a
        return function

    def without_default(a, b):
        return a

    assert [arity(Model.gradient), arity(Model().gradient), arity(Model.gradient)] == [3, 2, 3]
    assert [arity(with_default(1.0)), arity(without_default), arity(with_default(2.0))] == [1, 2, 1]
    assert arity(callback(Model().gradient, numba.types.float64)) == 2

    def logged(function):  # one wrapper's code for every function it decorates
        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            return function(*args, **kwargs)
        return wrapper

    class Decorated:
        @logged
        def gradient(self, theta, index=None):
            return theta

        @logged
        def prior(self, theta, hyperparameters, memory):
            return theta

    model = Decorated()
    assert [arity(model.gradient), arity(model.prior), arity(Decorated.gradient), arity(model.gradient)] == [1, 3, 2, 1]
    assert arity(callback(model.prior, numba.types.float64)) == 3


class Scaled:
    def __init__(self, factor):
        self.factor = factor

    def gradient(self, theta):
        return self.factor * theta


@numba.njit
def calls(function, theta):
    return call1(function, theta)


def test_a_callback_where_the_cache_folder_cannot_be_written_is_written_to_the_temporary_folder(monkeypatch):
    """A read-only installation without SGMCMC_CACHE: the trampoline goes to the system's temporary folder, and compiled
    code calls the bound method through it (its own instance's, once bound)."""
    monkeypatch.setattr(static_module, "CALLBACK_FOLDER", Path("/proc/not-a-folder/callbacks"))
    first, second = (callback(Scaled(factor).gradient, types.float64[::1], "gradient") for factor in (2.0, 3.0))
    assert Path(first.dispatcher.py_func.__code__.co_filename).parent == Path(tempfile.gettempdir()) / f"sgmcmc-callbacks-{getpass.getuser()}"
    bind(first)
    np.testing.assert_array_equal(calls(first, np.ones(3)), np.full(3, 2.0))
    bind(second)
    np.testing.assert_array_equal(calls(second, np.ones(3)), np.full(3, 3.0))
    np.testing.assert_array_equal(first.python(np.ones(3)), np.full(3, 2.0))  # the Python backend: its own function
    # each thread has its own bindings: a block of the other model in another thread leaves this thread's alone
    bind(first)
    other = threading.Thread(target=lambda: (bind(second), calls(second, np.ones(3))))
    other.start()
    other.join()
    np.testing.assert_array_equal(calls(first, np.ones(3)), np.full(3, 2.0))


def test_the_callbacks_are_written_into_the_runs_cache_dir(monkeypatch, tmp_path):
    """``cache_dir`` (the config's top-level key) holds the engine's callback modules too: a run built with it writes
    its trampolines into ``<cache_dir>/callbacks``, not the project's .cache (nor $SGMCMC_CACHE's)."""
    monkeypatch.setattr(static_module, "CALLBACK_FOLDER", None)
    monkeypatch.setenv("SGMCMC_CACHE", str(tmp_path / "from-env"))
    assert static_module.callback_folder() == tmp_path / "from-env" / "callbacks"
    build(composed("target=double_well", "sampler=sgld", f"cache_dir={tmp_path / 'configured'}"))
    # a door of its own: a trampoline this process has loaded already (another test's) is not written again
    made = callback(Scaled(2.0).gradient, types.float64[::1], "cache_dir_gradient")
    assert Path(made.dispatcher.py_func.__code__.co_filename).parent == tmp_path / "configured" / "callbacks"


def test_a_model_is_bound_only_while_its_block_runs():
    """The thread's table holds a block's model while the block runs, and the table as it was afterwards: a finished
    run keeps no model (and its data) alive through it."""
    model = Scaled(2.0)
    alive, door = weakref.ref(model), callback(model.gradient, types.float64[::1], "gradient")
    with bindings(door):
        np.testing.assert_array_equal(calls(door, np.ones(3)), np.full(3, 2.0))
    del model, door
    gc.collect()
    assert alive() is None
