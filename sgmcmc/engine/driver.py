"""One block driver for every integrator: each chain advanced from step ``start`` to ``stop`` with its whole path.

:func:`run_block` loops over the chains and, within a chain, over the steps, calling the integrator's one-chain step
(:mod:`sgmcmc.engine.integrators`) with the gradient source a target handed over (:mod:`sgmcmc.engine.estimators`).
:class:`Blocks` is its Python side: it draws a block's random numbers from the run's Generator (step by step where a
step draws a minibatch: its uniforms, then its standard normals; else the normals in one call) and returns a
:class:`~sgmcmc.engine.blocks.Block`.

The backend is explicit (:data:`COMPILED` or :data:`PYTHON`): the compiled block, or the very same driver, integrator
and estimator source run as plain Python (the readable reference; the small shared helpers, the injected noise's
factorisation and the finiteness test, stay compiled). Both give the same samples for the same random numbers.

Compiled, :func:`run_block` hands the steps its arrays without reference counts (:mod:`sgmcmc.engine.unowned`): its
arguments, and each chain's working arrays, kept alive to the chain's last step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Optional

import numba
import numpy as np
from numba import types

from sgmcmc.engine.blocks import Block, first_failure
from sgmcmc.engine.codes import CLIP_DRAW, CLIP_FALLBACK
from sgmcmc.engine.estimators import NO_RUNNING, RUNNING_FULL, choose_rows, running_size
from sgmcmc.engine.injection import FULL_ESTIMATE, NO_ESTIMATE, NON_FINITE, OK, finite_state
from sgmcmc.engine.integrators import FIRST_CARRY
from sgmcmc.engine.replay import TAIL, Replay
from sgmcmc.engine.static import SPECIALISE, StaticFunction, bindings, call20, static
from sgmcmc.engine.unowned import keep, unowned
from sgmcmc.noise import clip_counters
from sgmcmc.state import SamplerState

COMPILED, PYTHON = "compiled", "python"
BACKENDS = (COMPILED, PYTHON)


# error_model "numpy": a float divided by 0 gives ±inf or NaN, as the Python backend's numpy scalars do (with a
# RuntimeWarning), instead of numba's default test and ZeroDivisionError at every division; an integer divided by 0
# gives 0. Measured on the double well (1 chain), that test's path left reference counts in the step loop: pSGLD took
# 270 ns a step with it, 90 ns without (its divisors are positive: λ > 0 is a key's bound). What the block inlines
# (integrators, estimators, a target's functions) runs under this model; a compiled function it calls that sets no
# model of its own takes the model of whichever caller compiled it first (numba's inherit_if_not_set), which matters
# only at a divisor of 0. An inf or NaN that reaches θ, r, ξ, the carried vector or the estimator's state ends the
# step as non-finite; one in V̂ makes the full draw's Cholesky fail (not PSD).
@numba.njit(cache=True, error_model="numpy")
def run_block(step, source, parameters, options, variance, theta0, momentum0, xi0, carry0, memory, normals, uniforms,
              rows, step_sizes, theta_path, momentum_path, xi_path, carry_path, clipped_path, reflected_path,
              accept_path, bad_step, bad_code):
    """Advance every chain ``step_sizes.size`` steps from (θ₀, r₀, ξ₀, the carried vector) (c, ·): step k of chain i
    takes ``normals[k, :, i]`` (slots, d), the uniform ``uniforms[k, i]`` (a Metropolis–Hastings test's; ``uniforms``
    is (0, 0) for a block without one) and the minibatch ``rows[k, i]`` (a block with one set of rows for every step
    and chain has ``rows`` of shape (1, 1, ·): every row, ``passes`` times; a density model's none). Writes the paths (c, K, ·) of θ, of r, ξ, the carried vector and the
    acceptance probability where those have room, the clipped counts (c, K) and, where it has room, the coordinates
    the target's reflection (``source[-1]``) reflected in each step (c, K); per chain the first failed step (K for
    none) and its status. A chain stops at its first failure: a non-finite state (the carried vector included), or
    an injected covariance that is not PSD. ``memory`` (c, m), each chain's gradient-estimator state, is advanced in
    place (to the last step a chain took; a block that fails ends the run)."""
    n_chains, d = theta0.shape
    n_steps, slots = step_sizes.shape[0], normals.shape[1]
    keep_momentum, keep_xi, keep_accept = momentum_path.shape[1] > 0, xi_path.shape[1] > 0, accept_path.shape[1] > 0
    keep_carry, keep_reflected = carry_path.shape[1] > 0, reflected_path.shape[1] > 0
    uniform = 0.0
    same_rows = rows.shape[0] == 1 and rows.shape[1] == 1
    # what the steps are handed, without reference counts (sgmcmc.engine.unowned): the arguments, alive for the call
    source, parameters, variance, rows = unowned(source), unowned(parameters), unowned(variance), unowned(rows)
    batch = rows[0, 0]
    for i in range(n_chains):
        # the working arrays of a chain's steps: the step's normals, ∇Ũ, the injected noise, D's and T's diagonals,
        # the point where ∇Ũ is taken, the correction Γ, the injected covariance's factor. Made per chain, not per step (a view made at
        # every step, as normals[k, :, i], costs reference counts that measured more than a step of the double
        # well), nor once per block (measured: SGLD on the double well took 70-95 ns a chain-step with them made once
        # per block against 22 ns made per chain, the same source otherwise)
        owners = (np.empty((slots, d)), np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d), np.empty(d),
                  np.empty((variance.shape[0], d)),  # (d, d) where V̂ enters (its full draw's scratch), else (1, d)
                  theta0[i].copy(), momentum0[i].copy(), xi0[i].copy(), carry0[i].copy(), memory[i].copy())
        (step_normals, gradient, noise, diffusion, scale, at, correction, square, theta, momentum, xi, carry,
         state) = unowned(owners)  # kept alive to the chain's last step (keep, below)
        bad_step[i], bad_code[i] = n_steps, OK
        for k in range(n_steps):
            if not same_rows:
                batch = rows[k, i]
            for slot in range(slots):
                for j in range(d):
                    step_normals[slot, j] = normals[k, slot, i, j]
            if keep_accept:
                uniform = uniforms[k, i]
            status, clipped, reflected, accept = call20(step, source, parameters, options, variance, theta, momentum,
                                                        xi, carry, state, batch, step_sizes[k], step_normals, uniform,
                                                        gradient, noise, diffusion, scale, at, correction, square)
            if status == OK and not finite_state(theta, momentum, xi, carry):
                status = NON_FINITE
            for j in range(state.shape[0]):  # the estimator's state (none on most models: no loop)
                if status == OK and not math.isfinite(state[j]):
                    status = NON_FINITE
            if status != OK:
                bad_step[i], bad_code[i] = k, status
                break
            for j in range(d):  # element by element: a slice assignment costs more than a step of the double well
                theta_path[i, k, j] = theta[j]
                if keep_momentum:
                    momentum_path[i, k, j] = momentum[j]
            if keep_xi:
                xi_path[i, k] = xi[0]
            if keep_carry:
                for j in range(carry.shape[0]):
                    carry_path[i, k, j] = carry[j]
            if keep_accept:
                accept_path[i, k] = accept
            clipped_path[i, k] = clipped
            if keep_reflected:
                reflected_path[i, k] = reflected
        for j in range(state.shape[0]):
            memory[i, j] = state[j]
        keep(owners)


@numba.njit(cache=True)
def draw_steps(rng, keys, normals, uniforms, first_slot):
    """Step after step k, from the run's Generator ``rng``: the minibatch's uniforms ``keys[k]`` (c, n), the standard
    normals ``normals[k, first_slot:]`` (slots, c, d) and the Metropolis–Hastings test's uniforms ``uniforms[k]``
    (c,), each where its array has room, in C order: the numbers numpy's ``rng.random((c, n))``,
    ``rng.standard_normal((slots − first_slot, c, d))`` and ``rng.random(c)`` give (numba's Generator runs numpy's
    algorithms on the same bit generator, whose state it advances); the slots before ``first_slot`` are not written.
    Measured on Table 1's Normal-Gamma (SGNHT, CCAdL) at 1 chain: a block took 4.0 µs a step with those numpy calls
    made from Python, 3.2 µs of it the calls, and 0.5-1.0 µs with this function."""
    for k in range(normals.shape[0]):
        for i in range(keys.shape[1]):
            for m in range(keys.shape[2]):
                keys[k, i, m] = rng.random()
        for slot in range(first_slot, normals.shape[1]):
            for i in range(normals.shape[2]):
                for j in range(normals.shape[3]):
                    normals[k, slot, i, j] = rng.standard_normal()
        for i in range(uniforms.shape[1]):
            uniforms[k, i] = rng.random()


@numba.njit(cache=True)
def no_reflection(theta, momentum):
    """The reflection of a target on all of R^d (:attr:`Blocks.reflect` None): nothing moved, none counted; inlined
    into the integrators, it compiles to nothing."""
    return 0


NO_REFLECTION = static(no_reflection)

# the compiled entry points of run_block by what fixes its argument types (see _compiled_entry)
_ENTRIES: dict = {}


def _fingerprint(value):
    """What fixes numba's type of an argument: an array's dtype, rank, layout and flags; a StaticFunction's key; a
    tuple's parts; else its Python type."""
    if isinstance(value, np.ndarray):
        flags = value.flags
        return value.dtype.str, value.ndim, flags.c_contiguous, flags.f_contiguous, flags.writeable, flags.aligned
    if isinstance(value, StaticFunction):
        return value.key
    if isinstance(value, tuple):
        return tuple(_fingerprint(part) for part in value)
    return type(value)


