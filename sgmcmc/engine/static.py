"""Functions handed to compiled code as values, with numba's on-disk cache still working.

numba types a compiled function passed as an argument by the function object itself, so a block compiled for a
target's gradient in one process is never found again by the next one (its cache index compares the types), and a
compiled function taken from a global is frozen in as a pointer to a live Python object (not cacheable at all).
:class:`StaticFunction` gives such a function a type keyed on a string instead: the function's module and name and a
digest of the source files it is compiled from. The same function in the next process has the same key and so finds
the cached block; an edited file has another key and compiles afresh (the stale entry is never read). The value
itself carries nothing: the call is resolved when the caller compiles, as for any global compiled function, and
inlined where LLVM likes.

A block calls a :class:`StaticFunction` ``f`` through ``callN(f, a1, …, aN)`` (:data:`call1` … :data:`call5`, :data:`call7`, :data:`call9`, :data:`call20`, by
the number of arguments): compiled, ``f``'s source is inlined into the caller (numba's IR inlining of an overload), so a
call costs what the body costs. Called as a value, ``f(…)``, a non-inlined call passes every array as a dozen words
and counts its references: measured on the double well, about 25 ns a call against 2.6 ns inlined, and the engine's
step is three calls deep (driver → integrator → estimator → model). Outside compiled code (the Python backend of
:mod:`sgmcmc.engine.driver`) ``callN(f, …)`` is ``f(…)``, the plain Python function. ``leadN(f, a1, …, aN)``
(:data:`lead2` … :data:`lead5`) is ``f`` called with as many of the leading arguments as its source
takes: a model's function with optional arguments (a prior's hyperparameters, whether a sums door's second sum is
wanted).
"""

from __future__ import annotations

import functools
import getpass
import hashlib
import importlib.util
import inspect
import os
import stat
import sys
import tempfile
import threading
import warnings
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Callable, Iterator, Optional

import numba
import numpy as np
from numba import types
from numba.core.extending import (NativeValue, lower_builtin, models, overload, register_model, type_callable, typeof_impl,
                                  unbox)
from numba.core.errors import NumbaExperimentalFeatureWarning, NumbaIRAssumptionWarning
from numba.core.registry import CPUDispatcher

# numba calls a function passed as a value its "first-class function type feature" and warns that it is experimental;
# a StaticFunction is resolved when its caller compiles, the long-standing path of any global compiled function
warnings.filterwarnings("ignore", category=NumbaExperimentalFeatureWarning)
# numba's own "pedantic check" of the IR after inlining a function called in a loop (the estimator, in a trajectory's
# loop) warns that a variable of the inlined body "is not in scope" and asks for a bug report: its SSA pass, not the
# compiled code (the compiled trajectories equal their Python source, tests/engine/test_driver.py)
warnings.filterwarnings("ignore", message=".*is not in scope", category=NumbaIRAssumptionWarning)

# Off (environment SGMCMC_SPECIALISE_KERNELS=0, as the test suite sets it in tests/conftest.py): the generic blocks
# the suite compiles, each in less time. The driver types a block's options as plain integers (sgmcmc.engine.driver),
# and ``callN`` calls a StaticFunction's compiled function directly instead of inlining its source (:func:`_register`).
# Measured with scripts/block_compile_time.py (a cold block): gaussian_1d:sgld 5.0 s against 7.9 s inlined,
# gaussian_1d:sgnht 4.8 against 10.0; and 3.6 s, 3.5 s with the direct call, against 4.9 s, 5.0 s through an overload's
# function of its own (results/numba-compile/direct-calls-20261201.md). A chain-step costs the same on the double well's formula (scripts/engine_step_cost.py, SGLD: 339
# against 326 ns) but more on trajectories and minibatches (results/test-times/inline-20261129.md: make validate's
# default runs of Normal-Gamma 1.5x, of the lecture quartic's SGHMC with MH 2x); the engine's own small helpers stay
# inlined (called, SGLD's step on the double well took 774 ns). The same samples either way (tests/engine/test_driver.py).
# Those costs were mostly reference counts; with the driver's arrays unowned (sgmcmc/engine/unowned.py) a chain-step of
# Normal-Gamma takes 647-993 ns called against 293-711 ns inlined (results/bench/data-step-cost-20261129-unowned.json;
# 1,169-1,702 and 722-1,178 ns before, data-step-cost-20261129.json).
SPECIALISE = os.environ.get("SGMCMC_SPECIALISE_KERNELS", "1") != "0"

