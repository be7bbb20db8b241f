"""Logistic regression (T8) on the engine's blocks, through the rows door (``LogisticRegression.engine_functions``):
the blocks' samples are the numpy steps' on the same random numbers (the numpy steps replay what the block drew,
:class:`tests.helpers.EngineStream`), for every sampler and integrator the data kernels ran it with, the running
estimate (full and diagonal), the clipped draw, the not-PSD stop and a divergence. The blocks run as their Python
source (the compiled block is that source: tests/engine/test_driver.py); the paper's samplers take the compiled
engine. These replace tests/engine/test_data_blocks.py's logistic cases (the data kernels' LOGISTIC likelihood)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import DIVERGED, FAILED, kernel_of, numpy_block
from sgmcmc.engine.driver import PYTHON, Blocks
from sgmcmc.noise import clip_counters
from sgmcmc.samplers import make_sampler
from sgmcmc.targets.logistic_regression import (LogisticRegression, logistic_synthetic, signed_row_gradient_sums,
                                               signed_row_gradients)
from tests.helpers import EngineStream, OuSplittingStream, door_potentials


def logistic(n_data=200, dim=6, batch_size=20, seed=0, prior_variance=1.0, cls=LogisticRegression):
    """A small synthetic logistic regression (features N(0, I)/2, labels from a random w)."""
    rng = np.random.default_rng(seed)
    features = 0.5 * rng.standard_normal((n_data, dim))
    labels = np.where(features @ rng.standard_normal(dim) + 0.3 * rng.standard_normal(n_data) > 0, 1, -1)
    return cls(features, labels, batch_size=batch_size, initial_scale=0.3, prior_variance=prior_variance)


def replay_stream(sampler):
    """The stream with which the sampler's numpy steps replay the engine's draws: BAOAB's and BADODAB's O step draws
    first (:class:`tests.helpers.OuSplittingStream`), the others' as :class:`tests.helpers.EngineStream`."""
    return OuSplittingStream if sampler.integrator in ("baoab", "badodab") else EngineStream


def both_paths(sampler, step_sizes, n_chains=3, seed=5):
    """(numpy block, engine block, numpy clip counter change, engine clip counter change) from one state, the numpy
    steps replaying the engine block's draws."""
    target = sampler.target
    rng = np.random.default_rng(seed)
    state = sampler.init(target.initial_position(n_chains, rng), rng)
    draws = replay_stream(sampler)(np.random.default_rng(seed + 1), target.batch_size)
    before = clip_counters.snapshot()
    reference = numpy_block(sampler, draws, state, step_sizes, start=0)
    middle = clip_counters.snapshot()
    engine = sampler.engine_blocks(PYTHON)(np.random.default_rng(seed + 1), state, step_sizes, 0)
    after = clip_counters.snapshot()
    return reference, engine, np.subtract(middle, before), np.subtract(after, middle)


def assert_same_block(reference, engine):
    assert (engine.status, engine.stop) == (reference.status, reference.stop)
    for field in ("theta", "momentum", "xi"):
        expected = getattr(reference, field)
        assert (getattr(engine, field) is None) == (expected is None), field
        if expected is not None:
            np.testing.assert_allclose(getattr(engine, field), expected, rtol=1e-10, atol=1e-12)
    if reference.clipped is not None:
        np.testing.assert_array_equal(engine.clipped, reference.clipped)
    if reference.status is None:  # (a failed block's estimator state went on to the failed step: the run ends)
        np.testing.assert_allclose(engine.state.noise if engine.state.noise is not None else 0.0,
                                   reference.state.noise if reference.state.noise is not None else 0.0, rtol=1e-10,
                                   atol=1e-12)
        assert engine.state.noise_count == reference.state.noise_count


def blocks_across_a_change(sampler, change, step_sizes, n_chains=2, seed=3):
    """Two blocks from one Blocks object (Python backend), ``change(block_number)`` called before each (a Gibbs step's
    new hyperparameters): each block equals the numpy steps replaying its draws from the same state."""
    target = sampler.target
    blocks = sampler.engine_blocks(PYTHON)
    assert isinstance(blocks, Blocks)
    rng = np.random.default_rng(seed)
    state = sampler.init(target.initial_position(n_chains, rng), rng)
    for block_number in range(2):
        change(block_number)
        draws = replay_stream(sampler)(np.random.default_rng(seed + 10 + block_number), target.batch_size)
        reference = numpy_block(sampler, draws, state, step_sizes, start=0)
        engine = blocks(np.random.default_rng(seed + 10 + block_number), state, step_sizes, 0)
        assert reference.status is None and reference.stop == step_sizes.size
        assert_same_block(reference, engine)
        state = engine.state


