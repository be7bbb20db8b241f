"""A block of steps: every chain advanced from step ``start`` to ``stop``, with its whole path.

Two ways to run one, which give the same samples for the same random numbers:

- :func:`numpy_block`, the reference: ``sampler.step`` once per step (any sampler, any target);
- :class:`CompiledBlocks`, where the sampler declares a compiled kernel for its target
  (:meth:`sgmcmc.samplers.base.Sampler.compiled_kernel`): the block's standard normals are drawn with the run's
  Generator in one call, in the order the numpy steps draw them, and one numba kernel advances all chains.

Both stop at the first step that leaves a non-finite state (status ``diverged``) or whose injected covariance is
not positive semidefinite (status ``failed``), keeping the steps before it; the Generator has then moved on, and the
run ends there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from sgmcmc.engine import codes
from sgmcmc.recipe import RecipeError
from sgmcmc.state import SamplerState

DIVERGED, FAILED = "diverged", "failed"
# False runs every sampler on its numpy steps: for tests that put a deliberate bug into a numpy step to show that a
# statistical test catches it (the compiled kernels are pinned to the numpy steps, so what is caught there is caught).
COMPILED = True


def kernel_of(sampler) -> "Optional[CompiledKernel | DataKernel]":
    """The sampler's compiled kernel for its target: the engine's blocks (:class:`sgmcmc.engine.driver.Blocks`) where
    the target hands the engine its functions, a :class:`CompiledKernel`, or a
    :class:`~sgmcmc.engine.data_blocks.DataKernel` on a data target, or None for the numpy steps (or when
    :data:`COMPILED` is off)."""
    if not COMPILED:
        return None
    blocks = sampler.engine_blocks()
    return blocks if blocks is not None else sampler.compiled_kernel()


@dataclass
class Block:
    """Steps ``start + 1 .. stop`` of every chain: the paths (chains first), per-step diagnostics, the final state.

    ``theta`` is (c, m, d) with m = stop − start; ``momentum`` (c, m, d) and ``xi`` (c, m) where the sampler has
    them; ``accept_probability``, ``clipped`` and ``reflected`` are (c, m) where the step reports them. ``status``
    is None, ``diverged`` or ``failed`` (then ``error`` says why and ``stop`` is the last good step).
    """

    start: int
    stop: int
    step_sizes: np.ndarray
    theta: np.ndarray
    state: SamplerState
    momentum: Optional[np.ndarray] = None
    xi: Optional[np.ndarray] = None
    accept_probability: Optional[np.ndarray] = None
    clipped: Optional[np.ndarray] = None
    reflected: Optional[np.ndarray] = None
    status: Optional[str] = None
    error: Optional[str] = None
    # steps of the cyclical schedule's exploration phase (no injected noise): the observers keep no samples of them
    exploring: bool = False


def _finite(state: SamplerState) -> bool:
    return all(np.isfinite(part).all() for part in state if part is not None and not isinstance(part, int))


def _non_finite_chains(state: SamplerState) -> np.ndarray:
    """Which chains have a non-finite θ, r, ξ, pSGLD's running average or BAOAB's kept gradient (n,): the fields the
    compiled kernels check."""
    bad = np.zeros(state.theta.shape[0], dtype=bool)
    for part in (state.theta, state.momentum, state.xi, state.preconditioner, state.gradient):
        if part is not None:
            bad |= ~np.isfinite(part.reshape(part.shape[0], -1)).all(axis=1)
    return bad


def _stack(rows: list, dtype=float) -> Optional[np.ndarray]:
    """(m, c, …) rows → (c, m, …); None when the step reports nothing."""
    if not rows or rows[0] is None:
        return None
    return np.moveaxis(np.asarray(rows, dtype=dtype), 0, 1)


def numpy_block(sampler, rng: np.random.Generator, state: SamplerState, step_sizes: np.ndarray, start: int,
                stop_requested: Callable[[], bool] = lambda: False) -> Block:
    """The reference path: ``sampler.step`` for each step size in turn; ends early (a shorter block, no status) when
    ``stop_requested()`` says so before a step."""
    paths = {"theta": [], "momentum": [], "xi": [], "accept_probability": [], "clipped": [], "reflected": []}
    status = error = None
    done = 0
    for step_size in step_sizes:
        if done and stop_requested():
            break
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                new_state, info = sampler.step(rng, state, float(step_size))
        except RecipeError as failure:
            status, error = FAILED, f"step {start + done + 1}: {failure}"
            break
        if not _finite(new_state):
            bad = _non_finite_chains(new_state)
            status = DIVERGED
            error = f"non-finite state at step {start + done + 1} in {int(bad.sum())} of {state.theta.shape[0]} chains"
            break
        state = new_state
        done += 1
        paths["theta"].append(state.theta)
        paths["momentum"].append(state.momentum)
        paths["xi"].append(state.xi)
        paths["accept_probability"].append(info.accept_probability)
        paths["clipped"].append(info.clipped)
        paths["reflected"].append(info.reflected)
    n_chains, dim = state.theta.shape
    theta = _stack(paths["theta"]) if done else np.empty((n_chains, 0, dim))
    return Block(start, start + done, np.asarray(step_sizes[:done], dtype=float), theta, state,
                 momentum=_stack(paths["momentum"]), xi=_stack(paths["xi"]),
                 accept_probability=_stack(paths["accept_probability"]), clipped=_stack(paths["clipped"], int),
                 reflected=_stack(paths["reflected"], int), status=status, error=error)


@dataclass(frozen=True)
class CompiledKernel:
    """A sampler's compiled block: ``run(state, normals, step_sizes[, uniforms]) -> (paths, bad_step, bad_code)``, with
    ``paths`` a dict of (c, K, …) arrays (``theta``, optionally ``momentum``, ``xi``, ``clipped``,
    ``accept_probability``), and the state fields it carries (``momentum``, ``xi``). ``clip`` says whether the clipped
    counts are reported. Each step draws ``normal_slots`` standard normal arrays (c, d) and, with ``uniforms``, then
    one uniform per chain (the Metropolis–Hastings test): the numpy steps' order.

    ``state_paths`` names further :class:`~sgmcmc.state.SamplerState` fields the kernel carries from step to step
    (BAOAB's kept ``gradient``, pSGLD's RMSProp ``preconditioner``): the kernel writes each one's per-step values
    (c, K, …) under that name in ``paths``, and the block's final state takes the value at its last good step. They
    are the state, not samples: the :class:`Block` does not expose them.

    ``prepare(rng, state) -> state``, when given, runs before a block's normals are drawn and fills a carried field
    the state lacks, drawing from the run's Generator as the numpy step draws it first (BAOAB's gradient at θ₀ on
    a run's first step); a block that fails at its first step returns the state as it was given."""

    run: Callable
    has_momentum: bool
    has_xi: bool
    clip: bool
    normal_slots: int = 2
    uniforms: bool = False
    state_paths: tuple = ()
    prepare: Optional[Callable] = None