# SPECIALISE off (sgmcmc.engine.static) types the options as plain integers: one block per integrator and model for
# every combination of options, the same source and so the same samples (tests/engine/test_driver.py checks it). The
# suite asks for blocks of some 40 integrator × model pairs with a few options each; compiled per combination they
# took it past its 10 minutes on this machine.


def _options_type(options: tuple):
    """numba's type of the integrator's options: a tuple of integer literals, so the block is compiled once per
    combination and LLVM drops the branches it never takes (measured on the double well, SGLD at 1,000 chains:
    135 ns a chain-step with the options as an array, read at every step); plain integers where :data:`SPECIALISE` is
    off."""
    if not SPECIALISE:
        return types.UniTuple(types.int64, len(options))
    return types.Tuple(tuple(types.literal(int(option)) for option in options))


def _compiled_entry(step: StaticFunction, source: tuple, arguments: tuple):
    """run_block's compiled entry point for these arguments, called directly: numba's dispatcher types every argument
    at every call, and for a source of function values that takes longer than a block of a hundred steps of one chain
    (measured: 0.2 ms against 0.36 ms). Compiled (or loaded from the cache) the first time a fingerprint is seen."""
    key = (step.key, _fingerprint(source), arguments[1] if SPECIALISE else None, _fingerprint(arguments))
    entry = _ENTRIES.get(key)
    if entry is None:
        signature = tuple(numba.typeof(value) for value in (step, source, *arguments))
        signature = signature[:3] + (_options_type(arguments[1]),) + signature[4:]
        run_block.compile(signature)
        entry = _ENTRIES[key] = run_block.overloads[signature].entry_point
    return entry


