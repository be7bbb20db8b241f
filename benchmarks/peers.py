"""Our SGLD, SGHMC and SGNHT against blackjax's, side by side (``make bench-peers``): speed and accuracy.

For each target (the double well and the correlated 2D target, both with gradient noise V = 4·I), sampler and
number of chains (1 and 1,000), the same dynamics run on both sides from the same starting positions, for the
same number of steps with the same burn-in. The report gives

- chain-steps per second: ours through :func:`sgmcmc.runner.run_chains` (the path of a real run: sample
  storage, running moments, divergence checks); blackjax's kernel in ``jax.jit`` + ``jax.lax.scan`` over steps
  + ``jax.vmap`` over chains, in float64 and in float32, compile time excluded (a warm-up call), each call ended
  by ``block_until_ready``. Every measurement is repeated (new seeds) until it has taken ``--min-seconds``;
- ours / blackjax(f64);
- accuracy: KL(p‖q) of each side's pooled post-burn-in samples on the SPEC grid
  (:class:`sgmcmc.evaluation.Evaluator`) and, in the JSON, the errors of E θ and E θ² in standard errors
  (:func:`moment_check`);
- numpy's standard normals per second (:func:`benchmarks.engine.normals_per_second`, ``make bench``'s measure:
  ``standard_normal`` of a large array, PCG64 as in our runs, best of 3) and ours as a fraction of the bound the
  generator sets: our chain-steps/s ÷ (normals/s ÷ normals one chain-step draws). The normals are counted on a
  short run: 2 per coordinate for all three samplers (the gradient noise and the injected noise). The JSON has
  blackjax's against ``jax.random.normal`` (measured the same way) too.

Gradient noise on the blackjax side: blackjax's kernels call ``grad_estimator(position, minibatch)`` once per
step and leave the minibatch to the caller. We pass a fresh PRNG key in the minibatch slot at every step, and
``grad_estimator(θ, key) = −∇U(θ) + √V·N(0, I)`` draws the noise from it: ∇Ũ = ∇U + N(0, V) with independent
noise at every step, the model of our targets' ``stochastic_gradient``. Each step's key is split into that
minibatch key and the key blackjax's step draws its injected noise from; the steps' keys are
``jax.random.split`` of the chain's key.

Matching the parameterisation (blackjax ``sgmcmc/diffusions.py``, read at 1.7.1):

- SGLD. blackjax: θ' = θ + ε∇log p̃ + √(2Tε)·n, T = 1. Ours: θ' = θ − ε∇Ũ + N(0, ε(2 − εV̂)); with
  ``noise_estimate="zero"`` (V̂ = 0: blackjax subtracts nothing) it is the same update for the same ε: both use
  Ma et al.'s convention (Welling & Teh's step size is 2ε).
- SGHMC. blackjax's step ``diffusions.sghmc(alpha, beta)``: θ' = θ + εr (the *old* r),
  r' = (1 − αε)r + ε∇log p̃(θ) + √(ε(2α − εβ))·n, an explicit Euler step. Ours with ``integrator="euler"`` is
  this step: θ' = θ + εr, r' = r − ε∇Ũ(θ) − εCr + N(0, ε(2C − εV̂)), with C = α = 1 and
  ``noise_estimate="zero"`` for blackjax's default β = 0 (β = V with ``known`` would match as well). Our
  default ``splitting`` moves θ with the new r' instead. ``blackjax.sghmc``'s top-level kernel runs this step
  in an inner ``lax.scan`` of ``num_integration_steps`` steps that share one minibatch (so one gradient-noise
  key), redraws the momentum from N(0, I) at every call and returns only the last position; to run the same
  dynamics as ours (momentum carried across every step, fresh gradient noise every step, every position kept)
  we scan blackjax's step itself, the body of that kernel, with the momentum initialised as that kernel does
  (``generate_gaussian_noise``).
- SGNHT. ``blackjax.sgnht`` (A = alpha = 1, β = 0, ξ₀ = A): θ' = θ + εr, r' = (1 − ξε)r + ε∇log p̃(θ)
  + √(2Aε)·n, ξ' = ξ + ε(r'ᵀr'/d − 1). Ours with ``integrator="euler"`` and ``noise_estimate="zero"`` has the
  same θ' and r', and ξ' = ξ + ε(rᵀr/d − 1) with the *old* r: the one difference left, a one-step lag of the
  thermostat (O(ε²) per step; both are first-order schemes for the same SDE).

Step sizes: the explicit Euler SGHMC and SGNHT diverge on the double well within ~30 steps at our defaults
(ε = 0.1, 0.05; starts N(0, 1)), and now and then at 0.02 with 1,000 chains, so they run at ε = 0.01 here; SGLD
at its default 0.02. The float32 column runs with jax's 64-bit mode off around it: with it on, blackjax's
``generate_gaussian_noise`` promotes a float32 position's noise (and so the run) to float64.

Threads: one per side unless ``--threads`` says otherwise: numba's (our engine runs the chains of a block of
steps in ``numba.prange``) and XLA's (``XLA_FLAGS``, set only if unset); ``make bench-peers`` also sets
OPENBLAS_NUM_THREADS = OMP_NUM_THREADS = 1. The report records them.

    python -m benchmarks.peers [--steps-one 50000] [--steps-many 5000] [--min-seconds 1] [--threads 1] [--quick]

Writes ``results/bench/peers-<UTC time>-<hex>.json`` and the markdown table beside it (``.md``);
``results/bench/LATEST-peers`` names the newest. Binds nothing to the network.
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import time
from importlib import metadata
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from benchmarks.engine import normals_per_second
from benchmarks.run import new_report_path
from sgmcmc.evaluation import Evaluator
from sgmcmc.results import provenance, write_json, write_text
from sgmcmc.config import RunOptions
from sgmcmc.runner import COMPLETED, run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

NOISE_VARIANCE = 4.0  # V = 4·I on both sides
STEP_SIZES = {"sgld": 0.02, "sghmc": 0.01, "sgnht": 0.01}  # see the module docstring
FRICTION = 1.0  # SGHMC C = blackjax alpha
DIFFUSION = 1.0  # SGNHT A = blackjax alpha = ξ₀
# the target configs' constructor arguments (configs/target/*.yaml)
TARGETS = {
    "double_well": dict(noise_variance=NOISE_VARIANCE),
    "correlated_2d": dict(noise_variance=NOISE_VARIANCE, initial_position=[0.0, 0.0], initial_spread=0.0),
}
# ours, parameterised to run blackjax's dynamics (module docstring)
OUR_SAMPLERS = {
    "sgld": dict(noise_estimate="zero", integrator="euler"),
    "sghmc": dict(friction=FRICTION, noise_estimate="zero", integrator="euler"),
    "sgnht": dict(diffusion=DIFFUSION, noise_estimate="zero", integrator="euler"),
}
CHAINS = (1, 1000)
STEPS = {"one": 50_000, "many": 5_000}  # steps per chain with 1 chain / with more chains
QUICK_STEPS = {"one": 4_000, "many": 1_000}
BURN_IN_FRACTION = 0.2
DTYPES = ("float64", "float32")
# single-threaded XLA, like our side with --threads 1 (read when jax is first imported)
XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
PEERS_INSTALL = 'pip install -e ".[peers]"'


# -- measures that need no jax ------------------------------------------------------------------------------
def timed_repeats(call: Callable[[int], object], min_seconds: float) -> tuple[object, float, int]:
    """Run ``call(0), call(1), …`` until they have taken ``min_seconds`` together (at least once); returns the
    first call's result, the mean seconds per call and the number of calls. ``call`` must finish its work before
    it returns (jax: ``block_until_ready``)."""
    first, total, calls = None, 0.0, 0
    while calls == 0 or total < min_seconds:
        start = time.perf_counter()
        result = call(calls)
        total += time.perf_counter() - start
        if calls == 0:
            first = result
        calls += 1
    return first, total / calls, calls


class CountingGenerator:
    """A numpy Generator that counts the standard normals drawn through it (everything else is delegated)."""

    def __init__(self, rng: np.random.Generator):
        self._rng = rng
        self.normals = 0

    def standard_normal(self, *args, **kwargs):
        value = self._rng.standard_normal(*args, **kwargs)
        self.normals += int(np.size(value))
        return value

    def __getattr__(self, name):
        return getattr(self._rng, name)


def normals_per_chain_step(sampler, n_chains: int = 3, steps: int = 10) -> float:
    """Standard normals one step of one chain draws, counted on two short :func:`run_chains` runs (``steps`` and
    ``2·steps`` steps: the draws of the start cancel) on the blocks' Python backend, which draws what the compiled
    blocks draw (:func:`sgmcmc.engine.driver.block_draws`) without compiling them."""
    counts = []
    for n_steps in (steps, 2 * steps):
        rng = CountingGenerator(np.random.default_rng(0))
        settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=0, eval_every=n_steps + 1, progress=False,
                              backend="python")
        run_chains(sampler, Constant(0.01), settings, rng, theta0=np.zeros((n_chains, sampler.target.dim)))
        counts.append(rng.normals)
    return (counts[1] - counts[0]) / (steps * n_chains)


def rng_bound_fraction(chain_steps_per_second: Optional[float], normals_second: float,
                       normals_per_step: float) -> Optional[float]:
    """Chain-steps/s as a fraction of the bound the generator alone sets: normals/s ÷ normals per chain-step."""
    if chain_steps_per_second is None:
        return None
    return chain_steps_per_second / (normals_second / normals_per_step)


def speed_ratio(ours: Optional[float], theirs: Optional[float]) -> Optional[float]:
    """ours / theirs (> 1: ours faster); None when either is missing."""
    if ours is None or not theirs:
        return None
    return ours / theirs


def moment_check(chains: np.ndarray, exact_mean, exact_second, batches: int = 20) -> dict:
    """Errors of the pooled E θ and E θ² (per coordinate) against the exact ones, in standard errors.

    ``chains`` (n_chains, n_kept, dim). Each chain is cut into max(1, ``batches`` // n_chains) consecutive
    batches; the standard error is the spread of the batch means over √(number of batches), so it carries the
    autocorrelation within a chain and a chain's stay in one mode. ``tau`` is the autocorrelation time this
    implies (samples × se² ÷ variance)."""
    chains = np.asarray(chains, dtype=float)
    n_chains, n_kept, dim = chains.shape
    per_chain = max(1, batches // n_chains)
    length = n_kept // per_chain
    blocks = chains[:, : per_chain * length].reshape(n_chains * per_chain, length, dim)
    out = {"batches": int(blocks.shape[0])}
    for name, values, exact in (("mean", blocks, exact_mean), ("second_moment", blocks**2, exact_second)):
        exact = np.asarray(exact, dtype=float)
        batch_means = values.mean(axis=1)  # (batches, dim)
        estimate = batch_means.mean(axis=0)
        se = batch_means.std(axis=0, ddof=1) / math.sqrt(batch_means.shape[0])
        variance = values.reshape(-1, dim).var(axis=0)
        out[name] = {"estimate": estimate.tolist(), "exact": exact.tolist(), "standard_error": se.tolist(),
                     "z": ((estimate - exact) / se).tolist(), "tau": (blocks.shape[0] * length * se**2 / variance).tolist()}
    return out


def agreement_z(first: dict, second: dict) -> Optional[dict]:
    """(E_first − E_second) / √(se_first² + se_second²) of θ and θ² per coordinate, from two cells' scores
    (:func:`moment_check`): whether two sides sample the same distribution. None if either has no moments."""
    if "moments" not in first or "moments" not in second:
        return None
    out = {}
    for name in ("mean", "second_moment"):
        a, b = first["moments"][name], second["moments"][name]
        out[name] = [(x - y) / math.hypot(se_x, se_y) for x, y, se_x, se_y
                     in zip(a["estimate"], b["estimate"], a["standard_error"], b["standard_error"])]
    return out


def score_samples(evaluator: Evaluator, chains: np.ndarray) -> dict:
    """The evaluator's scores (KL(p‖q), KL(q‖p), moment errors, …) of the pooled chains (n_chains, n_kept, dim)
    and :func:`moment_check`; ``finite: False`` and the count of chains with a non-finite sample otherwise."""
    finite_chains = np.isfinite(chains).all(axis=(1, 2))
    if not finite_chains.all():
        return {"finite": False, "nonfinite_chains": int(np.sum(~finite_chains))}
    target = evaluator.target
    scores = evaluator.score(chains.reshape(-1, target.dim))
    return {"finite": True, **scores, "moments": moment_check(chains, *target.exact_moments())}


def ours_cell(target, sampler_name: str, theta0: np.ndarray, n_steps: int, burn_in: int, seed: int,
              min_seconds: float, evaluator: Optional[Evaluator] = None, keep_samples: bool = False) -> dict:
    """Our sampler through :func:`run_chains` from ``theta0`` (n_chains, dim): chain-steps/s (after a 200-step
    warm-up run; runs with seeds seed, seed + 1, … for ``min_seconds``; a diverged run counts the steps it did)
    and the first run's scores."""
    sampler = make_sampler(sampler_name, target, **OUR_SAMPLERS[sampler_name])
    schedule = Constant(STEP_SIZES[sampler_name])
    n_chains = theta0.shape[0]
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=burn_in, eval_every=n_steps + 1, progress=False)
    run_chains(sampler, schedule, RunOptions(n_steps=200, n_chains=n_chains, burn_in=0, progress=False),
               np.random.default_rng(seed + 10_000), theta0=theta0)  # warm-up
    outcomes = []

    def call(repeat: int):
        outcomes.append(run_chains(sampler, schedule, settings, np.random.default_rng(seed + repeat), theta0=theta0))
        return outcomes[-1]

    outcome, seconds, calls = timed_repeats(call, min_seconds)
    steps_done = sum(run.steps_done for run in outcomes)
    row = {"chain_steps_per_second": steps_done * n_chains / (seconds * calls), "seconds_per_run": seconds,
           "runs_timed": calls, "status": outcome.status,
           "runs_not_completed": sum(run.status != COMPLETED for run in outcomes),
           "normals_per_chain_step": normals_per_chain_step(sampler)}
    if outcome.status != COMPLETED:
        row["error"] = outcome.error
    elif evaluator is not None:
        row["scores"] = score_samples(evaluator, outcome.samples)
    if keep_samples:
        row["samples"] = outcome.samples
    return row


