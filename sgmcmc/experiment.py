"""One experiment end to end, without Hydra: validate a config dict, build target, sampler and
schedule, run, and write the versioned result folder.

Result folder (``<results_dir>/<time>-<sampler>-<target>-<hex>/``): ``config.yaml`` (resolved),
``run.log``, ``samples.npz`` (``theta``: (n_chains, n_kept, dim), the draws' ``step_size`` (n_kept,) and, where the
sampler reports them, ``xi``, ``clipped``, ``accept_probability``, ``reflected`` (n_chains, n_kept):
:class:`~sgmcmc.observers.SampleStore`; read back by :mod:`sgmcmc.run_results`), ``moments.npz`` (per-chain ``mean`` and, up
to d = 512, ``covariance`` of every post-burn-in step, and their ``count``), ``trace.csv``, ``figures/*.png``,
with ``run.path_statistics`` ``path_statistics.npz`` (per step the mean over chains of ξ, ξ², r·r/d:
:class:`~sgmcmc.observers.PathStatistics`), with ``run.snapshot_every`` ``snapshots.npz`` (θ of every chain at step 0
and every n-th step up to ``run.snapshot_until``: :class:`~sgmcmc.observers.Snapshots`),
``provenance.json`` and, written last, ``metrics.json`` with the status
(completed / diverged / interrupted / failed).

Checkpoints (:mod:`sgmcmc.checkpoint`): every ``run.checkpoint_every_s`` seconds / ``run.checkpoint_every_steps``
steps, and when SIGINT or SIGTERM stops the run, its full state goes to ``checkpoint.npz`` (the one before to
``checkpoint.prev.npz``); they are deleted when the run ends otherwise than interrupted. ``run.resume=<folder>``
continues such a run in its folder: same config required (``run.resume``, ``run.checkpoint_*``, ``run.progress``
and ``run.results_dir`` may differ), run.log appended, ``provenance.json`` lists the resumes, and every result
file except the timings equals an uninterrupted run's.
"""

from __future__ import annotations

import json
import logging
import signal
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

from sgmcmc import checkpoint as checkpoints
from sgmcmc.config import ConfigError, RunDescription, RunOptions
from sgmcmc.diagnostics.after_run import RunFacts, warnings_after_run
from sgmcmc.evaluation import Evaluator, chain_diagnostics
from sgmcmc.geometry import ExpandedMeanMetric, IdentityMetric, RationalMetric
from sgmcmc.gradient_estimators import EstimatorError, make_estimator
from sgmcmc.keys import describe_config
from sgmcmc.memory import check_run_fits
from sgmcmc.observers import PathStatistics, Snapshots
from sgmcmc.recipe import RecipeError, largest_step, psd_square_root
from sgmcmc.data import DataError, resolve_cache_dir
from sgmcmc.engine.static import use_cache_folder
from sgmcmc.results import new_run_folder, provenance, write_json, write_rows, write_samples, write_text
from sgmcmc.runner import (FAILED, INTERRUPTED, RunOutcome, blocks_for, check_exploration, check_minibatch_order,
                           check_noise_free, run_chains)
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import make_schedule
from sgmcmc.signals import start_worker_threads, workers_ignore_stop_signals
from sgmcmc.targets import make_target
from sgmcmc.tuning import FRICTION_KEYS, Tuned, TuningError, noise_inflation, noise_psd_bound, tune
from sgmcmc.diagnostics.stein import evenly_spaced_samples

log = logging.getLogger("sgmcmc")

EXIT_CODES = {"completed": 0, "failed": 1, "diverged": 3, "interrupted": 130}
# metrics.json's wall-clock entries (top level, and in ``final``): the only ones that differ between two runs of the
# same config and seed (a resumed run, another launcher)
TIMINGS = ("wall_time_s", "steps_per_second", "chain_steps_per_second", "evaluation_time_s", "final_metrics_time_s",
           "figures_time_s", "seconds_per_100_documents")
FINAL_TIMINGS = ("ksd_seconds",)


def without_timings(metrics: dict) -> dict:
    """A metrics.json record without its wall-clock entries (:data:`TIMINGS`, :data:`FINAL_TIMINGS`)."""
    out = {key: value for key, value in metrics.items() if key not in TIMINGS}
    if isinstance(out.get("final"), dict):
        out["final"] = {key: value for key, value in out["final"].items() if key not in FINAL_TIMINGS}
    return out


