"""The user-model workload of :mod:`benchmarks.end_to_end` (``make bench-peers``): the model and blackjax's side.

The model is ``examples/robust_regression.py``: Student-t regression (ν = 4) on N = 20,000 rows, d = 20, written as
a plain class with numpy functions on rows, a model the engine has no formula for. Minibatches of n = 100, float64,
SGLD and SGHMC with the same dynamics as ``benchmarks.peers`` (Euler SGHMC, friction 1, no noise estimate).

**blackjax**: ``blackjax.sgld`` and ``diffusions.sghmc`` with ``blackjax.sgmcmc.gradients.grad_estimator`` (the
log-likelihood of one row, vmapped over the minibatch, differentiated by jax), the minibatch drawn by
``jax.random.randint`` (with replacement: the cheapest draw jax has; a draw without replacement sorts N keys),
``jax.lax.scan`` over steps returning every position, ``jax.vmap`` over chains, ``jax.jit``; the least of
``repeats`` warm calls (compilation excluded, reported apart). XLA on one thread, as ours.
"""

from __future__ import annotations

import time

import numpy as np

from benchmarks.peers import FRICTION, load_jax
from examples.robust_regression import NU, PRIOR_VARIANCE, SIGMA

MODEL = "examples/robust_regression.py:RobustRegression"
BATCH = 100
STEP_SIZES = {"sgld": 1e-5, "sghmc": 1e-3}


def blackjax_model(data: np.ndarray) -> tuple:
    """(log prior, log-likelihood of one row, N): the model of ``examples/robust_regression.py`` in jax, as blackjax's
    ``grad_estimator`` takes it."""
    jax, _ = load_jax()
    jnp = jax.numpy

    def log_likelihood(theta, row):
        residual = row[-1] - row[:-1] @ theta
        return -0.5 * (NU + 1.0) * jnp.log1p(residual * residual / (NU * SIGMA**2))

    def log_prior(theta):
        return -0.5 * jnp.sum(theta * theta) / PRIOR_VARIANCE

    return log_prior, log_likelihood, data.shape[0]


def blackjax_chains(sampler: str, data: np.ndarray, n_steps: int):
    """A jitted f(theta0 (c, d), keys (c, 2)) → positions (c, n_steps, d) of blackjax's sampler on the model."""
    jax, blackjax = load_jax()
    diffusions = blackjax.sgmcmc.diffusions
    rows, n_data = jax.numpy.asarray(data), data.shape[0]
    gradient = blackjax.sgmcmc.gradients.grad_estimator(*blackjax_model(data))
    step_size = STEP_SIZES[sampler]
    if sampler == "sgld":
        algorithm = blackjax.sgld(gradient)

        def step(key, state, batch):
            return algorithm.step(key, state, batch, step_size)

        def init(position, key):
            return position

        def position_of(state):
            return state
    else:
        integrator = diffusions.sghmc(alpha=FRICTION, beta=0.0)

        def step(key, state, batch):
            position, momentum = state
            return integrator(key, position, momentum, gradient(position, batch), step_size)

        def init(position, key):
            return position, jax.random.normal(key, position.shape, position.dtype)

        def position_of(state):
            return state[0]

    def one_step(state, key):
        batch_key, step_key = jax.random.split(key)
        state = step(step_key, state, rows[jax.random.randint(batch_key, (BATCH,), 0, n_data)])
        return state, position_of(state)

    def chain(position, key):
        init_key, steps_key = jax.random.split(key)
        _, positions = jax.lax.scan(one_step, init(position, init_key), jax.random.split(steps_key, n_steps))
        return positions

    return jax.jit(jax.vmap(chain))


def theirs(sampler: str, n_chains: int, n_steps: int, repeats: int, data: np.ndarray) -> dict:
    jax, _ = load_jax()
    run = blackjax_chains(sampler, data, n_steps)
    positions = jax.numpy.zeros((n_chains, data.shape[1] - 1))
    keys = jax.random.split(jax.random.PRNGKey(0), n_chains)
    start = time.perf_counter()
    run(positions, keys).block_until_ready()
    compile_seconds = time.perf_counter() - start
    seconds = []
    for repeat in range(repeats):
        keys = jax.random.split(jax.random.PRNGKey(repeat + 1), n_chains)
        start = time.perf_counter()
        samples = run(positions, keys).block_until_ready()
        seconds.append(time.perf_counter() - start)
    if samples.dtype != np.float64 or not np.isfinite(np.asarray(samples)).all():
        raise RuntimeError(f"blackjax {sampler}: {samples.dtype} samples, finite: {bool(np.isfinite(samples).all())}")
    return {"n_steps": n_steps, "compile_and_first_run_seconds": compile_seconds, "seconds": min(seconds),
            "seconds_per_chain_step": min(seconds) / (n_steps * n_chains)}
