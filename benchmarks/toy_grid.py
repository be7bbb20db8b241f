"""Every sampler × every synthetic target at its default settings (``python run.py sampler=<s> target=<t>``'s
composed config): chain-steps per second with 1 and 1,000 vectorised chains through the run loop
(:func:`sgmcmc.runner.run_chains`: the compiled blocks where the sampler declares a kernel for the target, else the
numpy steps; ``compiled`` says which), and the peak memory numpy allocated during the measurement (tracemalloc, which
numpy reports to). Combinations a config refuses (e.g. a running noise estimate on a target without data) are listed
with the one-line reason."""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from sgmcmc.config import ConfigError

TOY_TARGETS = ("gaussian_1d", "double_well", "lecture_quartic", "correlated_2d", "gaussian_2d_cov", "gaussian_2d_prec",
               "welling_teh_mixture", "normal_gamma")
CHAINS = (1, 1000)


def measure(sampler_name: str, target_name: str, n_chains: int, n_steps: int) -> dict:
    """Time a run of ``n_steps`` steps of ``n_chains`` chains (after an untimed run of 20 steps, which loads the
    compiled kernels); no samples kept (burn-in = the whole run), one trace row."""
    from experiments.common import compose
    from sgmcmc.engine.blocks import kernel_of
    from sgmcmc.experiment import build
    from sgmcmc.config import RunOptions
    from sgmcmc.runner import run_chains

    row = {"sampler": sampler_name, "target": target_name, "n_chains": n_chains}
    try:
        built = build(compose([f"sampler={sampler_name}", f"target={target_name}", f"run.n_chains={n_chains}"]))
    except ConfigError as error:
        return {**row, "skipped": str(error)}

    def run(steps: int):
        settings = RunOptions(n_steps=steps, n_chains=n_chains, burn_in=steps, eval_every=steps, progress=False)
        return run_chains(built.sampler, built.schedule, settings, np.random.default_rng(0))

    with np.errstate(all="ignore"):
        run(20)
        tracemalloc.start()
        start = time.perf_counter()
        outcome = run(n_steps)
        seconds = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    steps = max(outcome.steps_done, 1)  # a diverged run stops early: its steps are what was timed
    return {**row, "compiled": kernel_of(built.sampler) is not None, "steps_timed": outcome.steps_done,
            "chain_steps_per_second": steps * n_chains / seconds, "steps_per_second": steps / seconds,
            "peak_traced_mb": peak / 2**20, "status": outcome.status,
            "finite": outcome.status == "completed" and bool(np.isfinite(outcome.final_theta).all())}


def run_all(samplers, steps_one_chain: int = 2000, steps_many_chains: int = 200) -> list[dict]:
    rows = []
    for target in TOY_TARGETS:
        for sampler in samplers:
            for n_chains in CHAINS:
                rows.append(measure(sampler, target, n_chains, steps_one_chain if n_chains == 1 else steps_many_chains))
    return rows