@dataclass
class Built:
    target: object
    sampler: object
    schedule: object
    settings: RunOptions  # the checked run.* keys
    blocks: object = None  # the sampler's engine blocks (sgmcmc.runner.blocks_for), or None for the generic step
    description: RunDescription = None  # the run's description, with the values tuning chose
    tuned: Tuned = None  # what tuning chose and cost (sgmcmc.tuning), None when the run is not tuned here
    sampler_with: Callable = None  # the same sampler with some keys changed: sampler_with(noise_estimate="known")


def _metric(spec):
    if spec is None:
        return None
    if spec["name"] == "identity":
        return IdentityMetric()
    if spec["name"] == "expanded_mean":
        scales = np.atleast_1d(spec.get("scale", [1.0]))
        if len(set(scales.tolist())) != 1:
            raise ConfigError("sampler.metric.scale of the expanded_mean metric is one number c (G⁻¹ = c·diag(θ))")
        return ExpandedMeanMetric(float(scales[0]))
    return RationalMetric(spec.get("scale", [1.0]), spec.get("softening", [1.0]))


def described(config: dict | RunDescription) -> RunDescription:
    """A config dict validated into its :class:`RunDescription` (:func:`sgmcmc.keys.describe_config`); a description
    as it is (validated already)."""
    return config if isinstance(config, RunDescription) else describe_config(config)


def build(config: dict | RunDescription) -> Built:
    """Build the objects of a run description (a config dict is validated first); every problem is a one-line
    :class:`ConfigError`."""
    return _build(described(config))


def _build(config: RunDescription) -> Built:
    """:func:`build` of a run description."""
    target_params = config.target.arguments()
    if "data_seed" in target_params and target_params["data_seed"] is None:
        target_params["data_seed"] = config.seed  # data generated from the run's seed (SPEC §2 T7)
    from sgmcmc.targets.user import UserModelError  # imports no model: only the error class

    try:
        target = make_target(config.target.name, **target_params)
    except UserModelError as error:  # names target.model itself
        raise ConfigError(str(error)) from None
    except ValueError as error:
        raise ConfigError(f"target: {error}") from None
    except DataError as error:  # missing, corrupt or unreachable data: one line, exit 2, like a bad value
        raise ConfigError(f"data_dir: {error}") from None
    try:
        target = make_estimator(config.gradient.name, target, seed=config.seed, **config.gradient.arguments())
    except EstimatorError as error:  # names its gradient key
        raise ConfigError(str(error)) from None
    sampler_params = {k: v for k, v in config.sampler.arguments().items() if k != "step_size"}
    if "metric" in sampler_params:
        metric = _metric(sampler_params.pop("metric"))
        if metric is not None:
            if isinstance(metric, RationalMetric) and metric.scale.shape[0] not in (1, target.dim):
                raise ConfigError(f"sampler.metric.scale must have 1 or {target.dim} entries for target {target.name}")
            sampler_params["metric"] = metric
    use_cache_folder(resolve_cache_dir(config.cache_dir))  # the engine's callback modules, beside the other caches

    def sampler_with(**values):
        try:
            return make_sampler(config.sampler.name, target, **{**sampler_params, **values})
        except ValueError as error:
            raise ConfigError(f"sampler: {error}") from None

    sampler = sampler_with()
    if "metric" not in sampler_params and isinstance(getattr(sampler, "metric", None), IdentityMetric):
        log.warning("%s with G(θ) = I is %s: target %s has no metric of its own (a model's metric()) and "
                    "sampler.metric is null; set 'sampler.metric={name: rational}' for a position-dependent one",
                    config.sampler.name, "sgld" if config.sampler.name == "sgrld" else "sghmc", target.name)
    settings, tuned, blocks = config.run, None, None
    tuning = config.tune == "auto" or (config.tune is None and config.target.name == "custom")  # tune's null: custom
    if tuning and config.run.resume is not None:  # the values the run was tuned to, from its folder
        config = _with_sampler_values(config, _tuned_values(config))
        sampler = sampler_with(**{key: config.sampler.values[key] for key in FRICTION_KEYS if key in sampler_params})
    elif tuning:
        try:
            sampler, blocks, tuned = tune(sampler_with, target, settings.n_chains, config.seed, settings.backend,
                                          lambda chosen: blocks_for(chosen, settings.backend))
        except TuningError as error:
            raise ConfigError(str(error)) from None
        config = _with_sampler_values(config, tuned.values)
    if config.run.resume is not None:
        _check_resume(config)
    schedule = make_schedule(config.schedule.name, config.step_size, settings.n_steps, **config.schedule.arguments())
    check_exploration(sampler, schedule)  # schedule.exploration needs a sampler that can step without its noise
    check_noise_free(sampler, settings.noise_free_steps, settings.n_steps)  # and so does run.noise_free_steps
    check_minibatch_order(sampler)  # a sweep serves one stochastic gradient a step on the engine's blocks
    _check_at_start(sampler, schedule, config.seed, settings.n_chains, None if tuned is None else tuned.start)
    if blocks is None:
        blocks = blocks_for(sampler, settings.backend)
    return Built(target, sampler, schedule, settings, blocks, config, tuned, sampler_with)


