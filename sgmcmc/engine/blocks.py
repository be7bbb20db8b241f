"""A block of steps: every chain advanced from step ``start`` to ``stop``, with its whole path.

Two ways to run one:

- the engine's blocks (:class:`sgmcmc.engine.driver.Blocks`): the block's random numbers are drawn with the run's
  Generator, and one block of the sampler's integrator (compiled, or its source run as Python) advances all chains;
- :func:`numpy_block`, the ``generic`` integrator: the recipe's step (``sampler.step``, Ma et al. 2015 Eq. 9 with +Γ)
  once per step, the oracle the integrators are pinned to.

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
# the per-step paths of a Block, (c, m, …) each
PATHS = ("theta", "momentum", "xi", "accept_probability", "clipped", "reflected")


def kernel_of(sampler, backend: str = "compiled") -> "Optional[Blocks]":
    """The sampler's blocks for its target on ``backend`` (``run.backend``: compiled, or the same source as Python):
    the engine's blocks (:class:`sgmcmc.engine.driver.Blocks`) where the target hands the engine its functions, or
    None where it cannot run them (the ``generic`` integrator, the recipe's step, runs any)."""
    return sampler.engine_blocks(backend)


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

    def parts(self, every: int) -> list["Block"]:
        """This block cut after each multiple of ``every`` inside it (the trace's rows), as the blocks of a run cut
        there: each part has its own steps' paths, and every part but the last a state of θ, r and ξ at its last
        step (the carried vector and the running noise estimate are known at the block's end only). The last part
        has the block's state, status and error; a block with no multiple of ``every`` inside it is ``[self]``. A block
        that failed in the step after a multiple of ``every`` ends with a part of no steps that has the failure, so
        that the row's part is a clean one (as a block ended at the row and a next one that failed at once)."""
        cuts = [*range((self.start // every + 1) * every, self.stop, every), self.stop]
        if self.status is not None and self.start < self.stop and self.stop % every == 0:
            cuts.append(self.stop)
        if len(cuts) == 1:
            return [self]
        parts, first = [], self.start
        for number, cut in enumerate(cuts):
            at = slice(first - self.start, cut - self.start)
            paths = {name: None if getattr(self, name) is None else np.ascontiguousarray(getattr(self, name)[:, at])
                     for name in PATHS}
            state, status, error = self.state, self.status, self.error
            if number < len(cuts) - 1:
                state, status, error = SamplerState(*(None if paths[name] is None else paths[name][:, -1].copy()
                                                      for name in ("theta", "momentum", "xi"))), None, None
            parts.append(Block(first, cut, self.step_sizes[at], state=state, status=status, error=error,
                               exploring=self.exploring, **paths))
            first = cut
        return parts


def _finite(state: SamplerState) -> bool:
    return all(np.isfinite(part).all() for part in state if part is not None and not isinstance(part, int))


def _non_finite_chains(state: SamplerState) -> np.ndarray:
    """Which chains have a non-finite θ, r, ξ, pSGLD's running average or BAOAB's kept gradient (n,): the fields the
    compiled blocks check."""
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
    """The generic recipe step, ``sampler.step``, for each step size in turn; ends early (a shorter block, no status) when
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
    """How a known V̂ (None or (d, d)) enters the kernels' injected covariance:
    (mode, its diagonal, the matrix)."""
    if covariance is None:
        return codes.NO_ESTIMATE, np.zeros(1), np.zeros((1, 1))
    covariance = np.ascontiguousarray(covariance, dtype=float)
    off_diagonal = covariance[~np.eye(covariance.shape[0], dtype=bool)]
    if not np.any(off_diagonal):
        return codes.DIAGONAL_ESTIMATE, np.ascontiguousarray(np.diagonal(covariance)), covariance
    return codes.FULL_ESTIMATE, np.ascontiguousarray(np.diagonal(covariance)), covariance
