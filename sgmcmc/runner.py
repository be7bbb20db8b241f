"""The driver: runs a sampler's chains for n steps, keeps thinned post-burn-in samples, traces the
metrics along the way, and stops cleanly on divergence (NaN/inf), interruption or a sampler error.

Plain Python, no Hydra: ``run_chains(sampler, schedule, settings, rng, evaluator)``. With a
:class:`~sgmcmc.checkpoint.Checkpointer` the run saves its full state now and then and when it is stopped;
``resume=`` a :class:`~sgmcmc.checkpoint.Checkpoint` continues it bit for bit.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
from tqdm.auto import tqdm

from sgmcmc.checkpoint import (
    Checkpoint,
    CheckpointError,
    Checkpointer,
    decode_state,
    encode_state,
    generator_state,
    join_target_state,
    restore_generator,
    split_target_state,
)
from sgmcmc.evaluation import Evaluator
from sgmcmc.recipe import RecipeError
from sgmcmc.samplers.base import Sampler
from sgmcmc.signals import workers_ignore_stop_signals

log = logging.getLogger(__name__)

COMPLETED, DIVERGED, INTERRUPTED, FAILED = "completed", "diverged", "interrupted", "failed"


@dataclass(frozen=True)
class RunSettings:
    """How long to run and what to keep (config group ``run``)."""

    n_steps: int = 2000
    n_chains: int = 1000
    burn_in: int = 1000
    thin: int = 1
    eval_every: int = 100
    progress: bool = True

    @property
    def n_kept(self) -> int:
        return max(0, (self.n_steps - self.burn_in) // self.thin)


@dataclass
class RunOutcome:
    """What a run produced: kept samples (n_chains, n_kept_so_far, dim), the metric trace, the status."""

    samples: np.ndarray
    trace: list = field(default_factory=list)
    status: str = COMPLETED
    steps_done: int = 0
    error: Optional[str] = None
    wall_time: float = 0.0
    acceptance_rate: Optional[float] = None
    noise_clips: int = 0
    reflections: int = 0
    thermostat_mean: Optional[float] = None  # mean ξ over chains and post-burn-in steps (SGNHT, CCAdL)
    thermostat_se: Optional[float] = None  # its standard error from the spread of the chains' means
    moments: Optional["RunningMoments"] = None  # per-chain mean (and covariance) of every post-burn-in step
    final_theta: Optional[np.ndarray] = None  # the last finite state's θ (n_chains, dim)
    evaluation_time: float = 0.0  # seconds of wall_time spent scoring the trace rows
    state_metrics: dict = field(default_factory=dict)  # the target's metrics of the last scored state (LDA perplexity)


# Per-chain second moments are tracked up to this dimension (c·d² numbers; DRBM has d in the thousands).
MOMENT_COVARIANCE_MAX_DIM = 512


class RunningMoments:
    """Per-chain running mean of θ (c, d) over every post-burn-in step (not only the kept, thinned ones),
    and the covariance when d ≤ ``MOMENT_COVARIANCE_MAX_DIM``; Welford's update, one BLAS rank-1 per chain.
    The running mean is the posterior-mean estimate w̄_t of Shang et al. (2015) §4.2 (SPEC §3, E5)."""

    def __init__(self, n_chains: int, dim: int):
        self.count = 0
        self.mean = np.zeros((n_chains, dim))
        self._scatter = np.zeros((n_chains, dim, dim)) if dim <= MOMENT_COVARIANCE_MAX_DIM else None

    def update(self, theta: np.ndarray) -> None:
        self.count += 1
        with np.errstate(over="ignore", invalid="ignore"):  # a diverging chain's last finite values may overflow
            delta = theta - self.mean
            self.mean += delta / self.count
            if self._scatter is not None:
                self._scatter += delta[:, :, None] * (theta - self.mean)[:, None, :]

    def covariance(self) -> Optional[np.ndarray]:
        """Per-chain sample covariance (c, d, d) (denominator count − 1), None if not tracked or < 2 steps."""
        if self._scatter is None or self.count < 2:
            return None
        return self._scatter / (self.count - 1)

    def pooled(self) -> tuple[np.ndarray, Optional[np.ndarray]]:
        """Mean and covariance of all chains' steps pooled (equal counts per chain)."""
        mean = self.mean.mean(axis=0)
        covariance = self.covariance()
        if covariance is None:
            return mean, None
        n = self.count
        within = covariance.mean(axis=0) * (n - 1) / n
        spread = self.mean - mean
        between = spread.T @ spread / self.mean.shape[0]
        total = self.mean.shape[0] * n
        return mean, (within + between) * total / max(total - 1, 1)