def _with_sampler_values(config: RunDescription, values: dict) -> RunDescription:
    """``config`` with the sampler keys ``values`` (what tuning chose), validated again."""
    changed = config.as_dict()
    changed["sampler"].update(values)
    return described(changed)


def _tuned_values(config: RunDescription) -> dict:
    """The sampler values a tuned run chose, from the config.yaml of the run ``run.resume`` continues (its own check,
    :func:`_check_resume`, then compares the rest)."""
    try:
        saved = yaml.safe_load((Path(config.run.resume) / "config.yaml").read_text())
        section = saved["sampler"]
        return {key: section[key] for key in ("step_size", *FRICTION_KEYS) if key in section}
    except (OSError, yaml.YAMLError, TypeError, KeyError):
        raise ConfigError(f"run.resume: {config.run.resume} has no readable config.yaml with the tuned "
                          "sampler.step_size") from None


# The start check forms dense (dim z)² matrices per chain (CCAdL's D needs the full-data V(θ)): small models only.
START_CHECK_MAX_DIM = 512


def _check_at_start(sampler, schedule, seed: int, n_chains: int, theta0: np.ndarray | None = None) -> None:
    """D PSD, Q skew and ε(2D − εB̂) PSD at the initial state of (at most 8 of) the run's chains, drawn from ``seed``
    (or the first of ``theta0``, tuning's starts), and the initial step size (the last not with ``noise_clip``, which
    clips instead, nor with a running estimate, which starts at 0)."""
    if sampler.kind == "optimiser":  # no recipe: nothing to check
        return
    if sampler.target.dim > START_CHECK_MAX_DIM:  # dim z >= dim θ: skipped below, before any (d, d) state is made
        log.info("dense D/Q check at the start skipped: dim θ = %d > %d (the samplers' D/Q structure is checked "
                 "by the tests on small targets)", sampler.target.dim, START_CHECK_MAX_DIM)
        return
    rng = np.random.default_rng(seed)
    positions = sampler.target.initial_position(min(8, n_chains), rng) if theta0 is None else theta0[:8]
    state = sampler.init(positions, rng)
    step = schedule(0)
    if sampler.pack(state).shape[1] > START_CHECK_MAX_DIM:
        log.info("dense D/Q check at the start skipped: dim z = %d > %d (the samplers' D/Q structure is checked "
                 "by the tests on small targets)", sampler.pack(state).shape[1], START_CHECK_MAX_DIM)
        return
    try:
        recipe = sampler.recipe_at(step)
        sampler.validate(state, step)
        skip_noise_check = sampler.noise_clip or sampler.noise_estimate == "running"
        if recipe.noise_covariance is not None and not skip_noise_check:
            z = sampler.pack(state)
            diffusion, noise = recipe.diffusion(z), recipe.noise_covariance(z)
            try:
                psd_square_root(step * (2 * diffusion - step * noise), name="injected noise covariance eps*(2D - eps*B)")
            except RecipeError as error:  # the gradient noise alone exceeds the noise to inject at this step size
                other = " or sampler.noise_estimate=zero" if sampler.noise_estimate == "known" else ""
                bound = largest_step(diffusion, np.broadcast_to(noise, diffusion.shape))
                raise ConfigError(f"sampler (step_size={step}): {error}; lower sampler.step_size below {bound:.3g} "
                                  f"(the largest for which it is PSD at the run's start){other}") from None
    except RecipeError as error:
        raise ConfigError(f"sampler (step_size={step}): {error}") from None