# -- blackjax ------------------------------------------------------------------------------------------------
def load_jax(single_thread: bool = True):
    """(jax, blackjax), with float64 enabled and, with ``single_thread``, XLA on one thread (unless XLA_FLAGS is
    set; read at jax's first import only); ImportError naming the install command if either is missing."""
    if single_thread:
        os.environ.setdefault("XLA_FLAGS", XLA_FLAGS)
    try:
        import blackjax
        import jax
    except ImportError as error:
        raise ImportError(f"jax and blackjax are needed: {PEERS_INSTALL} ({error})") from error
    jax.config.update("jax_enable_x64", True)
    return jax, blackjax


def jax_gradient(target_name: str) -> Callable:
    """∇U of one chain's position (dim,) in jax: the formulas of ``sgmcmc.targets`` (tested equal to them)."""
    import jax.numpy as jnp

    if target_name == "double_well":
        return lambda x: 4.0 * x**3 - 4.0 * x

    if target_name == "correlated_2d":
        def gradient(x):
            residual = 4.0 * (x[1] + 1.2) - x[0] ** 2
            return jnp.stack([0.4 * x[0] ** 3 - 2.0 * x[0] * residual, 4.0 * residual])

        return gradient
    raise KeyError(f"no jax gradient for target {target_name!r}")


