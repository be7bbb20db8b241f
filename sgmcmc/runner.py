"""The driver: runs a sampler's chains for n steps, keeps thinned post-burn-in samples, traces the
metrics along the way, and stops cleanly on divergence (NaN/inf), interruption or a sampler error.

Plain Python, no Hydra: ``run_chains(sampler, schedule, settings, rng, evaluator)``.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
from tqdm.auto import tqdm

from sgmcmc.evaluation import Evaluator
from sgmcmc.recipe import RecipeError
from sgmcmc.samplers.base import Sampler

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
) -> RunOutcome:
    """Run ``settings.n_chains`` chains of ``sampler`` from the target's initial positions.

    Random numbers come from ``rng`` only, in a fixed order, so a seed fixes the samples bit for bit.
    The sample kept at step t (1-based) is the state after t steps, for t > burn_in and
    (t − burn_in) divisible by ``thin``. ``theta0`` (n_chains, dim) replaces the target's initial positions
    (e.g. over-dispersed starts for a reference run); nothing is then drawn for them.
    """
    target = sampler.target
    if theta0 is None:
        theta0 = target.initial_position(settings.n_chains, rng)
    elif np.shape(theta0) != (settings.n_chains, target.dim):
        raise ValueError(f"theta0 must have shape ({settings.n_chains}, {target.dim}); got {np.shape(theta0)}")
    state = sampler.init(theta0, rng)
    # Metrics that draw random numbers (LDA's held-out Gibbs) use their own generator, so how often the
    # trace is scored never changes the samples (drawn only for such targets: other runs keep their streams).
    evaluation_rng = np.random.default_rng(rng.integers(2**62)) if hasattr(target, "sample_metrics") else None
    samples = np.empty((settings.n_chains, settings.n_kept, target.dim))
    outcome = RunOutcome(samples=samples[:, :0], moments=RunningMoments(settings.n_chains, target.dim))
    n_data, batch_size = getattr(target, "n_data", None), getattr(target, "batch_size", None)
    trace_position = getattr(target, "trace_position", None)
    kept = 0
    accept_sum, accept_count = 0.0, 0
    xi_sum, xi_count = 0.0, 0  # per-chain sum of ξ after burn-in, number of steps summed
    start = time.perf_counter()
    bar = tqdm(total=settings.n_steps, disable=not settings.progress, delay=2.0, mininterval=0.5, unit="step")
    try:
        for t in range(1, settings.n_steps + 1):
            if stop_requested():
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
    outcome.wall_time = time.perf_counter() - start
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