def _check_resume(description: RunDescription) -> None:
    """``run.resume`` names a run folder of the same config that has not completed (one-line ConfigError)."""
    config, folder = description.as_dict(), Path(description.run.resume)
    try:
        saved = yaml.safe_load((folder / "config.yaml").read_text())
    except FileNotFoundError:
        raise ConfigError(f"run.resume: {folder} is not a run folder (no config.yaml)") from None
    except (OSError, yaml.YAMLError) as error:
        raise ConfigError(f"run.resume: cannot read {folder / 'config.yaml'}: {str(error).splitlines()[0]}") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"run.resume: {folder / 'config.yaml'} is not a config mapping")
    differences = checkpoints.config_differences(config, saved)
    if differences:
        raise ConfigError(f"run.resume: the config differs from the run's in {', '.join(differences)}; resume with the "
                          f"run's own config (its command line is in {folder / 'provenance.json'})")
    if checkpoints.config_hash(config) != checkpoints.config_hash(saved):
        raise ConfigError(f"run.resume: the config differs from the run's ({folder / 'config.yaml'}) in value types")
    try:
        status = json.loads((folder / "metrics.json").read_text()).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    if status is not None and status != INTERRUPTED:
        raise ConfigError(f"run.resume: {folder} has already ended (status {status}); only killed or interrupted "
                          "runs can be resumed")


@contextmanager
def _signals_stop_the_run():
    """SIGINT and SIGTERM stop the run after its current step (it keeps its samples, checkpoints and is marked
    interrupted); a second signal stops it at once. Yields ``stop_requested()`` for :func:`run_chains`.
    An ignored SIGINT (a background job) stays ignored. The signals reach the main thread only
    (:mod:`sgmcmc.signals`), so a signal pending while the process was stopped stops the run before its next step."""
    received = []

    def handler(signum, frame):
        if received:
            raise KeyboardInterrupt
        received.append(signum)

    with workers_ignore_stop_signals():  # worker threads started by the run leave the signals to the main thread
        start_worker_threads()
    previous = {}
    try:
        for number in (signal.SIGINT, signal.SIGTERM):
            if number == signal.SIGINT and signal.getsignal(number) == signal.SIG_IGN:
                continue
            previous[number] = signal.signal(number, handler)
    except ValueError:  # not in the main thread: Ctrl-C stays Python's KeyboardInterrupt
        pass
    try:
        yield lambda: bool(received)
    finally:
        for number, old in previous.items():
            signal.signal(number, old)
        if received:
            log.warning("stopped by %s", signal.Signals(received[0]).name)


class RunFailed(Exception):
    """A run that failed after its folder existed: its ``metrics.json`` says ``failed`` with the one-line ``error``,
    and its traceback is in ``log`` (the run's run.log; None when that file could not be written either). Raised
    from the exception that made it fail."""

    def __init__(self, folder: Path, error: str, log: Path | None):
        self.folder, self.error, self.log = folder, error, log
        where = f"traceback in {log}" if log is not None else f"{folder / 'run.log'} could not be written"
        super().__init__(f"{error} ({where})")


class _RunLog(logging.FileHandler):
    """The run's run.log. A record it cannot write (a full disk) is dropped instead of printing logging's traceback
    on the terminal; ``lost`` then says so."""

    lost = False

    def handleError(self, record: logging.LogRecord) -> None:
        self.lost = True


