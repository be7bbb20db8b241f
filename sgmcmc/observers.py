"""Small observers of a run's blocks of steps (:class:`sgmcmc.engine.blocks.Block`), the way emcee's backends and
blackjax's kernels keep concerns apart: each has ``update(block)`` and ``state_dict()`` / ``load_state_dict()``
(numpy arrays and JSON scalars), so a checkpoint is their states plus the sampler's and the generators'.

- :class:`SampleStore`: the thinned post-burn-in samples and their per-draw statistics (the storage backend);
- :class:`MomentsObserver`: per-chain running mean and covariance of every post-burn-in step;
- :class:`ThermostatObserver`: the mean thermostat ξ after burn-in (SGNHT, CCAdL);
- :class:`StepCounters`: Metropolis–Hastings acceptance, clipped variances, reflections;
- :class:`TraceObserver`: a trace row every ``eval_every`` steps, scored incrementally (linear in the run's length);
- :class:`ProgressObserver`: the progress bar;
- :class:`PathObserver`: keeps any per-step statistic of the paths that an experiment asks for;
- :class:`GibbsObserver`: the target's Gibbs step of its hyperparameters every so many steps;
- :class:`PredictiveObserver`: the target's test-set prediction averaged over one sample per epoch.

Every observer folds a block step by step in time order (or with integer counts), so its state does not depend on
how the run is cut into blocks: a resumed run ends with the same bits.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

import numpy as np
from tqdm.auto import tqdm

from sgmcmc.engine.blocks import Block

# Per-chain second moments are tracked up to this dimension (c·d² numbers; DRBM has d in the thousands).
MOMENT_COVARIANCE_MAX_DIM = 512


def kept_positions(start: int, stop: int, burn_in: int, thin: int) -> np.ndarray:
    """Offsets in a block of steps start+1..stop whose state is kept: t > burn_in and (t − burn_in) % thin == 0."""
    first = max(start + 1, burn_in + 1)
    first += (-(first - burn_in)) % thin
    return np.arange(first, stop + 1, thin) - (start + 1)


def post_burn_in(block: Block, burn_in: int) -> slice:
    """The part of a block after burn-in."""
    return slice(max(0, burn_in - block.start), block.stop - block.start)


class RunningMoments:
    """Per-chain running mean of θ (c, d) over every post-burn-in step (not only the kept, thinned ones),
    and the covariance when d ≤ ``MOMENT_COVARIANCE_MAX_DIM``; Welford's update step by step.
    The running mean is the posterior-mean estimate w̄_t of Shang et al. (2015) §4.2 (SPEC §3, E5)."""

    def __init__(self, n_chains: int, dim: int):
        self.count = 0
        self.mean = np.zeros((n_chains, dim))
        self._scatter = np.zeros((n_chains, dim, dim)) if dim <= MOMENT_COVARIANCE_MAX_DIM else None

    def update(self, theta: np.ndarray) -> None:
        """One step's θ (c, d)."""
        self.update_path(theta[:, None, :])

    def update_path(self, path: np.ndarray) -> None:
        """The steps of a path (c, m, d), in time order (:func:`sgmcmc.engine.accumulate.welford`)."""
        from sgmcmc.engine.accumulate import welford

        if path.shape[1] == 0:
            return
        scatter = self._scatter if self._scatter is not None else np.zeros((1, 1, 1))
        with np.errstate(over="ignore", invalid="ignore"):
            self.count = welford(self.mean, scatter, self.count, np.ascontiguousarray(path, dtype=float),
                                 self._scatter is not None)

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