# the live compiled functions of this process by key: a cached block's types name them, and are rebuilt from them
_LIVE: dict[str, CPUDispatcher] = {}
ENGINE = Path(__file__).resolve().parent


@cache
def source_digest(path: str) -> str:
    """SHA-256 (16 hex digits) of a source file's bytes."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


@cache
def engine_digest() -> str:
    """The digest of every source file of the engine and the samplers: the blocks compile code from all of them."""
    files = sorted([*ENGINE.glob("*.py"), *(ENGINE.parent / "samplers").glob("*.py")])
    return hashlib.sha256("".join(source_digest(str(path)) for path in files).encode()).hexdigest()[:16]


class StaticFunction:
    """A compiled function (``dispatcher``) as a value for compiled code, typed by ``key``.

    Build one with :func:`static`; ``python`` is the uncompiled function (the reference backend calls it)."""

    def __init__(self, dispatcher: CPUDispatcher, key: str):
        self.dispatcher, self.key = dispatcher, key
        self.python = dispatcher.py_func
        _LIVE[key] = dispatcher

    def __call__(self, *args):
        return self.python(*args)

    def __repr__(self) -> str:
        return f"StaticFunction({self.key})"


def source_files(python: Callable, seen: frozenset = frozenset()) -> set[str]:
    """The source file of the plain function ``python`` and of every compiled function it calls by a global name,
    and theirs in turn: what a block that calls it compiles in (numba's own cache looks at the caller's file alone,
    so a block calling a function whose helper changed in another file would be read back stale)."""
    files = {inspect.getsourcefile(python)}
    for name in python.__code__.co_names:
        value = python.__globals__.get(name)
        if isinstance(value, CPUDispatcher) and value.py_func not in seen:
            files |= source_files(value.py_func, seen | {python})
    return files


def static(function: Callable, cacheable: bool = True, inline: bool = True) -> StaticFunction:
    """``function`` (plain Python the compiler takes, or already ``numba.njit``) as a :class:`StaticFunction`. Its key
    is its module and qualified name, the digest of its source files (:func:`source_files`) and the engine's
    (:func:`engine_digest`); a
    function without a source file (typed at a prompt), a closure, a lambda, or one with ``cacheable`` false gets a key
    of this process only. ``inline`` false: compiled code calls it as a compiled function (:data:`CALLED`), not its
    source inlined."""
    if isinstance(function, StaticFunction):  # one already (a Callback, say): as it is
        return function
    python = function.py_func if isinstance(function, CPUDispatcher) else function
    # a closure or a lambda is not named by its module and name: two of them may share both
    cacheable = cacheable and "<" not in python.__qualname__ and not python.__closure__
    try:
        where = "+".join(source_digest(path) for path in sorted(source_files(python)))
    except (TypeError, OSError):
        cacheable = False
    if not cacheable:
        where = f"process-{id(python):x}"
    key = f"{python.__module__}.{python.__qualname__}@{where}@{engine_digest()}{'' if inline else CALLED}"
    if key not in _LIVE:  # numba interns a type by its key: one dispatcher per key, kept alive with it
        _LIVE[key] = function if isinstance(function, CPUDispatcher) else numba.njit(function)
    return StaticFunction(_LIVE[key], key)


# The live Python functions that the compiled callbacks call, by their slot (:class:`Callback`), per thread: compiled
# code looks them up when it runs (:func:`bound`, in numba's object mode), and :func:`bindings` fills the running
# thread's table with a block's own functions while the block runs.
_BOUND = threading.local()
# where the callbacks' trampolines are written, one small module each, so that numba's on-disk cache finds them (and the
# blocks compiled with them) in the next process: the run's ``<cache_dir>/callbacks`` (:func:`use_cache_folder`, which
# sgmcmc.experiment calls with the config's cache_dir), else ``$SGMCMC_CACHE/callbacks`` at the time of writing, else
# the project's ``.cache/callbacks``
CALLBACK_FOLDER: Optional[Path] = None


def use_cache_folder(folder: Optional[Path]) -> None:
    """Write the callbacks' trampolines into ``<folder>/callbacks`` from now on (None: back to the default)."""
    global CALLBACK_FOLDER
    CALLBACK_FOLDER = None if folder is None else Path(folder) / "callbacks"