CASES = [
    ("sgld", dict(noise_estimate="zero")),
    ("sgld", dict(noise_estimate="running", noise_clip=True)),
    ("sghmc", dict(integrator="theta_first", noise_estimate="running", noise_clip=True)),
    ("sghmc", dict(integrator="splitting", noise_estimate="running", running_form="diagonal", noise_clip=True)),
    ("sghmc", dict(integrator="euler", noise_estimate="zero")),
    ("sgnht", dict(integrator="theta_first", noise_estimate="zero")),
    ("sgnht", dict(integrator="splitting", noise_estimate="running", noise_clip=True)),
    ("sgnht", dict(integrator="euler", noise_estimate="running", running_form="diagonal", noise_clip=True)),
    ("ccadl", dict(integrator="theta_first")),
    ("ccadl", dict(integrator="euler", running_form="diagonal")),
    ("sgrhmc", dict(integrator="theta_first", noise_estimate="running", noise_clip=True)),  # G = I: C = 1
    ("naive_sgrhmc", dict(integrator="splitting", noise_estimate="zero")),
]


@pytest.mark.parametrize("name, params", CASES)
def test_the_engine_blocks_are_the_numpy_steps(name, params):
    """h from 0.02 down to 0.002 over 40 steps: with the clip, the large steps clip eigenvalues (the eigendecomposed
    branch) and the small ones take the Cholesky factor; the clipped counts and the full draws counted
    (``clip_counters``) are the numpy steps' own."""
    sampler = make_sampler(name, logistic(), **params)
    reference, engine, numpy_counts, engine_counts = both_paths(sampler, np.linspace(0.02, 0.002, 40))
    assert reference.status is None and reference.stop == 40
    assert_same_block(reference, engine)
    np.testing.assert_array_equal(engine_counts, numpy_counts)
    if params.get("noise_clip") and params.get("running_form", "full") == "full":
        draws, decompositions = numpy_counts
        assert draws == 3 * 40 and 0 < decompositions < draws and reference.clipped.sum() > 0


@pytest.mark.parametrize("name, params", [("sgld", dict(noise_estimate="running")),
                                          ("sghmc", dict(integrator="theta_first", noise_estimate="running"))])
@pytest.mark.parametrize("dim", [1, 3])
def test_a_covariance_that_is_not_psd_stops_at_the_same_step(name, params, dim):
    """Without the clip, ε(2D − εΣ̂) is refused at the same step on both paths (d = 1: a negative variance)."""
    sampler = make_sampler(name, logistic(dim=dim), **params)
    reference, engine, *_ = both_paths(sampler, np.concatenate([np.full(10, 0.0005), np.full(10, 0.3)]))
    assert reference.status == FAILED and 10 <= reference.stop < 20
    assert_same_block(reference, engine)


@pytest.mark.parametrize("name", ["sgnht", "ccadl"])
def test_a_divergence_stops_at_the_same_step(name):
    sampler = make_sampler(name, logistic(), integrator="theta_first",
                           noise_estimate="zero" if name == "sgnht" else "running")
    reference, engine, *_ = both_paths(sampler, np.full(60, 1.0))
    assert reference.status == DIVERGED and reference.stop < 60
    assert_same_block(reference, engine)


@pytest.mark.parametrize("finite_population", [True, False])
def test_the_full_batch_and_another_prior(finite_population):
    """n = N (every row every step, nothing drawn for the minibatch; with the exact scale Σ̂ = 0) and s² = 4 (the
    prior's function of this s², not the cached one of s² = 1)."""
    target = logistic(n_data=40, batch_size=40, prior_variance=4.0)
    sampler = make_sampler("ccadl", target, finite_population=finite_population)
    reference, engine, *_ = both_paths(sampler, np.full(30, 0.01))
    assert reference.status is None
    assert_same_block(reference, engine)


