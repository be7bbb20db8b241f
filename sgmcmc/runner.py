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
from typing import Callable, Optional, Sequence

import numpy as np

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
from sgmcmc.config import ConfigError, RunOptions
from sgmcmc.engine.blocks import kernel_of, numpy_block
from sgmcmc.engine.driver import Blocks
from sgmcmc.evaluation import Evaluator
from sgmcmc.observers import (GibbsObserver, MomentsObserver, PredictiveObserver, ProgressObserver, RunningMoments,
                              SampleStore, StepCounters, ThermostatObserver, TraceObserver)

__all__ = ["RunOutcome", "RunningMoments", "run_chains", "iterate_blocks"]
from sgmcmc.samplers.base import Sampler
from sgmcmc.schedules import exploring as schedule_exploring, phase_end as schedule_phase_end
from sgmcmc.schedules import noise_free_start, step_sizes as schedule_step_sizes
from sgmcmc.signals import workers_ignore_stop_signals

log = logging.getLogger(__name__)

COMPLETED, DIVERGED, INTERRUPTED, FAILED = "completed", "diverged", "interrupted", "failed"


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
    clip_draws: int = 0  # clipped draws with a full covariance (chains × steps) ...
    clip_decompositions: int = 0  # ... and how many of them had no Cholesky factor (eigendecomposed)
    thermostat_mean: Optional[float] = None  # mean ξ over chains and post-burn-in steps (SGNHT, CCAdL)
    thermostat_se: Optional[float] = None  # its standard error from the spread of the chains' means
    moments: Optional["RunningMoments"] = None  # per-chain mean (and covariance) of every post-burn-in step
    final_theta: Optional[np.ndarray] = None  # the last finite state's θ (n_chains, dim)
    evaluation_time: float = 0.0  # seconds of wall_time spent scoring the trace rows
    state_metrics: dict = field(default_factory=dict)  # the target's metrics of the last scored state (LDA perplexity)
    # the sample metrics of all kept samples at a step (TraceObserver.sample_scores): (step, scores), -1 for none
    sample_scores: tuple = (-1, {})
    predictive: dict = field(default_factory=dict)  # metrics of the averaged test-set predictive (BNN, BPMF)
    hyperparameters: dict = field(default_factory=dict)  # the last Gibbs-step values, mean over chains
    # the kept draws' step_size (n_kept,) and xi / clipped / accept_probability / reflected (c, n_kept) where reported
    sample_stats: dict = field(default_factory=dict)