def callback_folder() -> Path:
    """The folder :func:`callback` writes its trampolines into (:data:`CALLBACK_FOLDER`)."""
    if CALLBACK_FOLDER is not None:
        return CALLBACK_FOLDER
    return Path(os.environ.get("SGMCMC_CACHE") or ENGINE.parents[1] / ".cache") / "callbacks"


class Callback(StaticFunction):
    """A Python function that compiled code calls in object mode (:func:`callback`): ``slot`` is its place in
    the running thread's table (:func:`bound`), ``function`` the function :func:`bind` puts there, ``name`` the model's
    door it serves."""

    def __init__(self, dispatcher: CPUDispatcher, key: str, slot: str, function: Callable, name: str, kind: str):
        super().__init__(dispatcher, key)
        self.slot, self.function, self.name = slot, function, name
        @functools.wraps(function)  # arity reads function's signature through it
        def python(*args):  # the Python backend: the function itself, no trampoline
            return _converted(function(*args), kind)

        self.python = python


def _converted(value, output: str):
    """A callback's result as its trampoline returns it (``output``: ``array``, ``tuple``, ``int`` or ``float``):
    float64 arrays made contiguous, an int, or a float."""
    if output == "tuple":
        return tuple(np.ascontiguousarray(part, dtype=np.float64) for part in value)
    if output == "array":
        return np.ascontiguousarray(value, dtype=np.float64)
    if output == "int":
        return int(value)
    return float(value)


def _type_source(output: types.Type) -> tuple[str, str]:
    """(the source of the numba type ``output``, its kind for :func:`_converted`): a C-contiguous float64 array, a
    uniform tuple of them, an integer (int64) or a float."""
    if isinstance(output, types.BaseTuple):
        inner, _ = _type_source(output.types[0])
        return f"types.UniTuple({inner}, {len(output.types)})", "tuple"
    if isinstance(output, types.Array):
        return f"types.float64[{', '.join([':'] * (output.ndim - 1) + ['::1'])}]", "array"
    if isinstance(output, types.Integer):
        return "types.int64", "int"
    return "types.float64", "float"


def _slot(function: Callable, name: str) -> str:
    """What names ``function`` across processes: its class's (a bound method's, a callable object's) or its own module
    and qualified name, and the door ``name``; two instances of one model class share a slot (:func:`bind` puts the
    running block's own in it)."""
    owner = getattr(function, "__self__", None)
    if owner is not None and not isinstance(owner, type):
        where = f"{type(owner).__module__}.{type(owner).__qualname__}.{function.__name__}"
    elif hasattr(function, "__qualname__"):
        where = f"{function.__module__}.{function.__qualname__}"
    else:
        where = f"{type(function).__module__}.{type(function).__qualname__}"
    return f"{where}:{name}"