def _show(bar, row: dict) -> None:
    """The headline metric of the latest trace row on the progress bar."""
    for key, label in (("kl_pq", "kl"), ("test_error", "test_err"), ("test_log_likelihood", "test_ll"), ("perplexity", "perplexity")):
        if key in row:
            bar.set_postfix({label: f"{row[key]:.4g}"}, refresh=False)
            return


def _finite(state) -> bool:
    return all(np.isfinite(part).all() for part in state if part is not None)


def run_chains(
    sampler: Sampler,
    schedule: Callable[[int], float],
    settings: RunSettings,
    rng: np.random.Generator,
    evaluator: Optional[Evaluator] = None,
    stop_requested: Callable[[], bool] = lambda: False,
    theta0: Optional[np.ndarray] = None,
    checkpointer: Optional[Checkpointer] = None,
    resume: Optional[Checkpoint] = None,
) -> RunOutcome:
    """Run ``settings.n_chains`` chains of ``sampler`` from the target's initial positions.

    Random numbers come from ``rng`` only, in a fixed order, so a seed fixes the samples bit for bit.
    The sample kept at step t (1-based) is the state after t steps, for t > burn_in and
    (t − burn_in) divisible by ``thin``. ``theta0`` (n_chains, dim) replaces the target's initial positions
    (e.g. over-dispersed starts for a reference run); nothing is then drawn for them.

    ``stop_requested()`` is asked before every step; when it says True the run stops there (status interrupted)
    and, with a ``checkpointer``, saves a checkpoint of that step. The checkpointer also saves one every
    ``every_steps`` steps / ``every_s`` seconds. ``resume``, a checkpoint of the same sampler, target, settings
    and seed, continues that run instead of starting one (``rng`` is set to the saved state; ``theta0`` is
    ignored): its samples, moments and trace equal the uninterrupted run's bit for bit.
    """
    target = sampler.target
    samples = np.empty((settings.n_chains, settings.n_kept, target.dim))
    outcome = RunOutcome(samples=samples[:, :0], moments=RunningMoments(settings.n_chains, target.dim))
    if resume is None:
        if theta0 is None:
            theta0 = target.initial_position(settings.n_chains, rng)
        elif np.shape(theta0) != (settings.n_chains, target.dim):
            raise ValueError(f"theta0 must have shape ({settings.n_chains}, {target.dim}); got {np.shape(theta0)}")
        state = sampler.init(theta0, rng)
        # Metrics that draw random numbers (LDA's held-out Gibbs) use their own generator, so how often the
        # trace is scored never changes the samples (drawn only for such targets: other runs keep their streams).
        evaluation_rng = np.random.default_rng(rng.integers(2**62)) if hasattr(target, "sample_metrics") else None
        counters = {"kept": 0, "accept_sum": 0.0, "accept_count": 0, "xi_sum": 0.0, "xi_count": 0, "wall_time": 0.0}
    else:
        state, evaluation_rng, counters = _restore(resume, sampler, settings, rng, samples, outcome)
    n_data, batch_size = getattr(target, "n_data", None), getattr(target, "batch_size", None)
    trace_position = getattr(target, "trace_position", None)
    kept = counters["kept"]
    accept_sum, accept_count = counters["accept_sum"], counters["accept_count"]
    xi_sum, xi_count = counters["xi_sum"], counters["xi_count"]  # per-chain sum of ξ after burn-in, number of steps summed
    earlier_wall_time = counters["wall_time"]  # of the sessions before a resume
    clean_stop = False  # stopped by stop_requested between two steps: the state is consistent, checkpoint it

    def snapshot() -> Checkpoint:
        counters.update(kept=kept, accept_sum=accept_sum, accept_count=accept_count, xi_sum=xi_sum, xi_count=xi_count,
                        wall_time=earlier_wall_time + time.perf_counter() - start)
        return _snapshot(sampler, rng, evaluation_rng, state, samples, outcome, counters)

    start = time.perf_counter()
    due_step, due_time = checkpointer.next_due(outcome.steps_done) if checkpointer else (float("inf"), float("inf"))
    with workers_ignore_stop_signals():  # tqdm's monitor thread leaves SIGINT/SIGTERM to the main thread
        bar = tqdm(total=settings.n_steps, initial=outcome.steps_done, disable=not settings.progress, delay=2.0,
                   mininterval=0.5, unit="step")
    try:
        for t in range(outcome.steps_done + 1, settings.n_steps + 1):
            if stop_requested():
                clean_stop = True
                raise KeyboardInterrupt
            with np.errstate(over="ignore", invalid="ignore"):
                new_state, info = sampler.step(rng, state, schedule(t - 1))
            if not _finite(new_state):
                outcome.status = DIVERGED
                bad = ~np.all(np.isfinite(new_state.theta), axis=1)
                outcome.error = f"non-finite state at step {t} in {int(bad.sum())} of {settings.n_chains} chains"
                log.warning(outcome.error)
                break
            state = new_state
            outcome.steps_done = t
            if info.accept_probability is not None:
                accept_sum += float(info.accept_probability.sum())
                accept_count += info.accept_probability.size
            if info.clipped is not None:
                outcome.noise_clips += int(info.clipped.sum())
            if info.reflected is not None:
                outcome.reflections += int(info.reflected.sum())
            if t > settings.burn_in:
                outcome.moments.update(state.theta)
                if state.xi is not None:
                    xi_sum = xi_sum + state.xi
                    xi_count += 1
            if t > settings.burn_in and (t - settings.burn_in) % settings.thin == 0:
                samples[:, kept] = state.theta
                kept += 1
            if t % settings.eval_every == 0 or t == settings.n_steps:
                scoring = time.perf_counter()
                row = {"step": t, "n_samples": kept * settings.n_chains, "step_size": schedule(t - 1)}
                if n_data:
                    row["passes"] = t * batch_size / n_data
                if trace_position is not None:
                    row.update(trace_position(t))
                if accept_count:
                    row["acceptance_rate"] = accept_sum / accept_count
                if evaluator is not None and kept:
                    row.update(evaluator.score(samples[:, :kept].reshape(-1, target.dim)))
                if evaluator is not None and outcome.moments.count:
                    row.update(evaluator.score_mean(outcome.moments.mean))
                if evaluator is not None:
                    outcome.state_metrics = evaluator.score_state(state.theta, evaluation_rng)
                    row.update(outcome.state_metrics)
                outcome.trace.append(row)
                outcome.evaluation_time += time.perf_counter() - scoring
                _show(bar, row)
            if t % 50 == 0 or t == settings.n_steps:
                bar.update(t - bar.n)
            if t >= due_step or time.perf_counter() >= due_time:
                if t < settings.n_steps:  # the last step's state is the run's result, written next
                    checkpointer.save(snapshot())
                due_step, due_time = checkpointer.next_due(t)
    except KeyboardInterrupt:
        outcome.status = INTERRUPTED
        outcome.error = f"interrupted after {outcome.steps_done} steps"
        log.warning(outcome.error)
    except RecipeError as error:
        outcome.status = FAILED
        outcome.error = f"step {outcome.steps_done + 1}: {error}"
        log.error(outcome.error)
    finally:
        bar.close()
    if clean_stop and checkpointer is not None and checkpointer.saved_step != outcome.steps_done:
        try:
            checkpointer.save(snapshot())
        except KeyboardInterrupt:  # a second signal while saving: the previous checkpoints are intact
            log.warning("checkpoint at step %d not written: interrupted again", outcome.steps_done)
    outcome.wall_time = earlier_wall_time + time.perf_counter() - start
    outcome.samples = samples[:, :kept]
    outcome.final_theta = state.theta
    if accept_count:
        outcome.acceptance_rate = accept_sum / accept_count
    if xi_count:
        chain_means = xi_sum / xi_count
        outcome.thermostat_mean = float(chain_means.mean())
        if chain_means.size > 1:
            outcome.thermostat_se = float(chain_means.std(ddof=1) / np.sqrt(chain_means.size))
    return outcome