def test_the_rows_door_is_the_targets_gradients():
    target = logistic(prior_variance=2.5)
    theta, index = np.random.default_rng(0).standard_normal((2, target.dim)), np.array([[0, 5, 7], [199, 3, 1]])
    functions = target.engine_functions()
    per_chain = np.stack([signed_row_gradients(t, functions["data"][i]) for t, i in zip(theta, index)])
    np.testing.assert_allclose(per_chain, target.log_likelihood_gradients(theta, index), rtol=1e-13)
    np.testing.assert_allclose(np.stack([functions["prior_gradient"](t) for t in theta]),
                               target.log_prior_gradient(theta), rtol=1e-15)


@pytest.mark.parametrize("prior_variance", [1.0, 2.5])
def test_the_rows_door_gives_the_targets_potential(prior_variance):
    """U = −Σ_i log σ(m_i) − log p(θ) from the door's ``row_log_likelihoods`` and ``prior_log_density`` (as Python and
    compiled) is :meth:`LogisticRegression.potential`, also at margins of ~10³ (log σ(m) = −log(1 + e^{−m}) computed
    naively is −∞ there)."""
    target = logistic(n_data=30, dim=4, batch_size=5, prior_variance=prior_variance)
    theta = np.random.default_rng(1).standard_normal((3, target.dim))
    theta = np.vstack([theta, 300.0 * theta[:1]])
    expected = target.potential(theta)
    assert np.all(np.isfinite(expected)) and expected[-1] > 1e3
    for potential in door_potentials(target.engine_functions(), theta):
        np.testing.assert_allclose(potential, expected, rtol=1e-10)


@pytest.mark.parametrize("config", [
    ("sghmc", dict(friction=1.0, noise_estimate="running", noise_clip=True, integrator="theta_first",
                   finite_population=False)),
    ("sgnht", dict(diffusion=1.0, noise_estimate="zero", integrator="theta_first")),
    ("ccadl", dict(diffusion=1.0, noise_estimate="running", integrator="theta_first", finite_population=False)),
])
def test_the_papers_samplers_run_on_the_compiled_engine(config):
    """configs/sampler/*_shang2015.yaml on logistic regression (Shang et al. 2015 Fig. 2): the runner's kernel is the
    engine's blocks, not the numpy steps; a subclass of the target (which may change its gradients) is not. Asked of
    the Python backend: the same decision, without compiling (the compiled Fig. 2 run is make validate's,
    tests/test_ccadl_fig2.py)."""
    name, params = config
    assert isinstance(kernel_of(make_sampler(name, logistic(), **params), PYTHON), Blocks)
    assert kernel_of(make_sampler(name, logistic(cls=OwnMinibatches), **params), PYTHON) is None
    assert isinstance(kernel_of(make_sampler(name, logistic_synthetic(n_data=100), **params), PYTHON), Blocks)


class OwnMinibatches(LogisticRegression):
    """A subclass (here one that draws its own minibatches, which the engine's blocks would not): it stays on the numpy
    steps, as any subclass that does not declare engine_functions in its own body does (Sampler._kernel_declared)."""

    def minibatch(self, rng, n_chains):
        return np.stack([rng.choice(self.n_data, self.batch_size, replace=False) for _ in range(int(n_chains))])


def test_the_sums_door_is_the_rows_doors_sums():
    """``signed_row_gradient_sums`` (HMC's exact ∇U on the engine) against the rows door's per-example gradients, summed
    here: Σ_i g_i and Σ_i (g_i − ḡ)², compiled and as Python, with margins of both signs and |m| ~ 10²."""
    rows = np.random.default_rng(5).standard_normal((40, 6)) * np.array([1, 1, 1, 1, 1, 30.0])
    theta = np.random.default_rng(6).standard_normal(6)
    examples = signed_row_gradients.py_func(theta, rows)
    expected = (examples.sum(axis=0), np.sum((examples - examples.mean(axis=0)) ** 2, axis=0))
    for function in (signed_row_gradient_sums, signed_row_gradient_sums.py_func):
        total, scatter = function(theta, rows, True)
        np.testing.assert_allclose(total, expected[0], rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(scatter, expected[1], rtol=1e-9, atol=1e-9)
