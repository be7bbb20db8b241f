"""Every sampler × every synthetic target at its default settings (``python run.py sampler=<s> target=<t>``'s
composed config): chain-steps per second with 1 and 1,000 vectorised chains, and the peak memory numpy
allocated during the measurement (tracemalloc, which numpy reports to). Combinations a config refuses (e.g. a
running noise estimate on a target without data) are listed with the one-line reason."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from sgmcmc.config import ConfigError

TOY_TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec",
               "welling_teh_mixture", "normal_gamma")
CHAINS = (1, 1000)


def measure(sampler_name: str, target_name: str, n_chains: int, n_steps: int) -> dict:
    """Time ``n_steps`` sampler steps (after 20 untimed ones) of ``n_chains`` chains."""
    from experiments.common import compose
    from sgmcmc.experiment import build

    row = {"sampler": sampler_name, "target": target_name, "n_chains": n_chains}
    try:
        built = build(compose([f"sampler={sampler_name}", f"target={target_name}", f"run.n_chains={n_chains}"]))
    except ConfigError as error:
        return {**row, "skipped": str(error)}
    sampler, target, step_size = built.sampler, built.target, built.schedule(0)
    rng = np.random.default_rng(0)
    state = sampler.init(target.initial_position(n_chains, rng), rng)
    with np.errstate(all="ignore"):
        for _ in range(20):
            state, _ = sampler.step(rng, state, step_size)
        tracemalloc.start()
        start = time.perf_counter()
        for _ in range(n_steps):
            state, _ = sampler.step(rng, state, step_size)
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {**row, "steps_timed": n_steps, "chain_steps_per_second": n_steps * n_chains / seconds,
            "steps_per_second": n_steps / seconds, "peak_traced_mb": peak / 2**20,
            "finite": bool(np.isfinite(state.theta).all())}


def run_all(samplers, steps_one_chain: int = 2000, steps_many_chains: int = 200) -> list[dict]:
    rows = []
    for target in TOY_TARGETS:
        for sampler in samplers:
            for n_chains in CHAINS:
                rows.append(measure(sampler, target, n_chains, steps_one_chain if n_chains == 1 else steps_many_chains))
    return rows