def blackjax_chains(target_name: str, sampler_name: str, n_steps: int, burn_in: int, dtype: str = "float64",
                    temperature: float = 1.0) -> Callable:
    """A jitted f(theta0 (c, dim), keys (c, 2)) → post-burn-in positions (c, n_steps − burn_in, dim): blackjax's
    ``sampler_name`` step (module docstring) scanned over steps, vmapped over chains. ``temperature`` is
    blackjax's (a factor on the injected noise's variance): 1 but in the tests' negative control. Call it in
    ``jax.enable_x64(dtype == "float64")``."""
    jax, blackjax = load_jax()
    import jax.numpy as jnp
    from blackjax.sgmcmc import diffusions
    from blackjax.util import generate_gaussian_noise

    gradient = jax_gradient(target_name)
    noise_scale = math.sqrt(NOISE_VARIANCE)
    dtype = jnp.dtype(dtype)
    # arrays of the run's dtype: blackjax takes jnp.sqrt of them, which makes Python floats float64
    step_size, temperature = jnp.asarray(STEP_SIZES[sampler_name], dtype), jnp.asarray(temperature, dtype)

    def grad_estimator(position, key):  # the "minibatch" is a PRNG key: ∇log p + N(0, V), fresh every step
        return -gradient(position) + noise_scale * jax.random.normal(key, position.shape, position.dtype)

    if sampler_name == "sgld":
        algorithm = blackjax.sgld(grad_estimator)

        def init(position, key):
            return algorithm.init(position)

        def step(key, state, batch):
            return algorithm.step(key, state, batch, step_size, temperature)

        def position_of(state):
            return state
    elif sampler_name == "sghmc":
        integrator = diffusions.sghmc(alpha=FRICTION, beta=0.0)

        def init(position, key):  # as blackjax.sghmc's kernel starts its inner scan
            return position, generate_gaussian_noise(key, position)

        def step(key, state, batch):
            position, momentum = state
            return integrator(key, position, momentum, grad_estimator(position, batch), step_size, temperature)

        def position_of(state):
            return state[0]
    elif sampler_name == "sgnht":
        algorithm = blackjax.sgnht(grad_estimator, alpha=DIFFUSION, beta=0.0)

        def init(position, key):  # blackjax.sgnht's init with ξ₀ = A in the run's dtype
            return blackjax.sgmcmc.sgnht.init(position, key, jnp.asarray(DIFFUSION, dtype))

        def step(key, state, batch):
            return algorithm.step(key, state, batch, step_size, temperature)

        def position_of(state):
            return state.position
    else:
        raise KeyError(f"no blackjax sampler {sampler_name!r}")

    def one_step(state, key):
        step_key, gradient_key = jax.random.split(key)
        return step(step_key, state, gradient_key)

    def keep(state, key):
        state = one_step(state, key)
        return state, position_of(state)

    def chain(position, key):
        init_key, burn_key, keep_key = jax.random.split(key, 3)
        state = init(position.astype(dtype), init_key)
        state, _ = jax.lax.scan(lambda s, k: (one_step(s, k), None), state, jax.random.split(burn_key, burn_in))
        _, positions = jax.lax.scan(keep, state, jax.random.split(keep_key, n_steps - burn_in))
        return positions

    return jax.jit(jax.vmap(chain))