class CompiledBlocks:
    """Runs a sampler's :class:`CompiledKernel` on blocks whose normals come from the run's Generator."""

    def __init__(self, kernel: CompiledKernel):
        self.kernel = kernel

    def __call__(self, rng: np.random.Generator, state: SamplerState, step_sizes: np.ndarray, start: int) -> Block:
        n_chains, dim = state.theta.shape
        step_sizes = np.ascontiguousarray(step_sizes, dtype=float)
        given = state
        if self.kernel.prepare is not None and step_sizes.size:
            state = self.kernel.prepare(rng, state)
        shape = (self.kernel.normal_slots, n_chains, dim)
        if not self.kernel.uniforms:  # normals only: one call is the same stream as one call per step
            normals = rng.standard_normal((step_sizes.size, *shape))
            paths, bad_step, bad_code = self.kernel.run(state, normals, step_sizes)
        else:  # normals, then a uniform per chain, step after step
            normals, uniforms = np.empty((step_sizes.size, *shape)), np.empty((step_sizes.size, n_chains))
            for k in range(step_sizes.size):
                normals[k] = rng.standard_normal(shape)
                uniforms[k] = rng.random(n_chains)
            paths, bad_step, bad_code = self.kernel.run(state, normals, step_sizes, uniforms)
        first, status, error = first_failure(bad_step, bad_code, step_sizes.size, start)
        paths = {name: np.ascontiguousarray(path[:, :first]) for name, path in paths.items()}
        if first == 0:
            new_state = given
        else:
            new_state = state._replace(
                theta=paths["theta"][:, -1].copy(),
                momentum=paths["momentum"][:, -1].copy() if self.kernel.has_momentum else state.momentum,
                xi=paths["xi"][:, -1].copy() if self.kernel.has_xi else state.xi,
                **{name: paths[name][:, -1].copy() for name in self.kernel.state_paths})
        return Block(start, start + first, step_sizes[:first], paths["theta"], new_state,
                     momentum=paths.get("momentum"), xi=paths.get("xi"), accept_probability=paths.get("accept_probability"),
                     clipped=paths["clipped"] if self.kernel.clip else None, status=status, error=error)