def callback(function: Callable, output: types.Type, name: str = "") -> Callback:
    """``function``, any Python callable the compiler refuses (a model's bound method, a closure), as a
    :class:`Callback` that compiled code calls in numba's object mode (``numba.objmode``): the arguments boxed as
    numpy arrays over the same memory, the result converted to ``output`` (float64 arrays made contiguous, a float, or
    a tuple of arrays). It takes the required positional parameters ``function`` takes (:func:`arity`); ``name`` names
    the model's door it serves. Called, not inlined.

    The trampoline is a module of its own in :func:`callback_folder`, written once for its slot (:func:`_slot`), its
    arity and its output, that calls ``bound(slot)``: numba caches it, and the blocks compiled with it, on disk like
    any other function, so the next process (the next test) with a model of the same class compiles nothing. The
    blocks bind the function while they run (:func:`bindings`). Measured on a method of one line, θ (1, 10): 3.4-6.9 µs a call
    from a compiled loop against 2.5 µs from Python."""
    names = ", ".join(f"a{i}" for i in range(arity(function)))
    slot = _slot(function, name)
    kind_source, kind = _type_source(output)
    source = (f'"""Written by sgmcmc.engine.static.callback: {slot} called in object mode."""\n\n'
              f"import numba\nfrom numba import types\n\nfrom sgmcmc.engine.static import _converted, bound\n\n"
              f"OUTPUT = {kind_source}\n\n\n"
              f"@numba.njit(cache=True)\n"
              f"def trampoline({names}):\n"
              f"    with numba.objmode(value=OUTPUT):\n"
              f"        value = _converted(bound({slot!r})({names}), {kind!r})\n"
              f"    return value\n")
    module_name = f"sgmcmc_callback_{hashlib.sha256(source.encode()).hexdigest()[:16]}"
    if module_name not in sys.modules:
        path = _written(module_name, source)
        spec = importlib.util.spec_from_file_location(module_name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        spec.loader.exec_module(module)
    made = static(sys.modules[module_name].trampoline, inline=False)
    return Callback(made.dispatcher, made.key, slot, function, name, kind)


def _written(module_name: str, source: str) -> Path:
    """The trampoline module's file, written once (each writer through a file of its own, moved into place: test workers
    may write it at once) so that its cache stays valid, and rewritten where it holds anything else: in
    :func:`callback_folder`, or where that cannot be written (a read-only installation without ``SGMCMC_CACHE``) in a
    folder of this user's in the system's temporary folder, used only if no one else can write to it."""
    fallback = Path(tempfile.gettempdir()) / f"sgmcmc-callbacks-{getpass.getuser()}"
    for folder in (callback_folder(), fallback):
        path = folder / f"{module_name}.py"
        try:
            folder.mkdir(mode=0o700, parents=True, exist_ok=True)
            if folder == fallback and not _private(folder):
                continue
            if path.is_file() and path.read_text() == source:
                return path
            handle, partial = tempfile.mkstemp(suffix=".tmp", dir=folder)
            with os.fdopen(handle, "w") as file:
                file.write(source)
            os.replace(partial, path)
            return path
        except OSError:
            continue
    raise OSError(f"cannot write the callback module {module_name}: set SGMCMC_CACHE to a writable folder")


def _private(folder: Path) -> bool:
    """Whether ``folder`` is a real folder that only this user can write to (where the system has user ids)."""
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode):
        return False
    return not hasattr(os, "getuid") or (info.st_uid == os.getuid() and not info.st_mode & 0o022)


def _table() -> dict:
    """This thread's functions of the callbacks, by slot."""
    return _BOUND.__dict__.setdefault("table", {})


def bound(slot: str) -> Callable:
    """The function bound to ``slot`` in this thread (:func:`bind`): what a trampoline calls."""
    return _table()[slot]


@contextmanager
def bindings(*values) -> Iterator[None]:
    """:func:`bind` for the block about to run, and this thread's table as it was once the block has run: a finished
    block keeps no model alive through the table."""
    table = _table()
    before = dict(table)
    bind(*values)
    try:
        yield
    finally:
        table.clear()
        table.update(before)


def bind(*values) -> None:
    """Put each :class:`Callback` in ``values`` (and in the tuples among them, at any depth) in this thread's table:
    its own function, for the block about to run (another model of the same class may have bound its own since)."""
    table = _table()
    for value in values:
        if isinstance(value, Callback):
            table[value.slot] = value.function
        elif isinstance(value, tuple):
            bind(*value)


