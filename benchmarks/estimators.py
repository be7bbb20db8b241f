"""Cost per step of the gradient estimators and of the peer-parity samplers (issue 21), against plain minibatch SGLD
measured in the same run, on Bayesian logistic regression with N = 10⁴ synthetic points (``target=logistic_synthetic``,
d = 10, n = 100, 4 chains):

- SGLD with ``gradient=minibatch``, ``control_variates`` and ``svrg``;
- SGHMC with each estimator; pSGLD (Li et al.'s running preconditioner; ``psgld_no_gamma`` with its stationary
  preconditioner, whose D(θ) costs full-data passes); BAOAB and BADODAB with plain minibatches.

Each runs what the runner runs (:func:`~sgmcmc.engine.blocks.kernel_of`): the engine's blocks, or the numpy steps
where the engine does not take it (``engine`` in the row says which: since e0fffd3 every row but the stationary
pSGLD's is on the blocks). Each row: seconds per step (wall and CPU) after a warm-up, and the ratio to plain minibatch
SGLD (``ratio_to_sgld``).
"""

from __future__ import annotations

import numpy as np

from benchmarks.timing import timed_steps
from sgmcmc.engine.blocks import kernel_of
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.samplers import SAMPLERS, make_sampler
from sgmcmc.targets import make_target

N_DATA, DIM, BATCH, CHAINS = 10_000, 10, 100, 4
STEP_SIZE = 1e-5
ROWS = [  # (label, sampler, its parameters, estimator)
    ("sgld", "sgld", {}, "minibatch"),
    ("sgld-cv", "sgld", {}, "control_variates"),
    ("sgld-svrg", "sgld", {}, "svrg"),
    ("sghmc", "sghmc", {}, "minibatch"),
    ("sghmc-cv", "sghmc", {}, "control_variates"),
    ("sghmc-svrg", "sghmc", {}, "svrg"),
    ("psgld (running)", "psgld", {"preconditioner": "running"}, "minibatch"),
    ("psgld_no_gamma (stationary)", "psgld_no_gamma", {"preconditioner": "stationary"}, "minibatch"),
    ("baoab", "baoab", {}, "minibatch"),
    ("badodab", "badodab", {}, "minibatch"),
]


def run_all(n_steps: int) -> list[dict]:
    target = make_target("logistic_synthetic", n_data=N_DATA, dim=DIM, batch_size=BATCH, data_seed=0)
    theta = target.initial_position(CHAINS, np.random.default_rng(0))
    warm_up = max(10, n_steps // 10)
    rows = []
    for label, name, params, estimator in ROWS:
        if name not in SAMPLERS:
            rows.append({"label": label, "skipped": f"sampler {name} is not registered"})
            continue
        sampler = make_sampler(name, make_estimator(estimator, target, seed=0), noise_estimate="zero", **params)
        steps = n_steps if name != "psgld_no_gamma" else max(10, n_steps // 20)  # full-data passes per step
        wall, cpu = timed_steps(sampler, theta, STEP_SIZE, steps, min(warm_up, steps))
        rows.append({"label": label, "sampler": name, "gradient": estimator, "engine": kernel_of(sampler) is not None,
                     "steps_timed": steps, "seconds_per_step": wall, "cpu_seconds_per_step": cpu})
    plain = next(row for row in rows if row["label"] == "sgld")
    for row in rows:
        if "skipped" not in row:
            row["ratio_to_sgld"] = row["seconds_per_step"] / plain["seconds_per_step"]
            row["cpu_ratio_to_sgld"] = row["cpu_seconds_per_step"] / plain["cpu_seconds_per_step"]
            row.update(n_data=N_DATA, dim=DIM, batch_size=BATCH, n_chains=CHAINS)
    return rows