def first_failure(bad_step: np.ndarray, bad_code: np.ndarray, n_steps: int, start: int) -> tuple[int, Optional[str], Optional[str]]:
    """(the first failed step of a compiled block, K for none; its status; the message) from the kernel's per-chain
    records: ``failed`` where a chain failing there had an injected covariance that is not PSD, else ``diverged``."""
    n_chains = bad_step.size
    first = int(bad_step.min()) if n_chains else n_steps
    if first >= n_steps:
        return first, None, None
    failing = bad_step == first
    if np.any(bad_code[failing] == codes.NOT_PSD):
        return first, FAILED, (f"step {start + first + 1}: injected noise covariance eps*(2D - eps*B) is not positive "
                               "semidefinite; reduce the step size or the noise estimate")
    return first, DIVERGED, f"non-finite state at step {start + first + 1} in {int(failing.sum())} of {n_chains} chains"


def gradient_noise_mode(covariance) -> tuple[int, np.ndarray, np.ndarray]:
    """How a known V̂ (None or (d, d)) enters the kernels' injected covariance, as ``sgmcmc.noise`` decides it:
    (mode, its diagonal, the matrix)."""
    if covariance is None:
        return codes.NO_ESTIMATE, np.zeros(1), np.zeros((1, 1))
    covariance = np.ascontiguousarray(covariance, dtype=float)
    off_diagonal = covariance[~np.eye(covariance.shape[0], dtype=bool)]
    if not np.any(off_diagonal):
        return codes.DIAGONAL_ESTIMATE, np.ascontiguousarray(np.diagonal(covariance)), covariance
    return codes.FULL_ESTIMATE, np.ascontiguousarray(np.diagonal(covariance)), covariance


def paths_for(n_chains: int, n_steps: int, dim: int, momentum: bool = False, xi: bool = False, accept: bool = False) -> dict:
    """Empty path arrays for a kernel, and the per-chain failure records (bad step, code)."""
    paths = {"theta": np.empty((n_chains, n_steps, dim)), "clipped": np.zeros((n_chains, n_steps), dtype=np.int64)}
    if momentum:
        paths["momentum"] = np.empty((n_chains, n_steps, dim))
    if xi:
        paths["xi"] = np.empty((n_chains, n_steps))
    if accept:
        paths["accept_probability"] = np.empty((n_chains, n_steps))
    return paths, np.empty(n_chains, dtype=np.int64), np.empty(n_chains, dtype=np.int64)