def python_source(source: tuple) -> tuple:
    """A source with its functions' plain Python versions (the reference backend), in nested tuples too."""
    return tuple(part.python if isinstance(part, StaticFunction) else python_source(part) if isinstance(part, tuple)
                 else part for part in source)


def block_draws(rng: np.random.Generator, n_steps: int, n_chains: int, dim: int, slots: int = 2,
                uniforms: bool = False, n_data: int = 0, batch_size: int = 0, replacement: bool = False,
                passes: int = 1, first_slot: int = 0) -> tuple:
    """A block's random numbers from the run's Generator, step after step, so that a run cut into other blocks (a
    checkpoint's, a resumed run's) draws the same numbers: per step a data model's ``passes`` minibatches, one for
    each gradient of the step (the uniforms (c, passes·n) of :func:`~sgmcmc.engine.estimators.choose_rows`, each n a
    subset of its own, or with ``replacement`` the indices ⌊uN⌋ of its uniforms; none when n = N without
    replacement, or for a density model), the normals (slots, c, d) (all chains' gradient
    noise, then their injected noise; those before ``first_slot`` are not drawn but 0), and a Metropolis–Hastings
    test's uniforms (c,). Returns (rows (K, c,
    passes·n), or (1, 1, passes·N) for n = N (every row at every gradient), (1, 1, 0) for no data; normals (K,
    slots, c, d); uniforms (K, c), or (0, 0) without a test)."""
    shape = (slots, n_chains, dim)
    accept = np.empty((n_steps, n_chains)) if uniforms else np.zeros((0, 0))
    minibatch = 0 < batch_size and (batch_size < n_data or replacement)
    keys = np.empty((n_steps, n_chains, passes * batch_size if minibatch else 0))
    if minibatch or uniforms or first_slot:
        normals = np.zeros((n_steps, *shape)) if first_slot else np.empty((n_steps, *shape))
        draw_steps(rng, keys, normals, accept, first_slot)
    else:  # one call: the same numbers as one per step
        normals = rng.standard_normal((n_steps, *shape))
    if minibatch and replacement:  # n indices, each ⌊uN⌋ of its uniform
        rows = np.minimum((keys * n_data).astype(np.int64), n_data - 1)
    elif minibatch:  # each pass's n uniforms a subset of their own
        rows = np.empty((n_steps, n_chains * passes, batch_size), dtype=np.int64)
        choose_rows(keys.reshape(rows.shape), n_data, rows, np.zeros(n_data, dtype=np.bool_))
        rows = rows.reshape(keys.shape)
    else:
        rows = np.tile(np.arange(n_data), passes).reshape(1, 1, passes * n_data)
    return rows, normals, accept