class SampleStore:
    """The kept samples (c, n_kept, d): post-burn-in, every ``thin``-th step (emcee's backend, in memory), and the
    per-draw statistics of the steps that made them (:attr:`sample_stats`): the step size ε (n_kept,) and, where the
    blocks report them (:class:`~sgmcmc.engine.blocks.Block`), the thermostat ``xi``, the ``clipped`` variances, the
    Metropolis–Hastings ``accept_probability`` and the ``reflected`` coordinates (c, n_kept)."""

    name = "samples"
    STATISTICS = ("xi", "clipped", "accept_probability", "reflected")

    def __init__(self, n_chains: int, n_kept: int, dim: int, burn_in: int, thin: int):
        self.array = np.empty((n_chains, n_kept, dim))
        self.step_size = np.full(n_kept, np.nan)
        # (c, n_kept) per statistic, made at the first block that reports it; a statistic first reported after some
        # samples were kept (a resume from a checkpoint that lacks it) stays unrecorded rather than half known
        self.statistics: dict[str, np.ndarray] = {}
        self.kept, self.burn_in, self.thin = 0, burn_in, thin
        self.new = self.array[:, :0]  # the samples the last block added

    def update(self, block: Block) -> None:
        if block.exploring:  # the cyclical schedule's exploration steps: no samples (Zhang et al. 2020, Alg. 1)
            self.new = self.array[:, self.kept:self.kept]
            return
        positions = kept_positions(block.start, block.stop, self.burn_in, self.thin)
        added = slice(self.kept, self.kept + positions.size)
        self.new = self.array[:, added]
        self.new[...] = block.theta[:, positions]
        self.step_size[added] = block.step_sizes[positions]
        for name in self.STATISTICS:
            path = getattr(block, name)
            if path is None or not positions.size:
                continue
            if name not in self.statistics:
                if self.kept:
                    continue
                self.statistics[name] = np.zeros(self.array.shape[:2], dtype=path.dtype)
            self.statistics[name][:, added] = path[:, positions]
        self.kept += positions.size

    @property
    def samples(self) -> np.ndarray:
        return self.array[:, : self.kept]

    @property
    def sample_stats(self) -> dict[str, np.ndarray]:
        """The kept draws' ``step_size`` (n_kept,) and recorded statistics (c, n_kept), as samples.npz holds them."""
        return {"step_size": self.step_size[: self.kept],
                **{name: values[:, : self.kept] for name, values in self.statistics.items()}}

    def state_dict(self) -> dict:
        return {"samples": self.samples, "kept": self.kept, **self.sample_stats}

    def load_state_dict(self, state: dict) -> None:
        self.kept = int(state["kept"])
        self.array[:, : self.kept] = state["samples"]
        if "step_size" in state:  # else a checkpoint from before the statistics were kept: unknown (NaN)
            self.step_size[: self.kept] = state["step_size"]
        self.statistics = {}
        for name in self.STATISTICS:
            if name in state:
                self.statistics[name] = np.zeros(self.array.shape[:2], dtype=np.asarray(state[name]).dtype)
                self.statistics[name][:, : self.kept] = state[name]


class MomentsObserver:
    """:class:`RunningMoments` of every post-burn-in step."""

    name = "moments"

    def __init__(self, n_chains: int, dim: int, burn_in: int):
        self.moments, self.burn_in = RunningMoments(n_chains, dim), burn_in

    def update(self, block: Block) -> None:
        if not block.exploring:
            self.moments.update_path(block.theta[:, post_burn_in(block, self.burn_in)])

    def state_dict(self) -> dict:
        state = {"mean": self.moments.mean, "count": self.moments.count}
        if self.moments._scatter is not None:
            state["scatter"] = self.moments._scatter
        return state

    def load_state_dict(self, state: dict) -> None:
        self.moments.count = int(state["count"])
        self.moments.mean = np.array(state["mean"])
        if self.moments._scatter is not None:
            self.moments._scatter = np.array(state["scatter"])


class ThermostatObserver:
    """Per-chain sum of ξ over the post-burn-in steps: the mean thermostat and its standard error over chains
    (compared with the predicted value of [C] Prop. 1 in metrics.json)."""

    name = "thermostat"

    def __init__(self, n_chains: int, burn_in: int):
        self.sums, self.count, self.burn_in = np.zeros(n_chains), 0, burn_in

    def update(self, block: Block) -> None:
        if block.xi is None or block.exploring:
            return
        from sgmcmc.engine.accumulate import power_sums

        part = np.ascontiguousarray(block.xi[:, post_burn_in(block, self.burn_in), None])
        sums = self.sums[:, None].copy()
        power_sums(sums, np.zeros_like(sums), part)  # in time order, as a per-step sum
        self.sums = sums[:, 0]
        self.count += part.shape[1]

    def summary(self) -> tuple[Optional[float], Optional[float]]:
        """(mean ξ over chains and steps, its standard error from the spread of the chains' means)."""
        if not self.count:
            return None, None
        chain_means = self.sums / self.count
        se = float(chain_means.std(ddof=1) / np.sqrt(chain_means.size)) if chain_means.size > 1 else None
        return float(chain_means.mean()), se

    def state_dict(self) -> dict:
        return {"sums": self.sums, "count": self.count}

    def load_state_dict(self, state: dict) -> None:
        self.sums, self.count = np.array(state["sums"], dtype=float), int(state["count"])