def _snapshot(sampler, rng, evaluation_rng, state, samples, outcome: RunOutcome, counters: dict) -> Checkpoint:
    """Everything :func:`run_chains` carries from one step to the next, after ``outcome.steps_done`` steps."""
    arrays, state_scalars = encode_state(state)
    arrays["samples"] = samples[:, : counters["kept"]]
    arrays["moments.mean"] = outcome.moments.mean
    if outcome.moments._scatter is not None:
        arrays["moments.scatter"] = outcome.moments._scatter
    scalars = dict(counters)
    if isinstance(counters["xi_sum"], np.ndarray):
        arrays["xi_sum"] = scalars.pop("xi_sum")
    target_scalars = None
    checkpoint_state = getattr(sampler.target, "checkpoint_state", None)
    if checkpoint_state is not None:
        target_arrays, target_scalars = split_target_state(checkpoint_state())
        arrays.update(target_arrays)
    meta = {"step": outcome.steps_done, "state": state_scalars, "counters": scalars, "moments_count": outcome.moments.count,
            "trace": outcome.trace, "noise_clips": outcome.noise_clips, "reflections": outcome.reflections,
            "evaluation_time": outcome.evaluation_time, "state_metrics": outcome.state_metrics,
            "rng": generator_state(rng), "evaluation_rng": generator_state(evaluation_rng), "target": target_scalars}
    return Checkpoint(arrays, meta)