class StaticFunctionType(types.Dispatcher):
    """numba's type of a :class:`StaticFunction`: a dispatcher type whose identity is the key string."""

    def __init__(self, dispatcher: CPUDispatcher, key: str):
        self.static_key = key
        super().__init__(dispatcher)
        self.name = f"StaticFunction({key})"

    @property
    def key(self):
        return self.static_key

    def __eq__(self, other):
        return type(self) is type(other) and self.static_key == other.static_key

    def __hash__(self):
        return hash(("StaticFunction", self.static_key))

    def __reduce__(self):
        return _rebuild, (self.static_key,)


def _rebuild(key: str):
    """The type of a cache index entry: the live function's type, or (a function this process has not built) a type
    that equals nothing, so that entry is passed over, and that is written back as it was read: numba rewrites a
    function's whole index when it adds an entry, and a placeholder written as itself destroyed the entries of every
    model this process had not loaded (measured: the test suite's workers compiled the same blocks again at every run)."""
    if key in _LIVE:
        return StaticFunctionType(_LIVE[key], key)
    return UnloadedStaticFunction(key)


class UnloadedStaticFunction(types.Opaque):
    """A :class:`StaticFunction`'s type in a cache index read by a process that has not built that function."""

    def __init__(self, key: str):
        self.static_key = key
        super().__init__(f"unloaded StaticFunction({key})")

    def __reduce__(self):
        return _rebuild, (self.static_key,)


register_model(StaticFunctionType)(models.OpaqueModel)


@typeof_impl.register(StaticFunction)
def _typeof(value: StaticFunction, context) -> StaticFunctionType:
    return StaticFunctionType(value.dispatcher, value.key)


@unbox(StaticFunctionType)
def _unbox(typ, obj, context):
    return NativeValue(context.context.get_constant_null(typ))


_INLINED: dict[str, CPUDispatcher] = {}
# the end of the key of a StaticFunction that compiled code calls, not inlines: a model's functions that make arrays
# (a data model's per-example gradients). Measured on examples/robust_regression.py (n = 100, d = 20): its
# minibatch gradient took 4.3 µs a step with row_gradients' source inlined into the caller's IR, 3.1 µs called
# (scripts/engine_step_cost.py's robust regression row); a small formula (the double well's) is faster inlined
CALLED = "@called"


def _inlined(function) -> "CPUDispatcher | None":
    """The source of the :class:`StaticFunction` typed ``function``, compiled to be inlined into its caller."""
    if not isinstance(function, StaticFunctionType):
        return None
    if function.static_key.endswith(CALLED):
        return function.dispatcher
    if function.static_key not in _INLINED:
        _INLINED[function.static_key] = numba.njit(inline="always")(function.dispatcher.py_func)
    return _INLINED[function.static_key]


def _caller(arity: int):
    """``callN(function, a0, …)``: ``function(a0, …)``, and its overload that inlines a StaticFunction's source (numba's
    inliner takes no ``*args``: one stub per number of arguments, written out here)."""
    names = ", ".join(f"a{i}" for i in range(arity))
    namespace = {"_inlined": _inlined}
    exec(f"def call{arity}(function, {names}):\n"
         f"    return function({names})\n"
         f"def typing(function, {names}):\n"
         f"    inner = _inlined(function)\n"
         f"    if inner is not None:\n"
         f"        def implementation(function, {names}):\n"
         f"            return inner({names})\n"
         f"        return implementation\n", namespace)
    stub = namespace[f"call{arity}"]
    stub.__module__, stub.__doc__ = __name__, f"function(a0, …, a{arity - 1}), inlined where compiled (module docstring)"
    _register(stub, namespace["typing"], lambda function: arity)
    return stub


