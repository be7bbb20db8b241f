"""Shared test helpers: scripted random numbers and the sampler-vs-exact-density check."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import numba
import numpy as np
from hydra import compose, initialize_config_dir
from numba.core.registry import CPUDispatcher
from omegaconf import OmegaConf

from sgmcmc.engine.driver import PYTHON
from sgmcmc.evaluation import Evaluator
from sgmcmc.hyperparameters import GammaPrecisions
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.data import DataTarget
from sgmcmc.targets.gaussian_prior import grouped_prior_gradient

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


class ScriptedNormals:
    """Stands in for a numpy Generator: ``standard_normal`` returns the queued arrays in order."""

    def __init__(self, *arrays: np.ndarray):
        self.queue = [np.asarray(a, dtype=float) for a in arrays]

    def standard_normal(self, size=None):
        value = self.queue.pop(0)
        assert value.shape == tuple(np.atleast_1d(size)), (value.shape, size)
        return value.copy()


def engine_step(sampler, state, step_size: float, *normals: np.ndarray):
    """One step of the sampler's engine blocks (their source as Python) on a density model from ``state``, with the
    step's standard normals given (c, d) each, in the block's slots (the gradient noise's, then the injected noise's):
    the new state."""
    blocks = sampler.engine_blocks(PYTHON)
    assert blocks is not None, f"{sampler.name} on {sampler.target.name} has no engine blocks"
    return blocks(ScriptedNormals(np.stack(normals)[None]), state, np.array([float(step_size)]), 0).state


class RequestStopAt:
    """An observer of a run's blocks that asks it to stop once it has done ``step`` steps; pass
    ``stop_requested=lambda: stop.requested`` and ``observers=[stop]`` (the run asks before each block)."""

    name = "stop"

    def __init__(self, step):
        self.step, self.requested = step, False

    def update(self, block):
        self.requested = self.requested or block.stop >= self.step


@dataclass
class SamplingCheck:
    """KL(p‖q) on the target's grid and the largest error of E θ² against the exact values."""

    kl: float
    second_moment_error: float
    status: str

    def passes(self, kl_max: float, second_moment_max: float) -> bool:
        return self.status == "completed" and self.kl < kl_max and self.second_moment_error < second_moment_max


