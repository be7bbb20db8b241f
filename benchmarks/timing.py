"""Seconds per step of a sampler, wall and CPU: the timing the speed benchmarks share (:mod:`benchmarks.run`,
:mod:`benchmarks.estimators`)."""

from __future__ import annotations

import time

import numpy as np

from sgmcmc.engine.blocks import kernel_of
from sgmcmc.runner import block_steps


def timed_steps(sampler, theta, step_size: float, n_steps: int, warm_up: int) -> tuple[float, float]:
    """(wall, CPU) seconds per step from ``theta`` after ``warm_up`` untimed steps, on the sampler's blocks
    (:func:`~sgmcmc.engine.blocks.kernel_of`; blocks of the runner's size). The process's CPU time is the steadier of
    the two on a machine busy with other work (it still counts every thread it runs)."""
    rng = np.random.default_rng(0)
    state = sampler.init(theta, rng)
    kernel = kernel_of(sampler)
    if kernel is None:
        raise ValueError(f"{sampler.name} on {sampler.target.name} has no engine blocks to time")

    def advance(state, count):
        size = block_steps(*theta.shape, compiled=True)
        for start in range(0, count, size):
            state = kernel(rng, state, np.full(min(size, count - start), step_size), start).state
        return state

    state = advance(state, warm_up)

    def run():
        nonlocal state
        state = advance(state, n_steps)

    return timed(run, n_steps)


def timed(run, n_steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds of ``run()`` divided by ``n_steps``."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return (time.perf_counter() - wall) / n_steps, (time.process_time() - cpu) / n_steps