def _register(stub, typing, taken: Callable[[types.Type], int]) -> None:
    """Teach numba ``stub(function, a0, …)``: specialised (:data:`SPECIALISE`), ``typing``'s implementation inlined;
    else a direct call of ``function``'s compiled function with its first ``taken(function)`` arguments, with no
    function of its own in between: numba compiles an overload's implementation as a function of its own, which
    links in, optimises and generates again the machine code of everything it calls, at each of the engine's three
    levels (driver → integrator → estimator → model)."""
    if SPECIALISE:
        overload(stub, inline="always")(typing)
        return

    names = ", ".join(list(inspect.signature(stub).parameters)[1:])

    @type_callable(stub)
    def _type(context):
        def return_type(function, args):
            if not isinstance(function, StaticFunctionType):
                return None
            return function.get_call_type(context, args[:taken(function)], {}).return_type
        # named parameters, as the stub's: numba folds a typer's *args into one tuple argument
        namespace = {"return_type": return_type}
        exec(f"def typer(function, {names}):\n    return return_type(function, ({names},))\n", namespace)
        return namespace["typer"]

    @lower_builtin(stub, types.VarArg(types.Any))
    def _lower(context, builder, sig, args):
        function = sig.args[0]
        count = taken(function)
        inner = function.get_call_type(context.typing_context, sig.args[1:1 + count], {})
        return context.get_function(function, inner)(builder, args[1:1 + count])


call1, call2, call3, call4, call5 = (_caller(arity) for arity in range(1, 6))
call7, call9, call20 = _caller(7), _caller(9), _caller(20)


def arity(function) -> int:
    """The number of required positional parameters of ``function``'s Python source (a plain function, a compiled one
    or a :class:`StaticFunction`): a parameter with a default is not passed (a TypeError for ``*args`` or
    ``**kwargs``, whose count is not known)."""
    python = getattr(function, "python", None) or getattr(function, "py_func", None) or function
    # the Python backend asks at every call (leadN), and inspect.signature is slow: the count is kept by what fixes it
    # (:func:`_arity_key`)
    key = _arity_key(python)
    if key in _ARITY:
        return _ARITY[key]
    parameters = inspect.signature(python).parameters.values()
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        raise TypeError(f"{python.__qualname__} takes *args or **kwargs: name its parameters")
    count = sum(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters)
    if key is not None:
        _ARITY[key] = count
    return count


_ARITY: dict[tuple, int] = {}  # arity by (code, bound, number of defaults)


def _arity_key(python) -> Optional[tuple]:
    """What fixes the count of :func:`arity`, as ``inspect.signature`` finds it: the code of the function at the end of
    the ``__wrapped__`` chain (a decorator's, a callback's wrapper followed to what it wraps), whether a bound method
    is on the way (its first parameter is not passed) and its number of defaults; None (not kept) for what has no
    code there (a callable object, a partial) or declares a ``__signature__`` of its own."""
    bound, current = False, python
    while True:
        if hasattr(current, "__signature__"):
            return None
        bound = bound or inspect.ismethod(current)
        wrapped = getattr(current, "__wrapped__", None)
        if wrapped is None:
            break
        current = wrapped
    code = getattr(current, "__code__", None)
    return None if code is None else (code, bound, len(getattr(current, "__defaults__", None) or ()))


def _leading_caller(count: int):
    """``leadN(function, a0, …)``: ``function`` called with as many of the N leading arguments as it takes, chosen when
    the caller compiles (an optional argument of a model's function: the hyperparameters of its prior, whether its sums
    door's second sum is wanted), its source inlined as by :func:`_caller`."""
    names = [f"a{i}" for i in range(count)]
    listed = ", ".join(names)
    namespace = {"_inlined": _inlined, "arity": arity}
    source = (f"def lead{count}(function, {listed}):\n"
              f"    return function(*({listed},)[:arity(function)])\n"
              f"def typing(function, {listed}):\n"
              f"    inner = _inlined(function)\n"
              f"    if inner is None:\n"
              f"        return None\n"
              f"    taken = arity(inner)\n")
    for taken in range(1, count + 1):
        source += (f"    if taken == {taken}:\n"
                   f"        def implementation(function, {listed}):\n"
                   f"            return inner({', '.join(names[:taken])})\n"
                   f"        return implementation\n")
    exec(source, namespace)
    stub = namespace[f"lead{count}"]
    stub.__module__ = __name__
    stub.__doc__ = f"function(a0, …) with the first arity(function) of its {count} arguments, inlined where compiled"
    _register(stub, namespace["typing"], lambda function: arity(function.dispatcher))
    return stub


lead2, lead3, lead4, lead5 = _leading_caller(2), _leading_caller(3), _leading_caller(4), _leading_caller(5)