def sample_and_score(sampler, step_size: float, n_steps: int, n_chains: int = 1000, seed: int = 1) -> SamplingCheck:
    """Run ``sampler`` (burn-in: a quarter of the steps) and score the pooled samples."""
    evaluator = Evaluator(sampler.target)
    settings = RunOptions(n_steps=n_steps, n_chains=n_chains, burn_in=n_steps // 4, eval_every=n_steps, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed), evaluator)
    if outcome.status != "completed":
        return SamplingCheck(np.inf, np.inf, outcome.status)
    scores = evaluator.score(outcome.samples.reshape(-1, sampler.target.dim))
    return SamplingCheck(scores["kl_pq"], scores["second_moment_error"], outcome.status)


def experiment_sampler(sampler_config: str, experiment: str, overrides=()) -> tuple[str, dict]:
    """(the sampler's name, its keyword parameters) as ``configs/`` composes ``+experiment=<experiment>
    sampler=<sampler_config>`` with ``overrides`` (the step size left out)."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        config = compose(config_name="config", overrides=[f"+experiment={experiment}", f"sampler={sampler_config}",
                                                          *overrides])
    sampler = OmegaConf.to_container(config, resolve=True)["sampler"]
    return sampler["name"], {key: value for key, value in sampler.items() if key not in ("name", "step_size")}


def composed(*overrides: str) -> dict:
    """The resolved config of ``python run.py <overrides>``, for :func:`sgmcmc.experiment.run_experiment`."""
    with initialize_config_dir(config_dir=str(CONFIGS), version_base="1.3"):
        config = OmegaConf.to_container(compose(config_name="config", overrides=list(overrides)), resolve=True)
    config.pop("hydra", None)
    return config


def build(sampler_name: str, target_name: str, target_params=None, **sampler_params):
    target = make_target(target_name, **(target_params or {}))
    return make_sampler(sampler_name, target, **sampler_params)


def numerical_gradient(potential, theta: np.ndarray, step: float = 1e-6) -> np.ndarray:
    """Central finite differences of U at θ (n, d): the reference the targets' gradients are checked against."""
    out = np.zeros_like(theta, dtype=float)
    for j in range(theta.shape[1]):
        shift = np.zeros(theta.shape[1])
        shift[j] = step
        out[:, j] = (potential(theta + shift) - potential(theta - shift)) / (2 * step)
    return out


def door_potentials(functions: dict, theta: np.ndarray, states=None) -> tuple[np.ndarray, np.ndarray]:
    """U(θ) = −Σ_i ``row_log_likelihoods``(θ, data)_i − ``prior_log_density``(θ) of each chain of θ (c, d) from a data
    target's ``engine_functions()`` (the prior given each chain's row of ``states`` (c, m) where it takes them), with
    the door's functions called as plain Python and compiled (``numba.njit`` of a plain function; a dispatcher and its
    ``py_func``): (python (c,), compiled (c,))."""
    def versions(function):
        return (function.py_func, function) if isinstance(function, CPUDispatcher) else (function, numba.njit(function))

    data, out = functions["data"], []
    extra = [()] * len(theta) if states is None else [(s,) for s in states]  # the prior's arguments after θ
    for likelihoods, prior in zip(versions(functions["row_log_likelihoods"]), versions(functions["prior_log_density"])):
        out.append(np.array([-likelihoods(t, data).sum() - prior(t, *more) for t, more in zip(theta, extra)]))
    return out[0], out[1]


def fake_mnist_source(seed=0, n_train=40, n_test=16):
    """A tiny stand-in for ``load_mnist(..., digits=(7, 9))``: random 784-pixel images labelled 7 or 9."""
    rng = np.random.default_rng(seed)
    return SimpleNamespace(train_images=rng.integers(0, 256, (n_train, 784), dtype=np.uint8),
                           train_labels=rng.choice(np.array([7, 9], dtype=np.uint8), n_train),
                           test_images=rng.integers(0, 256, (n_test, 784), dtype=np.uint8),
                           test_labels=rng.choice(np.array([7, 9], dtype=np.uint8), n_test))


def smoke_run(module, figure_id: str, tmp_path, monkeypatch, data, extra_args=(), files=()):
    """Run a paper experiment's ``main`` with ``--smoke`` into ``tmp_path`` on the data folder ``data``; check that
    its folder has ``files`` plus the summary and provenance, and return (folder, summary table)."""
    import pandas as pd

    monkeypatch.setenv("SGMCMC_DATA", str(data))
    module.main(["--smoke", "--root", str(tmp_path), "--jobs", "1", *extra_args])
    (folder,) = (tmp_path / figure_id).glob("2*")
    for name in (*files, "summary.csv", "summary.md", "provenance.json"):
        assert (folder / name).stat().st_size > 0, name
    return folder, pd.read_csv(folder / "summary.csv")


@contextmanager
def one_thread(monkeypatch):
    """One BLAS / OpenMP / numba thread, in this process for the ``with`` block and (BLAS, OpenMP) in the processes it
    starts (a paper experiment's sweeps inherit the environment; with ``--jobs 1`` they keep the default pools). The matrices are
    small, and on a busy machine a pool of threads runs them several times slower: SGHMC's clipped 100×100 draws in
    a sweep about 30 s instead of 1 s, the DRBM's test-set forward passes here about twice as long."""
    import numba
    from threadpoolctl import threadpool_limits

    from experiments.common import THREAD_VARIABLES

    # numba's pool, once launched, keeps its size, and a NUMBA_NUM_THREADS that changes under it is an error at numba's
    # next compile in this process: its pool is limited by set_num_threads instead
    for name in THREAD_VARIABLES:
        if name != "NUMBA_NUM_THREADS":
            monkeypatch.setenv(name, "1")
    previous = numba.get_num_threads()
    numba.set_num_threads(1)
    try:
        with threadpool_limits(1):
            yield
    finally:
        numba.set_num_threads(previous)


@numba.njit(cache=True)
def constant_row_gradients(theta, rows):
    """g_i(θ) = a_i, the rows themselves (:class:`HierarchicalGaussian`'s log-likelihood a_i·θ), (m, d)."""
    return rows.copy()


class HierarchicalGaussian(DataTarget):
    """A toy target with Gibbs-updated hyperparameters (the protocol of the SGHMC paper's BNN and BPMF, SPEC T11/T12):
    θ = two groups of two coordinates, θ_g | λ_g ~ N(0, λ_g⁻¹ I), λ_g ~ Gamma(a, b). The exact marginals: λ_g ~
    Gamma(a, b) and each θ_i ~ Student t with 2a degrees of freedom and scale √(b/a). A data model on rows whose
    log-likelihood a_i·θ sums to 0 over its N = 20 rows (Σ a_i = 0, so U is the prior's alone): ∇Ũ = λθ − (N/n) Σ_B
    a_i, its minibatch noise of variance ``noise_variance`` in each coordinate (n = 5 rows without replacement:
    (N²/n)(1 − n/N) times the a_i's sample variance), none at 0. It hands the engine its rows, their gradients and the
    grouped prior of each chain's precisions (read at every block's start, as the BNN's). Its prediction is θ itself
    ((c, 1, 4)), scored as the mean of the first coordinate."""

    name, dim = "hierarchical_gaussian", 4
    N_DATA, BATCH_SIZE = 20, 5

    def __init__(self, shape=3.0, rate=3.0, noise_variance=0.0, gibbs_every=10, predict_every=0):
        super().__init__(self.N_DATA, self.BATCH_SIZE)
        self.gibbs_every, self.predict_every = gibbs_every, predict_every
        self.precisions = GammaPrecisions(["precision_a", "precision_b"], [slice(0, 2), slice(2, 4)], 4, shape, rate)
        rows = np.random.default_rng(0).standard_normal((self.N_DATA, self.dim))
        rows = (rows - rows.mean(axis=0)) / rows.std(axis=0, ddof=1)  # Σ a_i = 0, sample variance 1
        scale = self.N_DATA**2 / self.BATCH_SIZE * (1 - self.BATCH_SIZE / self.N_DATA)
        self.rows = np.ascontiguousarray(rows * np.sqrt(noise_variance / scale))

    def log_likelihood_gradients(self, theta, index):
        return self.rows[index]

    def log_prior_gradient(self, theta):
        return self.precisions.prior_gradient(theta)

    def potential(self, theta):
        return self.precisions.prior_potential(theta)

    def engine_functions(self):
        return {"row_gradients": constant_row_gradients, "prior_gradient": grouped_prior_gradient, "data": self.rows,
                "n_data": self.n_data, "estimator_state": self._prior_state, "estimator_size": 3}

    def _prior_state(self, n_chains):
        """(c, 3): each chain's (λ_a, λ_b, the end 2 of group a)."""
        values = np.broadcast_to(self.precisions.values, (n_chains, 2))
        return np.column_stack([values, np.full(n_chains, 2.0)])

    def initial_position(self, n_chains, rng):
        return rng.standard_normal((n_chains, self.dim))

    def hyperparameters(self):
        return self.precisions.as_dict()

    def reset_hyperparameters(self):
        self.precisions.reset()

    def set_hyperparameters(self, values):
        self.precisions.load(values)

    def gibbs_update(self, theta, rng, mode=False):
        (self.precisions.mode if mode else lambda t: self.precisions.draw(t, rng))(theta)

    def predict(self, theta):
        return np.array(theta)[:, None, :]

    def predictive_metrics(self, prediction):
        return {"first": prediction[:, 0, 0]}