class StepCounters:
    """Metropolis–Hastings acceptance (sum of probabilities and their number), clipped variances, reflections, and the
    clipped draws with a full covariance with how many needed an eigendecomposition (``sgmcmc.noise.clip_counters``)."""

    name = "counters"

    def __init__(self):
        from sgmcmc.noise import clip_counters

        self.accept_sum, self.accept_count, self.noise_clips, self.reflections = 0.0, 0, 0, 0
        # clipped draws with a full covariance, and how many of them needed an eigendecomposition (no Cholesky factor)
        self.clip_draws, self.clip_decompositions = 0, 0
        self._clip_counters = clip_counters
        self._seen = clip_counters.snapshot()

    def update(self, block: Block) -> None:
        if block.accept_probability is not None:
            for k in range(block.accept_probability.shape[1]):  # one float sum per step, as the runner always did
                self.accept_sum += float(block.accept_probability[:, k].sum())
            self.accept_count += block.accept_probability.size
        if block.clipped is not None:
            self.noise_clips += int(block.clipped.sum())
        if block.reflected is not None:
            self.reflections += int(block.reflected.sum())
        now = self._clip_counters.snapshot()  # the process's counters: their change over this block
        self.clip_draws += now[0] - self._seen[0]
        self.clip_decompositions += now[1] - self._seen[1]
        self._seen = now

    @property
    def acceptance_rate(self) -> Optional[float]:
        return self.accept_sum / self.accept_count if self.accept_count else None

    def state_dict(self) -> dict:
        return {"accept_sum": self.accept_sum, "accept_count": self.accept_count, "noise_clips": self.noise_clips,
                "reflections": self.reflections, "clip_draws": self.clip_draws,
                "clip_decompositions": self.clip_decompositions}

    def load_state_dict(self, state: dict) -> None:
        self.accept_sum, self.accept_count = float(state["accept_sum"]), int(state["accept_count"])
        self.noise_clips, self.reflections = int(state["noise_clips"]), int(state["reflections"])
        self.clip_draws, self.clip_decompositions = int(state["clip_draws"]), int(state["clip_decompositions"])