def run_experiment(config: dict | RunDescription, argv: list[str] | None = None) -> tuple[Path, str]:
    """Run one experiment (its description, or a config dict, validated here) and write its result folder; return
    (folder, status).

    Raises :class:`ConfigError` before creating any folder if the config is invalid, if the run's arrays would not fit
    in memory (:class:`sgmcmc.memory.InsufficientMemory`) or if ``run.results_dir`` cannot hold a new folder. With
    ``run.resume`` the run continues in that folder; an unusable checkpoint is a ConfigError ("run.resume: ...").
    Any other exception once the folder exists (a full disk, a data file found bad mid-run, a bug) makes the run
    ``failed``: metrics.json with the one-line error, the traceback in run.log, and :class:`RunFailed` raised.
    """
    built = _build(described(config))
    config = built.description  # with the values tuning chose
    check_run_fits(built.sampler, built.settings)
    resume = config.run.resume
    folder = _new_folder(config.run.results_dir, f"{config.sampler.name}-{config.target.name}") if resume is None else Path(resume)
    started = time.perf_counter()
    outcomes: list = []  # the run's outcome once run_chains returned it
    try:
        handler = _RunLog(folder / "run.log")  # appends on a resume
    except OSError as error:
        raise _failed(folder, built, error, None, outcomes, started) from error
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.INFO)
    try:
        (folder / "figures").mkdir(exist_ok=True)
        return folder, _run_into(folder, config, built, argv, outcomes)
    except ConfigError:  # run.resume: a checkpoint that does not fit; the folder stays resumable
        raise
    except Exception as error:
        raise _failed(folder, built, error, handler, outcomes, started) from error
    finally:
        logging.getLogger().removeHandler(handler)
        handler.close()


def _new_folder(results_dir: str, name: str) -> Path:
    """A new run folder named after ``name`` under ``run.results_dir``; a ConfigError naming the key when it cannot be
    made."""
    results_dir = Path(results_dir)
    try:
        return new_run_folder(results_dir, name)
    except OSError as error:
        existing = next((path for path in (results_dir, *results_dir.parents) if path.exists()), None)
        if existing is not None and not existing.is_dir():
            reason = f"{existing} is a file"
        else:
            reason = error.strerror or str(error).strip().splitlines()[0]
            reason += f": {error.filename}" if error.filename else ""
        raise ConfigError(f"run.results_dir={results_dir}: cannot create a run folder there ({reason}); set "
                          "run.results_dir to a folder you can write to") from None