def block_steps(n_chains: int, dim: int, compiled: bool) -> int:
    """Steps per block: a block's paths hold about 2¹⁸ numbers each, with at most 8,192 steps (compiled) or 64 steps
    (the generic recipe step, which also stops early when asked to; LDA's d = 385,100 gets one step per block)."""
    return int(max(1, min(8192 if compiled else 64, 2**18 // max(1, n_chains * dim))))


class BlockPace:
    """The steps of the next block at most: one for the first, then as many as ``seconds`` of wall time hold at the
    pace of the last block (its steps and the observers'), at least one: a stop request waits for the block in
    progress, so it waits about ``seconds`` (``run.block_seconds``), whatever a step costs."""

    def __init__(self, seconds: float):
        self.seconds, self.limit, self.started = float(seconds), 1, time.perf_counter()

    def update(self, steps: int) -> None:
        now = time.perf_counter()
        elapsed, self.started = now - self.started, now
        self.limit = max(1, int(self.seconds * steps / elapsed)) if elapsed > 0 else max(1, 2 * self.limit)


def next_stop(t: int, settings: RunOptions, size: int, due_step: float, intervals: Sequence[int] = (),
              limit: int = 2**62) -> int:
    """The end of the block that starts after step t: the next multiple of ``size``, step t + ``limit`` (the pace's,
    :class:`BlockPace`), end of burn-in, periodic checkpoint, multiple of one of ``intervals`` (the target's Gibbs
    steps and predictions) or the last step, whichever comes first. The trace's rows do not end a block: the
    observers see it in parts (:meth:`~sgmcmc.engine.blocks.Block.parts`); measured on examples/robust_regression.py
    at 1 chain, blocks ended at every 100th step cost 2.5 µs a step on top of 4.9."""
    candidates = [(t // size + 1) * size, t + limit, settings.n_steps]
    candidates += [(t // every + 1) * every for every in intervals]
    if settings.burn_in > t:
        candidates.append(settings.burn_in)
    if due_step > t:
        candidates.append(int(min(due_step, settings.n_steps)))
    return min(candidates)


def check_exploration(sampler: Sampler, schedule) -> None:
    """A schedule with exploration steps (``schedule.exploration`` > 0) needs a sampler that can take its step without
    the injected noise (:meth:`~sgmcmc.samplers.base.Sampler.can_explore`); else a one-line ConfigError."""
    if getattr(schedule, "exploration", 0.0) > 0 and not sampler.can_explore():
        raise ConfigError(f"schedule.exploration={schedule.exploration}: {sampler.name} with integrator "
                          f"{sampler.integrator} cannot take its step without the injected noise (use 0, or sgld "
                          f"or sghmc with a closed-form integrator other than aboba)")


def check_noise_free(sampler: Sampler, steps: int, n_steps: int) -> None:
    """``run.noise_free_steps`` > 0 needs a sampler that can take its step without the injected noise, and a sampler
    (not an optimiser) some step after them that samples; else a one-line ConfigError."""
    if steps and not sampler.can_explore():
        raise ConfigError(f"run.noise_free_steps={steps}: {sampler.name} with integrator {sampler.integrator} cannot "
                          "take its step without the injected noise (use 0, or sgld or sghmc with a closed-form "
                          "integrator other than aboba)")
    if steps >= n_steps and sampler.kind != "optimiser":
        raise ConfigError(f"run.noise_free_steps={steps} leaves no step of run.n_steps={n_steps} that samples: use "
                          "fewer noise-free steps or more steps")


def check_minibatch_order(sampler: Sampler) -> None:
    """A target that sweeps its data in order (``target.minibatch_order=sweep``) hands the engine's blocks one
    minibatch a step: a sampler with one stochastic gradient a step on those blocks takes it; an exact gradient (HMC),
    a trajectory's several minibatches (SGHMC + MH) or the generic recipe step (which draws its own) would not, and are
    refused in one line."""
    if getattr(sampler.target, "minibatch_order", "random") != "sweep":
        return
    if not sampler.uses_stochastic_gradient or sampler.engine_passes() != 1 or sampler.integrator == "generic":
        raise ConfigError(f"target.minibatch_order=sweep gives one minibatch a step on the engine's blocks: "
                          f"sampler={sampler.name} (integrator {sampler.integrator}) takes an exact gradient, several "
                          "minibatches a step or its own draws; use target.minibatch_order=random")


def iterate_blocks(sampler: Sampler, schedule: Callable[[int], float], rng: np.random.Generator, state, start: int,
                   stops: Callable[[int], int], n_steps: int, stop_requested: Callable[[], bool] = lambda: False,
                   advance: Optional[Blocks] = None):
    """Run the chains from step ``start`` in blocks, yielding each :class:`~sgmcmc.engine.blocks.Block`; the block
    after step t ends at ``stops(t)``. ``advance``: the sampler's blocks on the engine
    (:func:`~sgmcmc.engine.blocks.kernel_of`, made once a run: making them may say something), or None for the generic
    recipe step (:func:`~sgmcmc.engine.blocks.numpy_block`, ``integrator=generic``). The exploration steps of a
    schedule with phases (``schedule.exploration``) run the engine's blocks without the injected noise
    (:meth:`~sgmcmc.engine.driver.Blocks.without_noise`), the same random numbers drawn, in blocks of their own marked
    ``exploring``. Stops after a block that diverged or failed, at ``n_steps``, or when ``stop_requested()`` (asked
    before every block, and before every generic step)."""
    check_exploration(sampler, schedule)
    if advance is None and sampler.integrator != "generic":
        advance = blocks_for(sampler)  # or the one-line refusal: only the generic step runs without blocks
    explore = advance.without_noise() if isinstance(advance, Blocks) and sampler.can_explore() else None
    t = start
    while t < n_steps:
        if stop_requested():
            return
        stop = schedule_phase_end(schedule, t, stops(t))  # a block is all exploration or all sampling
        step_sizes = schedule_step_sizes(schedule, t, stop)
        if schedule_exploring(schedule, t) and explore is not None:  # the engine's blocks without injected noise
            block = explore(rng, state, step_sizes, t)
            block.exploring = True
        elif advance is not None:
            block = advance(rng, state, step_sizes, t)
        else:
            block = numpy_block(sampler, rng, state, step_sizes, t, stop_requested)
        yield block
        if block.status is not None or block.stop < stop:
            return
        state, t = block.state, block.stop


def blocks_for(sampler: Sampler, backend: str = "compiled") -> Optional[Blocks]:
    """The sampler's blocks on its target (:func:`~sgmcmc.engine.blocks.kernel_of`), or None for the ``generic``
    integrator's recipe step; a one-line ConfigError where a sampler with another integrator has none (its target
    hands the engine no functions, or not those its metric or noise estimate needs)."""
    advance = kernel_of(sampler, backend)
    if advance is not None or sampler.integrator == "generic":
        return advance
    target = sampler.target
    if sampler.engine_metric() is None:
        cause = (f"the metric G(θ) of target {target.name!r} ({type(getattr(sampler, 'metric', None)).__name__}) has "
                 f"no engine function (DiagonalMetric.engine_function)")
    else:
        cause = (f"target {target.name!r} hands the engine no functions, or not those noise_estimate="
                 f"{sampler.noise_estimate} needs")
    remedy = ("set sampler.integrator=generic (the recipe step, slow) or use another sampler"
              if "generic" in sampler.integrators else "use another sampler")
    raise ConfigError(f"sampler={sampler.name} (integrator {sampler.integrator}) has no engine blocks: {cause}; "
                      f"{remedy}")


def run_chains(
    sampler: Sampler,
    schedule: Callable[[int], float],
    settings: RunOptions,
    rng: np.random.Generator,
    evaluator: Optional[Evaluator] = None,
    stop_requested: Callable[[], bool] = lambda: False,
    theta0: Optional[np.ndarray] = None,
    checkpointer: Optional[Checkpointer] = None,
    resume: Optional[Checkpoint] = None,
    observers: Sequence = (),
    ksd_points: int = 0,
    blocks: Optional[Blocks] = None,
) -> RunOutcome:
    """Run ``settings.n_chains`` chains of ``sampler`` from the target's initial positions.

    Random numbers come from ``rng`` only, in a fixed order, so a seed fixes the samples bit for bit (compiled and
    numpy blocks draw the same numbers). The sample kept at step t (1-based) is the state after t steps, for
    t > burn_in and (t − burn_in) divisible by ``thin``. ``theta0`` (n_chains, dim) replaces the target's initial
    positions (e.g. over-dispersed starts for a reference run); nothing is then drawn for them.

    The loop is :func:`iterate_blocks`; the :mod:`sgmcmc.observers` fold each block (samples, moments, thermostat,
    counters, trace), and ``observers`` adds the caller's own (e.g. a :class:`~sgmcmc.observers.PathObserver`); those
    with a ``state_dict`` are saved in the checkpoints and restored on a resume.
    ``stop_requested()`` is asked before every block; when it says True the run stops there (status interrupted)
    and, with a ``checkpointer``, saves a checkpoint of that step. The checkpointer also saves one every
    ``every_steps`` steps / ``every_s`` seconds. ``resume``, a checkpoint of the same sampler, target, settings
    and seed, continues that run instead of starting one (``rng`` is set to the saved state; ``theta0`` is
    ignored): its samples, moments and trace equal the uninterrupted run's bit for bit.
    ``ksd_points`` > 0 (``run.ksd_points``) adds the IMQ kernel Stein discrepancy of at most that many kept samples to
    the trace rows of a target without data (:class:`~sgmcmc.observers.TraceObserver`); 0, the default, none.
    The first ``settings.noise_free_steps`` steps take the sampler's step without its injected noise
    (:func:`~sgmcmc.schedules.noise_free_start`), run as a schedule's exploration steps are.
    ``blocks``: the sampler's blocks as :func:`blocks_for` made them (:func:`sgmcmc.experiment.build` makes them once,
    before the run folder); None: made here, a sampler without them refused in one ConfigError line.
    """
    target = sampler.target
    check_noise_free(sampler, settings.noise_free_steps, settings.n_steps)
    check_minibatch_order(sampler)
    schedule = noise_free_start(schedule, settings.noise_free_steps)
    # an optimiser (SGD, SGD with momentum) keeps no samples and no moments: nothing is "after burn-in"
    optimiser = sampler.kind == "optimiser"
    keep_from = settings.n_steps if optimiser else settings.burn_in
    store = SampleStore(settings.n_chains, 0 if optimiser else settings.n_kept, target.dim, keep_from, settings.thin)
    moments = MomentsObserver(settings.n_chains, target.dim, keep_from)
    thermostat = ThermostatObserver(settings.n_chains, settings.burn_in)
    counters = StepCounters()
    if resume is None:
        if theta0 is None:
            theta0 = target.initial_position(settings.n_chains, rng)
        elif np.shape(theta0) != (settings.n_chains, target.dim):
            raise ValueError(f"theta0 must have shape ({settings.n_chains}, {target.dim}); got {np.shape(theta0)}")
        state = sampler.init(theta0, rng)
        # Metrics that draw random numbers (LDA's held-out Gibbs) use their own generator, so how often the
        # trace is scored never changes the samples (drawn only for such targets: other runs keep their streams).
        evaluation_rng = np.random.default_rng(rng.integers(2**62)) if target.random_metrics else None
    else:
        evaluation_rng = np.random.default_rng() if target.random_metrics else None
    # Every run starts from the target's initial hyperparameters (a resumed one then loads its checkpoint's). Their
    # Gibbs steps draw from their own generator (drawn only for such targets, after the evaluation's). An optimiser
    # follows the target's optimiser_hyperparameters: the initial values (the default, and the BNN's and BPMF's: with
    # the conditional's mode, the authors' MAP update, the BNN's first-layer precision grew by orders of magnitude under
    # SGD and held the weights near 0, and BPMF's λ_U, λ_V reached their largest value n_g/2 with U = V = 0), or the mode.
    target.reset_hyperparameters()
    mode = optimiser and target.optimiser_hyperparameters == "mode"
    gibbs_every = 0 if optimiser and not mode else target.gibbs_every
    if resume is None:
        gibbs_rng = np.random.default_rng(rng.integers(2**62)) if gibbs_every and not mode else None
    else:
        gibbs_rng = np.random.default_rng() if gibbs_every and not mode else None  # set from the checkpoint
    gibbs = [GibbsObserver(target, gibbs_every, gibbs_rng, mode, last=settings.n_steps)] if gibbs_every else []
    predictive = PredictiveObserver(target, target.predict_every, settings.burn_in, average=not optimiser) \
        if target.predict_every else None
    trace = TraceObserver(settings, schedule, evaluator, target, store, moments, counters, evaluation_rng, predictive,
                          ksd_points=ksd_points)
    # the predictions before the trace (a row takes the metrics of its step), the Gibbs step after it (a row records
    # the hyperparameters its steps used)
    run_observers = [store, moments, thermostat, counters, *([predictive] if predictive else []), trace, *gibbs]
    intervals = [observer.every for observer in (*gibbs, predictive) if observer is not None]
    # the caller's observers with a state of their own go into the checkpoints too
    checkpointed = [*run_observers, *(observer for observer in observers if hasattr(observer, "state_dict"))]
    names = [observer.name for observer in checkpointed]
    if len(set(names)) < len(names):
        raise ValueError(f"observers need distinct names (their checkpoint keys); got {', '.join(sorted(names))}")
    outcome = RunOutcome(samples=store.samples, moments=moments.moments)
    earlier_wall_time = 0.0  # of the sessions before a resume
    if resume is not None:
        state, earlier_wall_time = _restore(resume, sampler, settings, rng, trace, checkpointed, outcome)
    start = time.perf_counter()

    def snapshot() -> Checkpoint:
        return _snapshot(sampler, rng, trace.evaluation_rng, state, outcome.steps_done, checkpointed,
                         earlier_wall_time + time.perf_counter() - start)

    due_step, due_time = checkpointer.next_due(outcome.steps_done) if checkpointer else (float("inf"), float("inf"))
    advance = blocks if blocks is not None else blocks_for(sampler, settings.backend)
    size = block_steps(settings.n_chains, target.dim, advance is not None)
    with workers_ignore_stop_signals():  # tqdm's monitor thread leaves SIGINT/SIGTERM to the main thread
        progress = ProgressObserver(trace, settings.n_steps, outcome.steps_done, enabled=settings.progress)
    clean_stop = False  # stopped by stop_requested between two steps: the state is consistent, checkpoint it
    try:
        pace = BlockPace(settings.block_seconds)
        blocks = iterate_blocks(sampler, schedule, rng, state, outcome.steps_done,
                                lambda t: next_stop(t, settings, size, due_step, intervals, pace.limit),
                                settings.n_steps, stop_requested, advance)
        for block in blocks:
            parts = block.parts(settings.eval_every)  # the observers see a block per trace row
            for part in parts:
                for observer in (*run_observers, *observers):
                    observer.update(part)
            block.state = parts[-1].state  # as an observer left it (the Gibbs step drops a kept gradient)
            state, outcome.steps_done = block.state, block.stop
            if block.status is not None:
                outcome.status, outcome.error = block.status, block.error
                (log.warning if block.status == DIVERGED else log.error)(outcome.error)
                break
            progress.update(block)
            pace.update(block.stop - block.start)
            t = block.stop
            if checkpointer is not None and (t >= due_step or time.perf_counter() >= due_time):
                if t < settings.n_steps:  # the last step's state is the run's result, written next
                    checkpointer.save(snapshot())
                due_step, due_time = checkpointer.next_due(t)
        if outcome.status == COMPLETED and outcome.steps_done < settings.n_steps:
            clean_stop = True
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        outcome.status = INTERRUPTED
        outcome.error = f"interrupted after {outcome.steps_done} steps"
        log.warning(outcome.error)
    finally:
        progress.close()
    if clean_stop and checkpointer is not None and checkpointer.saved_step != outcome.steps_done:
        try:
            checkpointer.save(snapshot())
        except KeyboardInterrupt:  # a second signal while saving: the previous checkpoints are intact
            log.warning("checkpoint at step %d not written: interrupted again", outcome.steps_done)
    outcome.wall_time = earlier_wall_time + time.perf_counter() - start
    outcome.samples, outcome.sample_stats = store.samples, store.sample_stats
    outcome.final_theta = state.theta
    outcome.trace, outcome.state_metrics, outcome.evaluation_time = trace.rows, trace.state_metrics, trace.seconds
    outcome.sample_scores = trace.sample_scores
    outcome.noise_clips, outcome.reflections = counters.noise_clips, counters.reflections
    outcome.clip_draws, outcome.clip_decompositions = counters.clip_draws, counters.clip_decompositions
    outcome.acceptance_rate = counters.acceptance_rate
    outcome.thermostat_mean, outcome.thermostat_se = thermostat.summary()
    outcome.predictive = dict(predictive.latest) if predictive is not None else {}
    outcome.hyperparameters = {name: float(np.mean(values)) for name, values in target.hyperparameters().items()}
    return outcome


def _split(prefix: str, state: dict, arrays: dict) -> dict:
    """An observer's state: its arrays go to ``arrays`` as ``<prefix>.<key>``; the JSON scalars are returned."""
    scalars = {}
    for key, value in state.items():
        if isinstance(value, np.ndarray):
            arrays[f"{prefix}.{key}"] = value
        else:
            scalars[key] = value
    return scalars


def _joined(prefix: str, arrays: dict, scalars: dict) -> dict:
    state = {key[len(prefix) + 1:]: value.copy() for key, value in arrays.items() if key.startswith(prefix + ".")}
    state.update(scalars)
    return state


def _snapshot(sampler, rng, evaluation_rng, state, step: int, observers, wall_time: float) -> Checkpoint:
    """Everything :func:`run_chains` carries from one block to the next, after ``step`` steps."""
    arrays, state_scalars = encode_state(state)
    observer_scalars = {observer.name: _split(f"observer.{observer.name}", observer.state_dict(), arrays) for observer in observers}
    target_scalars = None
    target_state = sampler.target.checkpoint_state()
    if target_state is not None:
        target_arrays, target_scalars = split_target_state(target_state)
        arrays.update(target_arrays)
    meta = {"step": step, "state": state_scalars, "observers": observer_scalars, "wall_time": wall_time,
            "rng": generator_state(rng), "evaluation_rng": generator_state(evaluation_rng), "target": target_scalars}
    return Checkpoint(arrays, meta)


def _restore(checkpoint: Checkpoint, sampler, settings: RunOptions, rng, trace: TraceObserver, observers, outcome: RunOutcome):
    """Inverse of :func:`_snapshot`: load the observers, set ``rng``, the trace's generator and the target; return
    (state, wall time so far). A :class:`CheckpointError` when the checkpoint does not fit the run."""
    arrays, meta = checkpoint.arrays, checkpoint.meta
    n_chains, dim = settings.n_chains, sampler.target.dim
    if "observers" not in meta:
        raise CheckpointError("the checkpoint was written by an older run loop (no observer states); start the run again")
    state = decode_state({name: array.copy() for name, array in arrays.items()}, meta["state"])
    samples = arrays.get("observer.samples.samples")
    kept = int(meta["observers"]["samples"]["kept"])
    if state.theta.shape != (n_chains, dim) or samples is None or samples.shape != (n_chains, kept, dim) or kept > settings.n_kept:
        raise CheckpointError(f"the checkpoint's shapes (theta {state.theta.shape}, samples "
                              f"{None if samples is None else samples.shape}) do not fit {n_chains} chains of dimension {dim}")
    if not 0 <= checkpoint.step <= settings.n_steps:
        raise CheckpointError(f"the checkpoint is at step {checkpoint.step}, outside 0..{settings.n_steps}")
    for observer in observers:
        if observer.name not in meta["observers"]:
            raise CheckpointError(f"the checkpoint has no state of the {observer.name} observer")
        observer.load_state_dict(_joined(f"observer.{observer.name}", arrays, meta["observers"][observer.name]))
    outcome.steps_done = checkpoint.step
    restore_generator(meta["rng"], rng)
    trace.evaluation_rng = restore_generator(meta["evaluation_rng"])
    if meta["target"] is not None:
        sampler.target.restore_state(join_target_state(arrays, meta["target"]))
    return state, float(meta["wall_time"])