class TraceObserver:
    """A trace row at every ``eval_every``-th step and at the last: the step, samples so far, step size, passes over
    the data, acceptance, the sample metrics (incremental: :class:`~sgmcmc.evaluation.RunningScore`; W1 at rows
    1, 2, 4, 8, … and the last), the target's metrics of the running mean and of the current state, and, on a target
    without data (``n_data`` None) with an exact gradient, ``ksd`` at the rows of W1: the IMQ kernel Stein discrepancy
    of at most ``ksd_points`` (0: none) of the kept samples so far (:func:`sgmcmc.diagnostics.stein.target_ksd`,
    deterministic: no random numbers)."""

    name = "trace"

    def __init__(self, settings, schedule, evaluator, target, store: SampleStore, moments: MomentsObserver,
                 counters: StepCounters, evaluation_rng, predictive: Optional["PredictiveObserver"] = None,
                 ksd_points: int = 0):
        from sgmcmc.evaluation import RunningScore

        self.settings, self.schedule, self.evaluator, self.target = settings, schedule, evaluator, target
        self.predictive = predictive  # its metrics join the row of the step it scored (it updates before the trace)
        self.store, self.moments, self.counters, self.evaluation_rng = store, moments, counters, evaluation_rng
        self.score = RunningScore(evaluator, settings.n_chains) if evaluator is not None else None
        # a data target's full-data gradient per point is a pass over its data: its KSD is metrics.json's only
        toy_target = target.n_data is None and target.has_exact_gradient
        self.ksd_points = int(ksd_points) if toy_target else 0
        self.rows: list[dict] = []
        self.state_metrics: dict = {}
        # the sample metrics of every kept sample at the last step that scored them all (W1 included): (step, scores)
        self.sample_scores: tuple[int, dict] = (-1, {})
        self.seconds = 0.0

    def due(self, t: int) -> bool:
        return t % self.settings.eval_every == 0 or t == self.settings.n_steps

    def update(self, block: Block) -> None:
        started = time.perf_counter()
        if self.score is not None:
            self.score.update(self.store.new)
        t = block.stop
        if block.stop > block.start and self.due(t) and block.status is None:
            self.rows.append(self._row(t, block.state))
        self.seconds += time.perf_counter() - started

    def _row(self, t: int, state) -> dict:
        row = {"step": t, "n_samples": self.store.kept * self.settings.n_chains, "step_size": self.schedule(t - 1)}
        if self.target.n_data:
            row["passes"] = t * self.target.batch_size / self.target.n_data
        row.update(self.target.trace_position(t))
        if self.predictive is not None and self.predictive.step == t:
            row.update(self.predictive.latest)
        for name, values in self.target.hyperparameters().items():  # those the steps up to t used (mean over chains)
            row[name] = float(np.mean(values))
        if self.counters.accept_count:
            row["acceptance_rate"] = self.counters.acceptance_rate
        index = len(self.rows) + 1
        # the metrics whose cost grows with the kept samples (W1 passes over them all; the KSD's kernel is over ksd_points²
        # pairs): at rows 1, 2, 4, 8, … and the last, so that the trace costs a logarithm of the run's length in them
        # (measured, double well, 1,000 chains × 10,000 steps, a KSD at every row: 2.4 s of a 5.0 s run_chains)
        costly = (index & (index - 1)) == 0 or t == self.settings.n_steps
        if self.evaluator is not None:
            if self.store.kept:
                scores = self.score.score(self.store.samples if costly else None)  # (c, kept, d): no copy
                row.update(scores)
                if costly:
                    self.sample_scores = (t, scores)
            if self.moments.moments.count:
                row.update(self.evaluator.score_mean(self.moments.moments.mean))
            self.state_metrics = self.evaluator.score_state(state.theta, self.evaluation_rng)
            row.update(self.state_metrics)
        if self.ksd_points and self.store.kept and costly:
            from sgmcmc.diagnostics.stein import target_ksd

            ksd = target_ksd(self.target, self.store.samples, self.ksd_points)
            if ksd is not None:
                row["ksd"] = ksd.value
        return row

    def state_dict(self) -> dict:
        state = {"rows": self.rows, "state_metrics": self.state_metrics, "seconds": self.seconds}
        if self.score is not None:
            state.update({f"score.{key}": value for key, value in self.score.state_dict().items()})
        return state

    def load_state_dict(self, state: dict) -> None:
        self.rows, self.state_metrics = list(state["rows"]), dict(state["state_metrics"])
        self.seconds = float(state["seconds"])
        if self.score is not None:
            self.score.load_state_dict({key[len("score."):]: value for key, value in state.items() if key.startswith("score.")})


class ProgressObserver:
    """The progress bar (tqdm on stderr, shown after ``delay`` seconds): the steps done and the latest trace row's
    headline metric. Its last line is drawn once, by :meth:`close`: the block that reaches ``total`` only moves the
    count, since where stderr is not a terminal (a pipe, a log file) a carriage return does not erase the line
    before it, and a last line drawn by the block and again by ``close`` would show twice. Not checkpointed."""

    name = "progress"
    HEADLINES = (("kl_pq", "kl"), ("test_error", "test_err"), ("test_log_likelihood", "test_ll"), ("perplexity", "perplexity"))

    def __init__(self, trace: TraceObserver, total: int, initial: int = 0, enabled: bool = True, delay: float = 2.0,
                 mininterval: float = 0.5):
        self.trace = trace
        self.bar = tqdm(total=total, initial=initial, disable=not enabled, delay=delay, mininterval=mininterval,
                        unit="step")

    def update(self, block: Block) -> None:
        rows = self.trace.rows
        if rows and block.start < rows[-1]["step"] <= block.stop:  # a row of this block (its parts': Block.parts)
            for key, label in self.HEADLINES:
                if key in rows[-1]:
                    self.bar.set_postfix({label: f"{rows[-1][key]:.4g}"}, refresh=False)
                    break
        if block.stop < self.bar.total:
            self.bar.update(block.stop - self.bar.n)
        else:
            self.bar.n = block.stop  # drawn by close()

    def close(self) -> None:
        """Draws the last line (tqdm's ``close`` draws only a bar drawn before: one whose delay passed during the
        last block counts as drawn) and ends it."""
        bar = self.bar
        if not bar.disable and bar.last_print_t < bar.start_t + bar.delay <= time.time():
            bar.last_print_t = time.time()
        bar.close()