def error_line(error: BaseException) -> str:
    """An exception as one line: its type and the first line of its text."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


def _failed(folder: Path, built: Built, error: Exception, handler: _RunLog | None, outcomes: list,
            started: float) -> RunFailed:
    """Record a run that failed with ``error``: its traceback in run.log only (not on the terminal), metrics.json
    with status failed and the one-line error (:func:`_failed_metrics`); the :class:`RunFailed` to raise."""
    line = error_line(error)
    if handler is not None:
        handler.lost = False  # whether the traceback itself reaches run.log
        record = log.makeRecord(log.name, logging.ERROR, __file__, 0, "run failed: %s", (line,),
                                (type(error), error, error.__traceback__))
        handler.handle(record)
        handler.flush()
    outcome = outcomes[0] if outcomes else None
    metrics = _failed_metrics(built, line, outcome, time.perf_counter() - started)
    try:
        write_json(folder / "metrics.json", metrics)
    except OSError:
        pass  # the line still reaches the terminal (and the sweep's manifest)
    lost = handler is None or handler.lost
    return RunFailed(folder, line, None if lost else folder / "run.log")


def _resume_from(folder: Path, config: RunDescription, argv) -> checkpoints.Checkpoint:
    """The newest usable checkpoint of ``folder`` (ConfigError if none), recorded in provenance.json."""
    try:
        checkpoint, name = checkpoints.load_latest(folder, checkpoints.config_hash(config.as_dict()))
    except checkpoints.CheckpointError as error:
        log.error("run.resume: %s", error)
        raise ConfigError(f"run.resume: {error}") from None
    try:
        record = json.loads((folder / "provenance.json").read_text())
    except (OSError, ValueError):
        record = provenance(config.seed, argv)
    now = provenance(config.seed, argv)
    if now["git_commit"] != record.get("git_commit"):
        log.warning("resuming with code at commit %s; the run started at %s", now["git_commit"], record.get("git_commit"))
    resumes = record.setdefault("resumes", [])
    resumes.append({"started_utc": now["started_utc"], "from_step": checkpoint.step, "checkpoint": name,
                    "command_line": now["command_line"], "git_commit": now["git_commit"], "git_dirty": now["git_dirty"],
                    "sgmcmc_version": now["sgmcmc_version"]})
    write_json(folder / "provenance.json", record)
    log.info("resuming %s from step %d (%s), resume %d", folder, checkpoint.step, name, len(resumes))
    return checkpoint


def _run_into(folder: Path, config: RunDescription, built: Built, argv, outcomes: list) -> str:
    resume = None
    if config.run.resume is not None:
        resume = _resume_from(folder, config, argv)
    else:
        write_text(folder / "config.yaml", yaml.safe_dump(config.as_dict(), sort_keys=False))
        write_json(folder / "provenance.json", provenance(config.seed, argv))
    log.info("run folder %s", folder)
    if built.tuned is not None:
        log.info("%s", built.tuned.line())
    log.info("sampler %s, target %s, schedule %s, %d chains x %d steps, seed %d", config.sampler.name,
             config.target.name, config.schedule.name, built.settings.n_chains, built.settings.n_steps, config.seed)
    evaluator = Evaluator(built.target)
    rng = np.random.default_rng(config.seed)
    observers, theta0 = _path_observers(config.run, built, rng, resume)
    checkpointer = checkpoints.Checkpointer(
        folder, checkpoints.config_hash(config.as_dict()), config.run.checkpoint_every_s,
        config.run.checkpoint_every_steps)
    with _signals_stop_the_run() as stop_requested:
        try:
            outcome = run_chains(built.sampler, built.schedule, built.settings, rng, evaluator,
                                 stop_requested=stop_requested, theta0=theta0, checkpointer=checkpointer, resume=resume,
                                 observers=observers, ksd_points=config.run.ksd_points, blocks=built.blocks)
        except checkpoints.CheckpointError as error:  # the checkpoint does not fit this run's objects
            log.error("run.resume: %s", error)
            raise ConfigError(f"run.resume: {error}") from None
    outcomes.append(outcome)
    for observer in observers:  # next to samples.npz, also for an interrupted run (rewritten by its resume)
        write_samples(folder / f"{observer.name}.npz", **observer.arrays())
    _write_results(folder, config, built, evaluator, outcome)
    if outcome.status != INTERRUPTED:  # only an interrupted run can be resumed
        checkpoints.remove_checkpoints(folder)
    return outcome.status


def _path_observers(run: RunOptions, built: Built, rng: np.random.Generator, resume) -> tuple[list, "np.ndarray | None"]:
    """The observers of ``run.path_statistics`` and ``run.snapshot_every``, and the initial θ: tuning's starts, or when
    the snapshots start with it, drawn here exactly as :func:`run_chains` draws it (so the random stream and the
    samples do not change)."""
    observers, theta0 = [], None if built.tuned is None else built.tuned.start
    if run.path_statistics:
        observers.append(PathStatistics())
    if run.snapshot_every:
        if resume is None and theta0 is None:
            theta0 = built.target.initial_position(built.settings.n_chains, rng)
        observers.append(Snapshots(built.settings.n_chains, built.target.dim, run.snapshot_every,
                                   run.snapshot_until, theta0))
    return observers, theta0


def _write_results(folder: Path, config: RunDescription, built: Built, evaluator, outcome) -> None:
    """samples.npz, moments.npz, trace.csv, figures, the target's artifacts and, last, metrics.json."""
    names = built.target.parameter_names()
    write_samples(folder / "samples.npz", theta=outcome.samples, **outcome.sample_stats,
                  **({} if names is None else {"parameter_names": np.array(names, dtype=str)}))
    if outcome.moments is not None and outcome.moments.count:
        covariance = outcome.moments.covariance()
        extra = {} if covariance is None else {"covariance": covariance}
        write_samples(folder / "moments.npz", mean=outcome.moments.mean, count=np.array(outcome.moments.count), **extra)
    trace = outcome.trace  # rows (dicts): trace.csv and the metric figure need no pandas
    write_rows(folder / "trace.csv", trace)
    started = time.perf_counter()
    final = _sample_scores(evaluator, outcome, built.target.dim)
    final.update(chain_diagnostics(outcome.samples) if outcome.samples.size else {})
    if outcome.moments is not None and outcome.moments.count:
        final.update(evaluator.score_mean(outcome.moments.mean))
    final.update(outcome.state_metrics)
    final.update(outcome.predictive)
    final.update(outcome.hyperparameters)
    constant_step = config.step_size if config.schedule.name == "constant" else None
    final.update(_thermostat(built, outcome, constant_step))
    final.update(_noise_inflation(built, outcome, constant_step))
    from sgmcmc.diagnostics.stein import final_ksd_metrics  # the IMQ kernel Stein discrepancy and its cost

    final.update(final_ksd_metrics(built.target, outcome.samples, config.run.ksd_points))
    scored = time.perf_counter()
    figures = _figures(folder, built, outcome, trace, config) if config.run.figures else []
    drawn = time.perf_counter()
    artifacts = built.target.write_artifacts(folder, outcome.final_theta) if outcome.steps_done else []
    metrics = _metrics(built, outcome, final, figures, artifacts, (scored - started, drawn - scored))
    facts = RunFacts(built.settings.n_chains, built.settings.n_steps, built.settings.burn_in, config.step_size,
                     built.target.dim)
    warned = warnings_after_run(metrics, facts)
    metrics["warnings"] = [warning.as_dict() for warning in warned]
    if built.tuned is not None:
        metrics["tuning"] = built.tuned.record()
    write_json(folder / "metrics.json", metrics)
    log.info("status %s; final metrics %s", outcome.status, {k: round(v, 6) for k, v in final.items()})
    for warning in warned:  # after the results: each names what it measured and the override that helps
        log.warning("%s", warning.line())