def blackjax_cell(target_name: str, sampler_name: str, theta0: np.ndarray, n_steps: int, burn_in: int, seed: int,
                  min_seconds: float, dtype: str = "float64", evaluator: Optional[Evaluator] = None,
                  keep_samples: bool = False, temperature: float = 1.0) -> dict:
    """blackjax from ``theta0``: chain-steps/s (compiled by a warm-up call, then calls with keys from seed,
    seed + 1, … for ``min_seconds``) and the first timed call's scores. float32 runs with jax's 64-bit mode off
    (module docstring)."""
    jax, _ = load_jax()
    n_chains = theta0.shape[0]
    with jax.enable_x64(dtype == "float64"):
        run = blackjax_chains(target_name, sampler_name, n_steps, burn_in, dtype, temperature)
        positions = jax.numpy.asarray(theta0, dtype=dtype)

        def call(repeat: int):  # one key per chain, split from one (negligible beside the run)
            return run(positions, jax.random.split(jax.random.PRNGKey(seed + repeat), n_chains)).block_until_ready()

        start = time.perf_counter()
        call(10_000)  # compiles
        compile_seconds = time.perf_counter() - start
        samples, seconds, calls = timed_repeats(call, min_seconds)
    if samples.dtype != np.dtype(dtype):
        raise TypeError(f"blackjax ran in {samples.dtype}, not {dtype}")
    samples = np.asarray(samples, dtype=float)
    row = {"chain_steps_per_second": n_steps * n_chains / seconds, "seconds_per_run": seconds, "runs_timed": calls,
           "compile_and_first_run_seconds": compile_seconds, "dtype": dtype}
    if evaluator is not None:
        row["scores"] = score_samples(evaluator, samples)
    if keep_samples:
        row["samples"] = samples
    return row


