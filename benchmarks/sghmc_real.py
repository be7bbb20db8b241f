"""Speed of the SGHMC paper's real-data targets (issue 19; SPEC T11, T12): steps per second and peak numpy memory of
SGD, SGD with momentum, SGLD and SGHMC at their pair defaults, 1 chain, through :func:`sgmcmc.runner.run_chains` (the
path of a real run: the minibatch draw, the gradient, the noise over every coordinate, and the Gibbs steps of the
precisions and the averaged test-set predictive where their intervals fall inside the timed steps: the BNN's every
100 steps, BPMF's every 2,000, so not within BPMF's timed steps), and the ratio to the bare minibatch gradient
(:meth:`stochastic_gradient` alone), the floor of this work.

- ``bnn_mnist``: 784–100–10, d = 79,510, minibatches of 500 (needs the MNIST files);
- ``bpmf_movielens``: latent 20 plus biases, minibatches of 4,000 ratings, on the real ``ratings.dat`` when it is in
  the data folder, else on the full-size synthetic set (6,040 × 3,706, about 10⁶ ratings), written once into the
  cache folder.

Peak memory is what numpy allocated during the timed run (tracemalloc), the data set excluded.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np

from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant

METHODS = ("sgd", "sgd_momentum", "sgld", "sghmc")


def pair_defaults(target_name: str, sampler_name: str, overrides=()) -> tuple[dict, dict, float]:
    """(target parameters, sampler parameters, step size) of ``python run.py target=<t> sampler=<s>`` (the composed
    config, with the pair's defaults)."""
    from experiments.common import compose

    config = compose([f"target={target_name}", f"sampler={sampler_name}", *overrides])
    target = {key: value for key, value in config["target"].items() if key != "name"}
    sampler = {key: value for key, value in config["sampler"].items() if key not in ("name", "step_size")}
    return target, sampler, float(config["sampler"]["step_size"])


def measure(target, sampler_name: str, sampler_params: dict, step_size: float, n_steps: int) -> dict:
    """One timed run of ``n_steps`` (after a 20-step warm-up) and the bare gradient's time per step."""
    sampler = make_sampler(sampler_name, target, **sampler_params)
    warm = RunOptions(n_steps=20, n_chains=1, burn_in=0, thin=20, eval_every=20, progress=False)
    run_chains(sampler, Constant(step_size), warm, np.random.default_rng(1))
    settings = RunOptions(n_steps=n_steps, n_chains=1, burn_in=n_steps // 2, thin=n_steps, eval_every=n_steps,
                           progress=False)
    tracemalloc.start()
    start = time.perf_counter()
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(0))
    elapsed = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rng, theta = np.random.default_rng(2), target.initial_position(1, np.random.default_rng(3))
    start = time.perf_counter()
    for _ in range(n_steps):
        target.stochastic_gradient(theta, rng)
    bare = (time.perf_counter() - start) / n_steps
    return {"sampler": sampler_name, "dim": target.dim, "steps_timed": n_steps, "status": outcome.status,
            "seconds_per_step": elapsed / n_steps, "steps_per_second": n_steps / elapsed,
            "bare_gradient_seconds": bare, "ratio_to_bare_gradient": elapsed / n_steps / bare,
            "peak_numpy_mb": peak / 2**20}


def bnn_rows(n_steps: int) -> list[dict]:
    from sgmcmc.targets import make_target

    rows = []
    for name in METHODS:
        target_params, sampler_params, step_size = pair_defaults("bnn_mnist", name)
        target = make_target("bnn_mnist", **target_params)
        rows.append({"target": "bnn_mnist", **measure(target, name, sampler_params, step_size, n_steps)})
    return rows


def bpmf_rows(n_steps: int) -> list[dict]:
    from experiments.sghmc_bpmf import synthetic_file
    from sgmcmc.data import DataError
    from sgmcmc.data.folder import resolve_cache_dir
    from sgmcmc.data.movielens import ratings_path
    from sgmcmc.targets import make_target

    try:
        real = ratings_path().is_file()
    except DataError:
        real = False
    extra = [] if real else [f"target.ratings_file={synthetic_file('full', resolve_cache_dir())}"]
    rows = []
    for name in METHODS:
        target_params, sampler_params, step_size = pair_defaults("bpmf_movielens", name, extra)
        target = make_target("bpmf_movielens", **target_params)
        rows.append({"target": "bpmf_movielens", "ratings": "MovieLens-1M" if real else "synthetic (full size)",
                     **measure(target, name, sampler_params, step_size, n_steps)})
    return rows


def run_all(n_steps: int) -> list[dict]:
    """The BNN rows (skipped without MNIST) and the BPMF rows."""
    from sgmcmc.data import DataError

    rows = []
    try:
        rows += bnn_rows(n_steps)
    except DataError as error:
        rows.append({"target": "bnn_mnist", "skipped": str(error)})
    return rows + bpmf_rows(n_steps)