class PathObserver:
    """Calls ``statistic(block)`` on every block and keeps what it returns in ``values`` (one entry per block), for
    experiments that need a per-step quantity of the run's own chains (e.g. ξ and r·r/d of a thermostat). Not
    checkpointed: use it in runs that do not resume."""

    name = "path"

    def __init__(self, statistic: Callable[[Block], object]):
        self.statistic, self.values = statistic, []

    def update(self, block: Block) -> None:
        self.values.append(self.statistic(block))

    def state_dict(self) -> dict:
        return {}

    def load_state_dict(self, state: dict) -> None:
        pass


class PathStatistics:
    """Per step t = 1, 2, …: the mean over chains of ξ and ξ² and of r·r/d, where the sampler has them (``step``,
    ``xi``, ``xi2``, ``r2``; ``run.path_statistics`` writes them to path_statistics.npz): the thermostat's and the
    kinetic temperature's path of the run's own chains. Each step's mean is taken over that step's values alone, so
    the numbers do not depend on the cut into blocks; checkpointed; three numbers per step (linear in the run)."""

    name = "path_statistics"

    def __init__(self):
        self.parts: dict[str, list] = {"step": []}

    def update(self, block: Block) -> None:
        m = block.stop - block.start
        if m <= 0:
            return
        self.parts["step"].append(np.arange(block.start + 1, block.stop + 1))
        if block.xi is not None:
            xi = np.ascontiguousarray(block.xi.T)  # (m, c): a step's chains side by side
            self.parts.setdefault("xi", []).append(xi.mean(axis=1))
            self.parts.setdefault("xi2", []).append((xi**2).mean(axis=1))
        if block.momentum is not None:
            r2 = np.ascontiguousarray(np.moveaxis(block.momentum, 1, 0) ** 2).reshape(m, -1)  # (m, c·d)
            self.parts.setdefault("r2", []).append(r2.mean(axis=1))

    def arrays(self) -> dict:
        out = {key: np.concatenate(parts) if parts else np.empty(0, dtype=np.int64) for key, parts in self.parts.items()}
        self.parts = {key: [value] for key, value in out.items()}  # one piece from now on
        return out

    def state_dict(self) -> dict:
        return self.arrays()

    def load_state_dict(self, state: dict) -> None:
        self.parts = {key: [np.array(value)] for key, value in state.items()}


class Snapshots:
    """θ of every chain at step 0 (``theta0``, when given) and at every ``every``-th step up to ``until`` (None: to
    the end): ``step`` (k,) and ``theta`` (c, k, d), chains first as samples.npz (``run.snapshot_every`` /
    ``run.snapshot_until`` write them to snapshots.npz): cross-sections of the chains and their first steps, which
    burn-in and thinning leave out of the samples. Checkpointed; linear in the run's length."""

    name = "snapshots"

    def __init__(self, n_chains: int, dim: int, every: int, until: Optional[int] = None,
                 theta0: Optional[np.ndarray] = None):
        if every < 1:
            raise ValueError(f"snapshots every {every} steps: expected at least 1")
        self.every, self.until = int(every), until
        self.steps, self.thetas = [np.empty(0, dtype=np.int64)], [np.empty((n_chains, 0, dim))]
        if theta0 is not None:
            self.steps.append(np.zeros(1, dtype=np.int64))
            self.thetas.append(np.array(theta0, dtype=float)[:, None, :])

    def update(self, block: Block) -> None:
        first = block.start + 1
        last = block.stop if self.until is None else min(block.stop, self.until)
        steps = np.arange(first + (-first) % self.every, last + 1, self.every)
        if steps.size:
            self.steps.append(steps)
            self.thetas.append(block.theta[:, steps - first])

    def arrays(self) -> dict:
        self.steps, self.thetas = [np.concatenate(self.steps)], [np.concatenate(self.thetas, axis=1)]
        return {"step": self.steps[0], "theta": self.thetas[0]}

    def state_dict(self) -> dict:
        return self.arrays()

    def load_state_dict(self, state: dict) -> None:
        self.steps, self.thetas = [np.array(state["step"], dtype=np.int64)], [np.array(state["theta"], dtype=float)]