def jax_normals_per_second(dtype: str, size: int = 2**24, repeats: int = 3) -> float:
    """``jax.random.normal`` draws per second in ``dtype`` (jitted, the default threefry PRNG): the best of
    ``repeats`` draws of ``size`` after a compiling one, as :func:`benchmarks.engine.normals_per_second`."""
    jax, _ = load_jax()
    with jax.enable_x64(dtype == "float64"):
        draw = jax.jit(lambda key: jax.random.normal(key, (size,), dtype))
        draw(jax.random.PRNGKey(repeats)).block_until_ready()
        best = float("inf")
        for repeat in range(repeats):
            start = time.perf_counter()
            draw(jax.random.PRNGKey(repeat)).block_until_ready()
            best = min(best, time.perf_counter() - start)
    return size / best


# -- the report ----------------------------------------------------------------------------------------------
def assemble_row(target_name: str, sampler_name: str, n_chains: int, n_steps: int, burn_in: int, ours: dict,
                 peers: dict, normals_second: float, jax_normals: Optional[dict] = None) -> dict:
    """One (target, sampler, n_chains) row: our cell, each blackjax cell (``peers``: {"blackjax_float64": …}),
    ours / blackjax(f64), and each side's chain-steps/s as a fraction of its generator's bound (ours against
    ``normals_second``, blackjax's against ``jax_normals`` per dtype, at our count of normals per chain-step)."""
    per_step = ours["normals_per_chain_step"]
    row = {"target": target_name, "sampler": sampler_name, "n_chains": n_chains, "n_steps": n_steps,
           "burn_in": burn_in, "step_size": STEP_SIZES[sampler_name],
           "ours": {key: value for key, value in ours.items() if key != "samples"}}
    for name, peer in peers.items():
        row[name] = {key: value for key, value in peer.items() if key != "samples"}
        rate = (jax_normals or {}).get(peer.get("dtype"))
        if rate:
            row[name]["fraction_of_jax_rng_bound"] = rng_bound_fraction(peer["chain_steps_per_second"], rate, per_step)
    reference = peers.get("blackjax_float64", {}).get("chain_steps_per_second")
    row["ratio_ours_to_blackjax_float64"] = speed_ratio(ours["chain_steps_per_second"], reference)
    theirs = peers.get("blackjax_float64", {}).get("scores")
    row["agreement_z_ours_blackjax_float64"] = agreement_z(ours["scores"], theirs) if "scores" in ours and theirs else None
    row["ours_fraction_of_rng_bound"] = rng_bound_fraction(ours["chain_steps_per_second"], normals_second, per_step)
    return row