def _sample_scores(evaluator, outcome: RunOutcome, dim: int) -> dict:
    """The sample metrics of every kept sample: the trace's where its last scored row is the run's last step (the same
    numbers up to the rounding of the moment sums, :class:`~sgmcmc.evaluation.RunningScore`; scoring them again went over
    every sample a second time for W1), else :meth:`~sgmcmc.evaluation.Evaluator.score` on them."""
    if not outcome.samples.size:
        return {}
    step, scores = outcome.sample_scores
    if step == outcome.steps_done:
        return dict(scores)
    return evaluator.score(outcome.samples.reshape(-1, dim))


def _metrics(built: Built, outcome: RunOutcome, final: dict, figures: list[str], artifacts: list[str],
             seconds: tuple = (None, None)) -> dict:
    """The record of metrics.json; ``seconds`` are those of the final metrics and of the figures (None: not made)."""
    steps = max(outcome.steps_done, 1)
    return {
        "status": outcome.status,
        "error": outcome.error,
        "steps_done": outcome.steps_done,
        "n_steps": built.settings.n_steps,
        "n_chains": built.settings.n_chains,
        "n_samples": int(outcome.samples.shape[0] * outcome.samples.shape[1]),
        "wall_time_s": outcome.wall_time,
        "steps_per_second": steps / outcome.wall_time if outcome.wall_time > 0 else None,
        "chain_steps_per_second": steps * built.settings.n_chains / outcome.wall_time if outcome.wall_time > 0 else None,
        "evaluation_time_s": outcome.evaluation_time,
        "final_metrics_time_s": seconds[0],
        "figures_time_s": seconds[1],
        **_document_rate(built.target, outcome),
        "acceptance_rate": outcome.acceptance_rate,
        "noise_clips": outcome.noise_clips,
        "reflections": outcome.reflections,
        "clip_draws": outcome.clip_draws,
        "clip_decompositions": outcome.clip_decompositions,
        "final": final,
        "figures": figures,
        "artifacts": artifacts,
        "warnings": [],  # the checks after a completed run (sgmcmc.diagnostics.after_run)
        **_estimator_cost(built.target),
    }


def _estimator_cost(target) -> dict:
    """``gradient_estimator``: a gradient estimator's cost so far (:meth:`CentredGradients.cost`); {} for minibatch."""
    from sgmcmc.gradient_estimators import CentredGradients

    return {"gradient_estimator": target.cost()} if isinstance(target, CentredGradients) else {}


def _failed_metrics(built: Built, error: str, outcome: RunOutcome | None, wall_time: float) -> dict:
    """The metrics.json record of a run that failed with ``error``: with no results written; from ``outcome`` when the
    sampling had ended, else only what is known before it (what it did is not: null)."""
    if outcome is not None:
        return {**_metrics(built, outcome, {}, [], []), "status": FAILED, "error": error}
    unknown = dict.fromkeys(_metrics(built, RunOutcome(samples=np.empty((0, 0, 0))), {}, [], []))
    return {**unknown, "status": FAILED, "error": error, "n_steps": built.settings.n_steps,
            "n_chains": built.settings.n_chains, "wall_time_s": wall_time, "final": {}, "figures": [], "artifacts": [],
            "warnings": []}