class GibbsObserver:
    """The target's Gibbs step of its hyperparameters (:meth:`~sgmcmc.targets.base.Target.gibbs_update`) after every
    ``every``-th step, with θ of that step (the SGHMC paper's Gamma precisions, SPEC T11/T12): a hook of the run loop,
    which ends a block at each such step (:func:`sgmcmc.runner.next_stop`). ``mode``: the conditional's mode instead of
    a draw (the authors' MAP update: an optimiser's run on a target whose ``optimiser_hyperparameters`` is "mode"). Draws from its own generator ``rng``; its state (the generator, the number of updates
    and the hyperparameters' values) goes into the checkpoints, so a resumed run continues bit for bit.

    A Gibbs step changes U, so the gradient a splitting sampler keeps for its next first half kick (BAOAB, BADODAB:
    ``SamplerState.gradient``) belongs to the old hyperparameters: the observer drops it from the block's final state
    (the state the run continues from and checkpoints), and the next step draws ∇Ũ at the new values."""

    name = "gibbs"

    def __init__(self, target, every: int, rng: Optional[np.random.Generator], mode: bool = False,
                 last: Optional[int] = None):
        if every < 1:
            raise ValueError(f"Gibbs steps every {every} steps: expected at least 1")
        self.target, self.every, self.rng, self.mode = target, int(every), rng, bool(mode)
        self.last = last  # the run's last step: no Gibbs step after it (no step would use its values)
        self.updates = 0

    def update(self, block: Block) -> None:
        if (block.status is None and block.stop > block.start and block.stop % self.every == 0
                and block.stop != self.last):
            self.target.gibbs_update(block.state.theta, self.rng, mode=self.mode)
            self.updates += 1
            if block.state.gradient is not None:
                block.state = block.state._replace(gradient=None)

    def state_dict(self) -> dict:
        from sgmcmc.checkpoint import generator_state

        values = {f"value.{name}": np.asarray(value, dtype=float) for name, value in self.target.hyperparameters().items()}
        return {"rng": generator_state(self.rng), "updates": self.updates, **values}

    def load_state_dict(self, state: dict) -> None:
        from sgmcmc.checkpoint import restore_generator

        self.rng = restore_generator(state["rng"], self.rng) if state["rng"] is not None else None
        self.updates = int(state["updates"])
        self.target.set_hyperparameters({key[len("value."):]: value for key, value in state.items()
                                         if key.startswith("value.")})


class PredictiveObserver:
    """The target's test-set prediction (:meth:`~sgmcmc.targets.base.Target.predict`) at θ of every ``every``-th step
    (one sample per epoch), averaged over those after ``burn_in`` (the SGHMC paper's predictive, SPEC T11/T12; before
    burn-in, and always with ``average=False``, an optimiser's, the current point's own), and its metrics
    (:meth:`~sgmcmc.targets.base.Target.predictive_metrics`): ``latest`` holds the last scored step's metrics, the mean
    over chains, which the trace rows take. Checkpointed (the running average is (c, n_test, k) numbers)."""

    name = "predictive"

    def __init__(self, target, every: int, burn_in: int, average: bool = True):
        if every < 1:
            raise ValueError(f"predictions every {every} steps: expected at least 1")
        self.target, self.every, self.burn_in, self.average = target, int(every), int(burn_in), bool(average)
        self.mean, self.count, self.step, self.latest = None, 0, 0, {}

    def update(self, block: Block) -> None:
        t = block.stop
        if block.status is not None or t <= block.start or t % self.every:
            return
        prediction = self.target.predict(block.state.theta)
        if self.average and t > self.burn_in and not block.exploring:  # an exploration state is no sample
            self.count += 1
            if self.mean is None:
                self.mean = np.array(prediction, dtype=float)
            else:
                self.mean += (prediction - self.mean) / self.count
            prediction = self.mean
        metrics = self.target.predictive_metrics(prediction)
        self.step = t
        self.latest = {"predictions_averaged": self.count, **{name: float(np.mean(value)) for name, value in metrics.items()}}
        if np.shape(next(iter(metrics.values()), ()))[:1] != (1,):  # several chains: the spread too
            self.latest.update({f"{name}_sd": float(np.std(value, ddof=1)) for name, value in metrics.items()})

    def state_dict(self) -> dict:
        state = {"count": self.count, "step": self.step, "latest": self.latest}
        if self.mean is not None:
            state["mean"] = self.mean
        return state

    def load_state_dict(self, state: dict) -> None:
        self.count, self.step, self.latest = int(state["count"]), int(state["step"]), dict(state["latest"])
        self.mean = np.array(state["mean"]) if "mean" in state else None