def _clipped(path: np.ndarray) -> np.ndarray:
    """The clipped eigenvalues (c, m) of a block's clipped counts, whose flags (full draws, eigendecomposed ones:
    :data:`~sgmcmc.engine.codes.CLIP_DRAW`) go to :data:`sgmcmc.noise.clip_counters`."""
    clip_counters.draws += int(np.count_nonzero(path & CLIP_DRAW))
    clip_counters.fallbacks += int(np.count_nonzero(path & CLIP_FALLBACK))
    return path & (CLIP_DRAW - 1)


def compile_reason(error: Exception) -> str:
    """One line of why numba refused a block: the innermost of its nested typing errors (what it could not type) and
    where, in the first file of the model's the error names (not numba's, not the engine's)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    causes = [after for before, after in zip(lines, lines[1:]) if before.endswith("(step: nopython frontend)")]
    causes += [line.removeprefix("TypingError:").strip() for line in lines
               if line.startswith("TypingError:") and "Failed in nopython" not in line]
    specific = [cause for cause in causes if not cause.startswith(("No implementation of function", "Failed in"))]
    reason = (specific or causes or lines or [type(error).__name__])[-1]
    places = [line for line in lines if line.startswith('File "') and "site-packages" not in line
              and "sgmcmc/engine" not in line and "<string>" not in line]
    return f"{reason}; {places[-1].removesuffix(':')}" if places else reason


@dataclass(frozen=True)
class Blocks:
    """A sampler's integrator on a target's gradient source, as a block runner ``blocks(rng, state, step_sizes, start)
    -> Block``.

    ``step`` is the integrator (a :class:`~sgmcmc.engine.static.StaticFunction` of
    :mod:`sgmcmc.engine.integrators`), ``source`` the gradient source, ``parameters`` (metric, its parameters, the
    sampler's constants), ``options`` and ``variance`` what the integrator takes; ``momentum`` and ``xi`` whether the state has them; ``n_data`` and ``batch_size`` the
    minibatch (``n_data`` 0 for a density model: no rows; ``replacement``: drawn with replacement); ``clip`` whether
    the clipped counts are reported.

    ``carry`` names the :class:`~sgmcmc.state.SamplerState` field (c, d) the integrator carries from step to step
    (BAOAB's kept ``gradient``, pSGLD's ``preconditioner``), handed over from block to block in the state; None for
    none. A state without it starts from zeros (pSGLD's V₀ = 0), or, with ``first_pass``, from what the integrator
    takes in a pass of its own before the block's steps (:meth:`first_carry`: BAOAB's F(θ₀)); a block that fails at
    its first step (or in that pass) returns the state it was given.

    ``running`` is the gradient estimator's running noise estimate (:data:`~sgmcmc.engine.estimators.RUNNING_FULL`,
    ``RUNNING_DIAGONAL`` or ``NO_RUNNING``), whose state (t, Î_t) is the :class:`~sgmcmc.state.SamplerState`'s
    ``noise_count`` and ``noise`` (c, d, d) or (c, d), handed to the blocks as each chain's estimator memory.
    A gradient estimator with a state of its own per chain (SVRG's count, θ̂ and ḡ(θ̂)), or a target whose prior takes
    each chain's hyperparameters (the BNN's and BPMF's Gibbs-drawn precisions), hands over ``estimator_state``,
    ``n_chains -> (c, estimator_size)``, that state at a block's start, which follows the running estimate's in each
    chain's memory. ``advanced(gradients, state)``, where the target hands one over, is told the gradients each block
    took (its steps times ``passes``) and that state after them (the estimator keeps it, and counts its cost).

    ``batches``, for a model that packs its own minibatches (online LDA's document stream:
    :func:`~sgmcmc.engine.estimators.batch_estimate`), or a data model that sweeps its rows in order
    (:meth:`~sgmcmc.targets.data.DataTarget.sweep_batches`), ``batches(n_steps, n_chains, start)`` → rows (n_steps, c,
    n) int64, the minibatches of steps ``start + 1 …``, taken at a block's start (the stream is advanced by steps, the
    sweep is a function of the step, neither draws from the Generator); None: a data model's minibatches are drawn
    (``n_data``, ``batch_size``), a density model has none.

    ``passes``: the gradients of a step with a minibatch of their own (a trajectory's, :func:`block_draws`); the
    integrator takes each its equal share of the step's rows.

    ``first_slot``: the first of a step's normal slots drawn, 1 where nothing reads the gradient-noise slot (a data
    model's gradient noise is its minibatch), which is then 0: half the normals of SGLD's or SGHMC's step, the part of
    a step that grows with d alongside the update itself.

    ``silent`` blocks (:meth:`without_noise`) inject no noise: the cyclical schedule's exploration steps.

    ``reflect`` is the target's reflection into its support (its ``engine_functions()["reflect"]``, SPEC §4.8), a
    :class:`~sgmcmc.engine.static.StaticFunction` ``reflect(θ, r) -> count``: it maps one chain's θ (d,) back into the
    support in place, flips r's entries of the coordinates it reflected (r is empty for a sampler without momentum)
    and returns how many it reflected. The block hands it to the integrator as the source's last slot
    (``source[-1]``, whatever the estimator's source holds), which calls it right after each move of θ, and returns the counts per step as :attr:`Block.reflected` (c, K). None for a target on all
    of R^d: :func:`no_reflection`, and no counts."""

    step: StaticFunction
    source: tuple
    parameters: tuple
    options: tuple
    variance: np.ndarray
    momentum: bool = False
    xi: bool = False
    n_data: int = 0
    batch_size: int = 0
    clip: bool = False
    slots: int = 2
    uniforms: bool = False
    backend: str = COMPILED
    carry: Optional[str] = None
    first_pass: bool = False
    running: int = NO_RUNNING
    advanced: Optional[Callable] = None
    estimator_state: Optional[Callable] = None
    estimator_size: int = 0
    silent: bool = False
    replacement: bool = False
    reflect: Optional[StaticFunction] = None
    batches: Optional[Callable] = None
    passes: int = 1
    replay: Optional[dict] = None
    first_slot: int = 0

    def __post_init__(self):
        object.__setattr__(self, "options", tuple(int(option) for option in self.options))
        if self.backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {self.backend!r}")
        # compiled code does not check its indices: a V̂ of the wrong shape would be written out of its bounds
        shape = np.shape(self.variance)
        full = self.options[1] == FULL_ESTIMATE or self.running == RUNNING_FULL
        if len(shape) != 2 or shape[0] not in (1, shape[1]) or (full and shape[0] != shape[1]):
            raise ValueError(f"variance must be (d, d) where V̂ enters in full, else (d, d) or (1, d); got shape "
                             f"{np.shape(self.variance)} with mode {self.options[1]}")

    def without_noise(self, drawn: bool = True) -> "Blocks":
        """These blocks without their injected noise, for an integrator whose injected noise is slot 1 of a step's
        normals (SGLD's, SGHMC's): every random number is drawn as before and that slot then set to 0, with V̂ left
        out of the injected covariance (nothing to refuse or clip), so a step is the sampler's drift alone (SGLD
        θ' = θ − ε∇Ũ, SGHMC SGD with momentum; Zhang et al. 2020, Algorithm 1's exploration). With ``drawn`` False
        (an optimiser, never noisy) that slot is not drawn either where it is the last slot and the only one drawn
        (:attr:`first_slot`): on a data model such blocks draw their minibatches alone."""
        first_slot = self.slots if not drawn and self.first_slot == self.slots - 1 == 1 else self.first_slot
        return replace(self, silent=True, options=(self.options[0], NO_ESTIMATE, 0, self.options[3]),
                       first_slot=first_slot)

    def compile_error(self, dim: int) -> Optional[str]:
        """Compile the block for ``dim`` coordinates (a block of no steps, drawing nothing from the run's Generator):
        None, or the compiler's first line where it refuses a function (then the Python backend runs them)."""
        if self.backend == PYTHON:
            return None
        state = SamplerState(theta=np.zeros((1, dim)), momentum=np.zeros((1, dim)), xi=np.zeros(1))
        try:
            self(np.random.default_rng(0), state, np.zeros(0), 0)
        except numba.core.errors.NumbaError as error:
            return compile_reason(error)
        return None

    def first_carry(self, rng: np.random.Generator, state, start: int = 0) -> Block:
        """The pass of one step that moves nothing and takes the carried vector at θ (options[3] =
        :data:`~sgmcmc.engine.integrators.FIRST_CARRY`), its random numbers drawn as a step's: its block's state has
        that vector (its running noise estimate advanced by the pass's minibatch)."""
        first = replace(self, options=(*self.options[:3], FIRST_CARRY), first_pass=False)
        return first(rng, state._replace(**{self.carry: np.zeros(np.shape(state.theta))}), np.zeros(1), start)

    def draws(self, rng: np.random.Generator, n_steps: int, n_chains: int, dim: int) -> tuple:
        """The random numbers of a block of ``n_steps`` as these blocks draw them (:func:`block_draws`): (rows,
        normals, uniforms)."""
        return block_draws(rng, n_steps, n_chains, dim, self.slots, self.uniforms, self.n_data, self.batch_size,
                           self.replacement, self.passes, self.first_slot)

    def __call__(self, rng: np.random.Generator, state, step_sizes: np.ndarray, start: int) -> Block:
        given = state
        if self.first_pass and getattr(state, self.carry) is None and np.size(step_sizes):
            first = self.first_carry(rng, state, start)
            if first.status is not None:
                return replace(first, state=given)
            state = first.state
        carry0 = self._carried(state)
        theta0 = np.ascontiguousarray(state.theta, dtype=float)
        n_chains, dim = theta0.shape
        if self.variance.shape[1] != dim:
            raise ValueError(f"variance has {self.variance.shape[1]} columns for a state of dimension {dim}")
        step_sizes = np.ascontiguousarray(step_sizes, dtype=float)
        n_steps = step_sizes.size
        momentum0 = np.ascontiguousarray(state.momentum, dtype=float) if self.momentum else np.zeros((n_chains, 0))
        xi0 = np.ascontiguousarray(state.xi, dtype=float).reshape(n_chains, 1) if self.xi else np.zeros((n_chains, 0))
        memory = self._memory(state, n_chains, dim, n_steps)
        rows, normals, uniforms = self.draws(rng, n_steps, n_chains, dim)
        if self.batches is not None:  # a block of no steps (compile_error's) takes no minibatch from the stream
            rows = self.batches(n_steps, n_chains, start) if n_steps else np.zeros((1, 1, 1), dtype=np.int64)
        if self.silent:
            normals[:, 1] = 0.0
        theta_path = np.empty((n_chains, n_steps, dim))
        momentum_path = np.empty((n_chains, n_steps if self.momentum else 0, dim))
        xi_path = np.empty((n_chains, n_steps if self.xi else 0))
        carry_path = np.empty((n_chains, n_steps if self.carry else 0, carry0.shape[1]))
        clipped_path = np.zeros((n_chains, n_steps), dtype=np.int64)
        reflected_path = np.zeros((n_chains, n_steps if self.reflect is not None else 0), dtype=np.int64)
        accept_path = np.empty((n_chains, n_steps if self.uniforms else 0))
        bad_step, bad_code = np.empty(n_chains, dtype=np.int64), np.empty(n_chains, dtype=np.int64)
        arguments = (self.parameters, self.options, self.variance, theta0, momentum0, xi0, carry0, memory, normals,
                     uniforms, rows, step_sizes, theta_path, momentum_path, xi_path, carry_path, clipped_path,
                     reflected_path, accept_path, bad_step, bad_code)
        reflect = NO_REFLECTION if self.reflect is None else self.reflect
        with bindings(self.source, self.parameters):  # the model's functions called in Python: this block's own
            if self.replay is not None:
                self._replayed(reflect, arguments)
            else:
                source = (*self.source, reflect)
                self._runner(source, arguments)(source, arguments)
        return self._block(given, state, start, step_sizes, theta_path, momentum_path, xi_path, carry_path,
                           clipped_path, reflected_path, accept_path, bad_step, bad_code, memory)

    def _runner(self, source: tuple, arguments: tuple) -> Callable:
        """``run(source, arguments)``: run_block on arguments of these types, compiled (its entry point found once) or
        as plain Python (:attr:`backend`)."""
        if self.backend == COMPILED:
            entry = _compiled_entry(self.step, source, arguments)
            return lambda source, arguments: entry(self.step, source, *arguments)
        parameters = python_source(self.parameters)
        return lambda source, arguments: run_block.py_func(self.step.python, python_source(source), parameters,
                                                           *arguments[1:])

    def _replayed(self, reflect: StaticFunction, arguments: tuple) -> None:
        """The block step by step, each step run again until the model has answered every chain's calls
        (:mod:`sgmcmc.engine.replay`): the same arguments and paths as one run_block call, and the same samples."""
        (parameters, options, variance, theta, momentum, xi, carry, memory, normals, uniforms, rows, step_sizes,
         theta_path, momentum_path, xi_path, carry_path, clipped_path, reflected_path, accept_path, bad_step,
         bad_code) = arguments
        n_chains, n_steps = theta.shape[0], step_sizes.size
        replay = Replay(self.replay, n_chains, theta.shape[1], rows.shape[2])
        source = (*self.source, replay.table(), reflect)
        run = self._runner(source, arguments)  # compile_error's block of no steps: compiled, nothing run
        if n_steps == 0:
            run(source, arguments)
            return
        paths = [np.empty((n_chains, 1) + path.shape[2:]) if path.shape[1] else path
                 for path in (theta_path, momentum_path, xi_path, carry_path, accept_path)]
        counts = [np.zeros((n_chains, 1 if path.shape[1] else 0), dtype=np.int64)
                  for path in (clipped_path, reflected_path)]
        chains = np.arange(n_chains)
        for k in range(n_steps):
            replay.clear()
            saved = memory.copy()
            while True:
                memory[:, -TAIL] = chains
                memory[:, -1] = 0
                run((*self.source, replay.table(), reflect),
                    (parameters, options, variance, theta, momentum, xi, carry, memory, normals[k:k + 1],
                     uniforms[k:k + 1] if uniforms.shape[0] else uniforms,
                     rows if rows.shape[0] == 1 else rows[k:k + 1], step_sizes[k:k + 1], *paths[:4], *counts, paths[4],
                     bad_step, bad_code))
                if not replay.fill():
                    break
                memory[:] = saved
            for whole, path in zip((theta_path, momentum_path, xi_path, carry_path, accept_path, clipped_path,
                                    reflected_path), (*paths, *counts)):
                if path.shape[1]:
                    whole[:, k] = path[:, 0]
            failed = bad_step < 1
            if failed.any():
                bad_step[failed], bad_step[~failed] = k, n_steps
                bad_code[~failed] = OK
                return
            # copies: the one-step paths are written again by the next step's passes
            theta = paths[0][:, 0].copy()
            momentum = paths[1][:, 0].copy() if momentum.shape[1] else momentum
            xi = paths[2][:, :1].copy() if xi.shape[1] else xi
            carry = paths[3][:, 0].copy() if carry.shape[1] else carry
        bad_step[:] = n_steps

    def _memory(self, state, n_chains: int, dim: int, n_steps: int) -> np.ndarray:
        """Each chain's estimator memory (c, m): (t, Î_t) of a running noise estimate (zeros where the state has none
        yet), then the estimator's own state (:attr:`estimator_state`, asked for only by a block with steps)."""
        size = running_size(self.running, dim)
        memory = np.zeros((n_chains, size + self.estimator_size + (TAIL if self.replay is not None else 0)))
        if size and state.noise is not None:
            memory[:, 0] = state.noise_count
            memory[:, 1:size] = np.reshape(state.noise, (n_chains, size - 1))
        if self.estimator_state is not None and n_steps:
            memory[:, size:size + self.estimator_size] = self.estimator_state(n_chains)
        return memory

    def _carried(self, state) -> np.ndarray:
        """The state's carried vector (c, m): zeros where it has none, (c, 0) without :attr:`carry`."""
        if self.carry is None:
            return np.zeros((state.theta.shape[0], 0))
        carry0 = getattr(state, self.carry)
        return np.zeros(np.shape(state.theta)) if carry0 is None else np.ascontiguousarray(carry0, dtype=float)

    def _block(self, given, state, start, step_sizes, theta_path, momentum_path, xi_path, carry_path, clipped_path,
               reflected_path, accept_path, bad_step, bad_code, memory) -> Block:
        first, status, error = first_failure(bad_step, bad_code, step_sizes.size, start)
        if self.advanced is not None and first:
            self.advanced(first * self.passes, memory[:, running_size(self.running, state.theta.shape[1]):][
                :, :self.estimator_size])
        theta = np.ascontiguousarray(theta_path[:, :first])
        momentum = np.ascontiguousarray(momentum_path[:, :first]) if self.momentum else None
        xi = np.ascontiguousarray(xi_path[:, :first]) if self.xi else None
        new_state = given
        if first:
            carried = {self.carry: carry_path[:, first - 1].copy()} if self.carry else {}
            if self.running != NO_RUNNING:
                shape = (state.theta.shape[0], *(2 * state.theta.shape[1:] if self.running == RUNNING_FULL else
                                                 state.theta.shape[1:]))
                size = running_size(self.running, state.theta.shape[1])
                carried.update(noise=memory[:, 1:size].reshape(shape), noise_count=int(memory[0, 0]))
            new_state = state._replace(theta=theta[:, -1].copy(),
                                       momentum=momentum[:, -1].copy() if self.momentum else state.momentum,
                                       xi=xi[:, -1].copy() if self.xi else state.xi, **carried)
        return Block(start, start + first, step_sizes[:first], theta, new_state, momentum=momentum, xi=xi,
                     clipped=_clipped(clipped_path[:, :first]) if self.clip else None,
                     accept_probability=np.ascontiguousarray(accept_path[:, :first]) if self.uniforms else None,
                     reflected=np.ascontiguousarray(reflected_path[:, :first]) if self.reflect is not None else None,
                     status=status, error=error)