def _number(value: Optional[float]) -> str:
    if value is None:
        return "–"
    text = f"{value:.3g}"
    return text.replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")


def _kl(cell: Optional[dict]) -> str:
    if not cell:
        return "–"
    scores = cell.get("scores")
    if scores is None:
        return cell.get("status", "–")
    if not scores["finite"]:
        return f"non-finite in {scores['nonfinite_chains']} chains"
    return _number(scores.get("kl_pq"))


def _max_z(agreement: Optional[dict]) -> str:
    return _number(max(abs(z) for values in agreement.values() for z in values)) if agreement else "–"


def _rate(cell: Optional[dict]) -> str:
    return _number(cell["chain_steps_per_second"]) if cell else "–"


def markdown_table(rows: list[dict], normals_second: float, jax_normals: Optional[dict] = None) -> str:
    """The report's table: chain-steps/s per side, ours / blackjax(f64), KL(p‖q) per side, the largest
    :func:`agreement_z` of ours and blackjax(f64), ours against the generator's bound; a first line with the
    generators' normals per second."""
    rates = [f"numpy standard normals {_number(normals_second)}/s (PCG64, float64)"]
    rates += [f"jax.random.normal {dtype} {_number(rate)}/s" for dtype, rate in (jax_normals or {}).items()]
    lines = [
        "; ".join(rates),
        "",
        "| target | sampler | chains | steps | ε | ours chain-steps/s | blackjax f64 | blackjax f32 | ours / bj f64 "
        "| KL ours | KL bj f64 | KL bj f32 | max \\|z\\| ours − bj f64 | ours / RNG bound |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        f64, f32 = row.get("blackjax_float64"), row.get("blackjax_float32")
        lines.append(
            f"| {row['target']} | {row['sampler']} | {row['n_chains']} | {row['n_steps']} | {row['step_size']} "
            f"| {_rate(row['ours'])} | {_rate(f64)} | {_rate(f32)} | {_number(row['ratio_ours_to_blackjax_float64'])} "
            f"| {_kl(row['ours'])} | {_kl(f64)} | {_kl(f32)} | {_max_z(row.get('agreement_z_ours_blackjax_float64'))} "
            f"| {_number(row['ours_fraction_of_rng_bound'])} |")
    return "\n".join(lines) + "\n"


def write_report(report: dict, table: str, folder: Path) -> Path:
    """``folder/peers-<UTC time>-<hex>.json``, the table beside it (``.md``) and ``folder/LATEST-peers`` naming it."""
    folder.mkdir(parents=True, exist_ok=True)
    path = new_report_path(folder)
    path = path.with_name(f"peers-{path.name}")
    write_json(path, report)
    write_text(path.with_suffix(".md"), table)
    write_text(folder / "LATEST-peers", path.name + "\n")
    return path


def _versions() -> dict:
    versions = {}
    for package in ("numpy", "jax", "jaxlib", "blackjax"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = None
    return versions


def main(argv=None) -> Path:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps-one", type=int, default=None, help=f"steps per chain with 1 chain (default {STEPS['one']})")
    parser.add_argument("--steps-many", type=int, default=None,
                        help=f"steps per chain with more chains (default {STEPS['many']})")
    parser.add_argument("--min-seconds", type=float, default=None,
                        help="each measurement is repeated until it has taken this long (default 1; 0 with --quick)")
    parser.add_argument("--quick", action="store_true",
                        help=f"short runs ({QUICK_STEPS['one']} / {QUICK_STEPS['many']} steps), each timed once")
    parser.add_argument("--targets", nargs="+", choices=list(TARGETS), default=list(TARGETS))
    parser.add_argument("--samplers", nargs="+", choices=list(OUR_SAMPLERS), default=list(OUR_SAMPLERS))
    parser.add_argument("--chains", nargs="+", type=int, default=list(CHAINS))
    parser.add_argument("--threads", type=int, default=1,
                        help="threads of each side (default 1): numba's for our compiled blocks; above 1, XLA keeps "
                             "its default thread pool")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--output", default="results/bench", help="the report's folder (default results/bench)")
    args = parser.parse_args(argv)
    defaults = QUICK_STEPS if args.quick else STEPS
    steps = {"one": args.steps_one or defaults["one"], "many": args.steps_many or defaults["many"]}
    min_seconds = args.min_seconds if args.min_seconds is not None else (0.0 if args.quick else 1.0)
    import numba

    numba.set_num_threads(args.threads)  # our engine's compiled blocks run the chains in numba.prange
    try:
        jax, _ = load_jax(single_thread=args.threads == 1)
    except ImportError:
        raise SystemExit(f"benchmarks.peers needs jax and blackjax: {PEERS_INSTALL}") from None

    normals_second = normals_per_second(2**20 if args.quick else 2**24)  # make bench's measure (best of 3)
    jax_normals = {dtype: jax_normals_per_second(dtype, 2**20 if args.quick else 2**24) for dtype in DTYPES}
    print(f"numpy standard normals {normals_second:.3g}/s; jax.random.normal "
          + ", ".join(f"{dtype} {rate:.3g}/s" for dtype, rate in jax_normals.items()), flush=True)
    rows = []
    for target_name in args.targets:
        target = make_target(target_name, **TARGETS[target_name])
        evaluator = Evaluator(target)
        for sampler_name in args.samplers:
            for n_chains in args.chains:
                n_steps = steps["one"] if n_chains == 1 else steps["many"]
                burn_in = int(BURN_IN_FRACTION * n_steps)
                theta0 = target.initial_position(n_chains, np.random.default_rng(args.seed))
                ours = ours_cell(target, sampler_name, theta0, n_steps, burn_in, args.seed, min_seconds, evaluator)
                peers = {f"blackjax_{dtype}": blackjax_cell(target_name, sampler_name, theta0, n_steps, burn_in,
                                                            args.seed, min_seconds, dtype, evaluator)
                         for dtype in DTYPES}
                row = assemble_row(target_name, sampler_name, n_chains, n_steps, burn_in, ours, peers, normals_second,
                                   jax_normals)
                rows.append(row)
                print(f"{target_name} {sampler_name} {n_chains} chains: chain-steps/s ours {_rate(ours)}, blackjax f64 "
                      f"{_rate(peers['blackjax_float64'])}, f32 {_rate(peers['blackjax_float32'])}; KL(p‖q) ours "
                      f"{_kl(ours)}, blackjax f64 {_kl(peers['blackjax_float64'])}", flush=True)
    table = markdown_table(rows, normals_second, jax_normals)
    report = {
        "benchmark": "ours against blackjax: SGLD, SGHMC, SGNHT on double_well and correlated_2d (V = 4 I)",
        "machine": {"python": platform.python_version(), "processor": platform.processor() or platform.machine(),
                    "cpu_count": os.cpu_count(), "packages": _versions()},
        "provenance": provenance(seed=args.seed, argv=None),
        "settings": {"step_sizes": STEP_SIZES, "noise_variance": NOISE_VARIANCE, "friction": FRICTION,
                     "diffusion": DIFFUSION, "burn_in_fraction": BURN_IN_FRACTION, "steps": steps,
                     "min_seconds": min_seconds, "quick": args.quick, "our_samplers": OUR_SAMPLERS, "targets": TARGETS},
        "threads": {"numba": numba.get_num_threads(),
                    **{key: os.environ.get(key) for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "XLA_FLAGS")}},
        "jax_default_prng": str(jax.config.jax_default_prng_impl),
        "numpy_normals_per_second": normals_second,
        "jax_normals_per_second": jax_normals,
        "results": rows,
    }
    path = write_report(report, table, Path(args.output))
    print()
    print(table)
    print(path)
    return path


if __name__ == "__main__":
    main()