def _restore(checkpoint: Checkpoint, sampler, settings: RunSettings, rng, samples, outcome: RunOutcome):
    """Inverse of :func:`_snapshot`: fill ``samples`` and ``outcome``, set ``rng`` and the target; return
    (state, evaluation generator, counters). A :class:`CheckpointError` when the checkpoint does not fit the run."""
    arrays, meta = checkpoint.arrays, checkpoint.meta
    n_chains, dim = settings.n_chains, sampler.target.dim
    counters = dict(meta["counters"])
    counters["xi_sum"] = arrays["xi_sum"].copy() if "xi_sum" in arrays else counters.get("xi_sum", 0.0)
    state = decode_state({name: array.copy() for name, array in arrays.items()}, meta["state"])
    kept = counters["kept"]
    if state.theta.shape != (n_chains, dim) or arrays["samples"].shape != (n_chains, kept, dim) or kept > settings.n_kept:
        raise CheckpointError(f"the checkpoint's shapes (theta {state.theta.shape}, samples {arrays['samples'].shape}) "
                              f"do not fit {n_chains} chains of dimension {dim}")
    if not 0 <= checkpoint.step <= settings.n_steps:
        raise CheckpointError(f"the checkpoint is at step {checkpoint.step}, outside 0..{settings.n_steps}")
    samples[:, :kept] = arrays["samples"]
    outcome.moments.count = int(meta["moments_count"])
    outcome.moments.mean = arrays["moments.mean"].copy()
    if outcome.moments._scatter is not None:
        outcome.moments._scatter = arrays["moments.scatter"].copy()
    outcome.steps_done = checkpoint.step
    outcome.trace = list(meta["trace"])
    outcome.noise_clips, outcome.reflections = int(meta["noise_clips"]), int(meta["reflections"])
    outcome.evaluation_time, outcome.state_metrics = float(meta["evaluation_time"]), dict(meta["state_metrics"])
    restore_generator(meta["rng"], rng)
    evaluation_rng = restore_generator(meta["evaluation_rng"])
    restore_state = getattr(sampler.target, "restore_state", None)
    if restore_state is not None and meta["target"] is not None:
        restore_state(join_target_state(arrays, meta["target"]))
    return state, evaluation_rng, counters