def _document_rate(target, outcome) -> dict:
    """Seconds per 100 documents of a streaming target (LDA), sampling only (trace scoring excluded),
    as [R] Fig. 3's runtime table reports them."""
    per_step = target.documents_per_step
    if per_step is None or not outcome.steps_done:
        return {}
    documents = outcome.steps_done * per_step
    return {"documents": documents,
            "seconds_per_100_documents": 100.0 * (outcome.wall_time - outcome.evaluation_time) / documents}


# The prediction averages V(θ) (O(N·d²) per position for a data target) and solves a 2d-dimensional
# Lyapunov equation per root-finding step: done for small models (the synthetic targets, Normal-Gamma) only.
THERMOSTAT_PREDICTION_MAX_DIM = 16
THERMOSTAT_PREDICTION_POSITIONS = 2000


def _thermostat(built: Built, outcome, step_size: float | None) -> dict:
    """Mean ξ against its predicted value at the constant ``step_size`` (SGNHT, CCAdL; None, a schedule that changes
    it: no prediction)."""
    if outcome.thermostat_mean is None:
        return {}
    out = {"thermostat_mean": outcome.thermostat_mean}
    if outcome.thermostat_se is not None:
        out["thermostat_se"] = outcome.thermostat_se
    small = built.target.dim <= THERMOSTAT_PREDICTION_MAX_DIM
    if small and step_size is not None and outcome.samples.size:
        positions = outcome.samples.reshape(-1, built.target.dim)
        positions = positions[:: max(1, positions.shape[0] // THERMOSTAT_PREDICTION_POSITIONS)]
        for key, method in (("thermostat_predicted", built.sampler.predicted_thermostat),
                            ("thermostat_first_order", built.sampler.first_order_thermostat)):
            value = method(positions, step_size)
            if value is not None:
                out[key] = value
    return out


# The inflation forms the recipe's (dim z)² D and B̂ at a few draws: small models only.
NOISE_INFLATION_POSITIONS = 8


def _noise_inflation(built: Built, outcome, step_size: float | None) -> dict:
    """``noise_inflation``: with ``noise_estimate=zero``, the relative inflation of the posterior variance by the
    minibatch noise at the constant ``step_size``, ε/ε_psd at the worst of a few kept draws
    (:func:`sgmcmc.tuning.noise_inflation`); {} where the noise is subtracted, unknown, the state too large, or a
    thermostat absorbs it (SGNHT, CCAdL, BADODAB: ξ rises by about εV̂/2)."""
    sampler = built.sampler
    if (getattr(sampler, "noise_estimate", None) != "zero" or step_size is None or not outcome.samples.size
            or built.target.dim > START_CHECK_MAX_DIM or not np.all(np.isfinite(outcome.samples))):
        return {}
    positions = evenly_spaced_samples(outcome.samples, NOISE_INFLATION_POSITIONS)
    if sampler.init(positions[:1], np.random.default_rng(0)).xi is not None:
        return {}
    if built.target.noise_covariance(positions[:1]) is None:
        return {}
    try:
        bound = noise_psd_bound(built.sampler_with(noise_estimate="known"), positions)
    except ConfigError:  # the sampler takes no known noise on this target
        return {}
    return {"noise_inflation": noise_inflation(step_size, bound)}


def _figures(folder: Path, built: Built, outcome, trace: list[dict], config: RunDescription) -> list[str]:
    from sgmcmc import plotting  # matplotlib: imported by the runs that draw figures only

    samples, target, figures = outcome.samples, built.target, []
    label = f"{config.sampler.name} on {target.name}, ε={config.step_size} ({outcome.status})"
    if samples.shape[1] > 0:
        if target.has_exact_density and target.dim == 1:
            figures.append(plotting.histogram_1d(samples, target, folder / "figures" / "histogram.png", label))
        elif target.has_exact_density and target.dim == 2:
            figures.append(plotting.contour_2d(samples, target, folder / "figures" / "contour.png", label))
        first_kept = built.settings.burn_in + built.settings.thin
        figures.append(plotting.chain_traces(samples, folder / "figures" / "trace.png", first_kept, built.settings.thin))
    if len(trace):
        path = plotting.metric_trace(trace, folder / "figures" / "metrics.png")
        if path is not None:
            figures.append(path)
    return [str(Path(path).relative_to(folder)) for path in figures]
