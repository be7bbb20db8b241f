"""A vectorised data model on the engine's blocks (sgmcmc/engine/replay.py): each step run again until the model has
answered every chain's calls; and a density model whose gradient is a method. Their samples are those of the same
model on rows, or with its gradient a staticmethod (whose blocks the recipe pins); the table answers a call only at
the very point and rows it was asked at, and what it does not serve stays off it."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from sgmcmc.config import RunOptions
from sgmcmc.engine.driver import COMPILED, PYTHON
from sgmcmc.engine.replay import ANSWERED, PENDING, PRIOR, ROWS, Replay, _answer, row_covariance
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.user import user_target
from tests.targets.test_row_models import GaussianMean


def shrinking_prior(theta):
    """∇ log N(0, 10 I)."""
    return -0.1 * theta


class ShrunkGaussianMean(GaussianMean):
    """GaussianMean with the prior N(0, 10 I), on rows."""

    prior_gradient = staticmethod(shrinking_prior)

    @staticmethod
    def prior_log_density(theta):
        return -0.05 * np.sum(theta * theta)


class VectorisedGaussianMean:
    """The same model in the vectorised contract: all chains' gradients in one call."""

    def __init__(self, n_data=40, dim=2, seed=0):
        self.rows = GaussianMean(n_data, dim, seed)
        self.n_data, self.dim = n_data, dim

    def grad_log_likelihood(self, theta, index):
        return self.rows.data[index] - theta[:, None, :]

    def grad_log_prior(self, theta):
        return -0.1 * theta

    def log_likelihood(self, theta, index):
        return -0.5 * np.sum((self.rows.data[index] - theta[:, None, :]) ** 2, axis=2)

    def log_prior(self, theta):
        return -0.05 * np.sum(theta * theta, axis=1)


def run_blocks(target, name, n_steps=25, n_chains=3, step_size=0.01, backend=PYTHON, estimator=None, **options):
    """The block of ``n_steps`` of the sampler's blocks on ``target`` from θ₀ = 0 with the random numbers of seed 1,
    and the blocks; on the Python backend unless told (the compiled blocks are that source: one case of each kind of
    model is compiled below, each a compile of its own that costs seconds)."""
    if estimator is not None:
        target = make_estimator(estimator, target, seed=0)
    sampler = make_sampler(name, target, **options)
    blocks = sampler.engine_blocks(backend=backend)
    assert blocks is not None, f"{name} {options} is not on the engine"
    rng = np.random.default_rng(1)
    return blocks(rng, sampler.init(np.zeros((n_chains, target.dim)), rng), np.full(n_steps, step_size), 0), blocks


def paths(target, name, **options):
    """θ's path (c, K, d) of :func:`run_blocks`, and the blocks."""
    block, blocks = run_blocks(target, name, **options)
    assert block.status is None, block.error
    return block.theta, blocks


CASES = [("sgld", {"noise_estimate": "zero"}),
         ("sghmc", {"noise_estimate": "running", "running_form": "full", "noise_clip": True}),
         ("sgnht", {"noise_estimate": "zero"}),
         ("baoab", {"noise_estimate": "running", "noise_clip": True}),
         ("psgld", {"noise_estimate": "zero", "preconditioner": "running"}),
         ("sgld", {"noise_estimate": "zero", "estimator": "control_variates"}),
         # the known V(θ) over all N rows at every gradient (the table's covariance): the default noise estimate
         ("sgld", {"noise_estimate": "known"}),
         ("baoab", {"noise_estimate": "known"}),  # at the O step's point, away from a gradient
         ("ccadl", {"noise_estimate": "known"}),
         ("sghmc", {"noise_estimate": "known", "estimator": "control_variates"})]  # about the centre θ̂


@pytest.mark.parametrize("name, options", CASES, ids=[f"{name}-{'-'.join(map(str, o.values()))}" for name, o in CASES])
def test_a_vectorised_model_gives_the_samples_of_the_same_model_on_rows(name, options):
    vectorised = user_target(VectorisedGaussianMean(), batch_size=8)
    on_rows = user_target(ShrunkGaussianMean(), batch_size=8)
    theta, blocks = paths(vectorised, name, **options)
    expected, _ = paths(on_rows, name, **options)
    assert blocks.replay is not None
    assert np.abs(theta).max() > 0.05  # the chains moved
    np.testing.assert_allclose(theta, expected, rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning", "ignore:invalid value:RuntimeWarning")
def test_a_chain_that_diverges_ends_the_block_at_the_same_step_as_on_rows():
    """ε far past the stability bound 2/N: θ grows by a factor of about εN a step until it overflows."""
    replayed, on_rows = (run_blocks(user_target(model, batch_size=8), "sgld", n_steps=400, step_size=50.0,
                                    noise_estimate="zero")[0]
                         for model in (VectorisedGaussianMean(), ShrunkGaussianMean()))
    assert replayed.status == on_rows.status == "diverged"
    assert 10 < replayed.theta.shape[1] == on_rows.theta.shape[1] < 400
    np.testing.assert_allclose(replayed.theta, on_rows.theta, rtol=1e-12)


class TanhRows:
    """p(x_i | θ) ∝ sech(x_i − θ) per coordinate, prior N(0, 10 I), on rows: g_i(θ) = tanh(x_i − θ), whose
    g_i(θ) − g_i(θ̂) differ from row to row (VectorisedGaussianMean's do not: S_h² = 0 about any centre)."""

    def __init__(self, n_data=40, dim=2, seed=0):
        self.data = GaussianMean(n_data, dim, seed).data
        self.n_data, self.dim = n_data, dim

    @staticmethod
    def row_gradients(theta, rows):
        return np.tanh(rows - theta)

    @staticmethod
    def row_log_likelihoods(theta, rows):
        return -np.sum(np.log(np.cosh(rows - theta)), axis=1)

    prior_gradient = staticmethod(shrinking_prior)
    prior_log_density = staticmethod(ShrunkGaussianMean.prior_log_density)


class VectorisedTanh:
    """:class:`TanhRows` in the vectorised contract."""

    def __init__(self, n_data=40, dim=2, seed=0):
        self.rows = TanhRows(n_data, dim, seed)
        self.n_data, self.dim = n_data, dim

    def grad_log_likelihood(self, theta, index):
        return np.tanh(self.rows.data[index] - theta[:, None, :])

    def grad_log_prior(self, theta):
        return -0.1 * theta

    def log_likelihood(self, theta, index):
        return -np.sum(np.log(np.cosh(self.rows.data[index] - theta[:, None, :])), axis=2)

    def log_prior(self, theta):
        return -0.05 * np.sum(theta * theta, axis=1)


PER_CHAIN = [("hmc", {}),  # the exact ∇U over all the rows and U for the Metropolis test
             ("sghmc_mh", {"noise_estimate": "zero", "n_leapfrog": 3}),  # a trajectory's minibatch gradients, U
             ("naive_sghmc", {"noise_estimate": "zero"}),
             ("sgld", {"noise_estimate": "known", "estimator": "svrg"}),  # renewals over all the rows
             ("baoab", {"noise_estimate": "known", "estimator": "svrg"}),  # V(θ₁) about each chain's own centre
             ("psgld", {"noise_estimate": "zero"}),  # the stationary V(θ) and Γ over all the rows
             ("psgld", {"noise_estimate": "known", "estimator": "control_variates"})]


@pytest.mark.parametrize("name, options", PER_CHAIN,
                         ids=[f"{name}-{'-'.join(map(str, o.values()))}" for name, o in PER_CHAIN])
def test_what_needs_passes_over_all_the_data_calls_the_model_one_chain_at_a_time(name, options):
    """The table does not serve these (calls over all N rows, or a trajectory's): each chain calls the vectorised
    model with its own θ (1, d) and rows (:func:`sgmcmc.engine.replay.per_chain`), and the samples are those of the
    same model on rows (:class:`TanhRows`: with the control variates and SVRG, V(θ) about a centre is not 0)."""
    vectorised = user_target(VectorisedTanh(), batch_size=8)
    theta, blocks = paths(vectorised, name, n_steps=12, **options)
    expected, _ = paths(user_target(TanhRows(), batch_size=8), name, n_steps=12, **options)
    assert blocks.replay is None
    assert np.abs(theta).max() > 0.05  # the chains moved
    np.testing.assert_allclose(theta, expected, rtol=0, atol=1e-11)


def _log_density(theta):
    return -0.5 * np.sum(theta * theta * np.array([1.0, 4.0]), axis=1)


@pytest.mark.parametrize("methods", ["gradient and density", "density"])
def test_hmc_on_a_density_model_whose_density_is_a_method_is_hmc_on_its_staticmethod(methods):
    """The Metropolis test's U of a method, called one chain at a time, and accepted or rejected as the staticmethod's:
    with the gradient a method too (:func:`sgmcmc.engine.replay.per_chain`), or a staticmethod."""
    gradient = MethodGaussian if methods == "gradient and density" else StaticGaussian
    MethodDensity = type("MethodDensity", (gradient,), {"log_density": lambda self, theta: _log_density(theta)})
    StaticDensity = type("StaticDensity", (StaticGaussian,), {"log_density": staticmethod(_log_density)})
    block, blocks = run_blocks(user_target(MethodDensity()), "hmc", n_steps=12, step_size=0.3)
    expected, _ = run_blocks(user_target(StaticDensity()), "hmc", n_steps=12, step_size=0.3)
    assert blocks.replay is None and 0 < block.accept_probability.mean() < 1
    np.testing.assert_allclose(block.theta, expected.theta, rtol=0, atol=1e-12)


class StaticGaussian:
    """A density model N(0, diag(1, 1/4)) whose gradient is a staticmethod: the compiled blocks call it per chain."""

    dim = 2

    @staticmethod
    def grad_log_density(theta):
        return -theta * np.array([1.0, 4.0])


class MethodGaussian:
    """The same model with its gradient a method: all the chains at once, from the table."""

    dim = 2

    def grad_log_density(self, theta):
        return -theta * np.array([1.0, 4.0])


@pytest.mark.parametrize("name, options", [("sgld", {}), ("sghmc", {}), ("sgnht", {}), ("baoab", {}),
                                           ("psgld", {"preconditioner": "stationary"})])
def test_a_density_model_whose_gradient_is_a_method_gives_the_samples_of_its_staticmethod(name, options):
    """pSGLD's stationary preconditioner takes 2d + 1 gradients a step by central differences: the table grows."""
    method = user_target(MethodGaussian(), noise_variance=0.5)
    theta, blocks = paths(method, name, n_chains=3, n_steps=20, step_size=0.05, **options)
    expected, _ = paths(user_target(StaticGaussian(), noise_variance=0.5), name, n_chains=3, n_steps=20,
                        step_size=0.05, **options)
    assert blocks.replay is not None
    np.testing.assert_allclose(theta, expected, rtol=0, atol=1e-12)


def table_call(replay, kind, theta, rows, tail):
    """One call of the table's function as plain Python (a call the compiled blocks make)."""
    size = rows.shape[0] * theta.size if kind == ROWS else theta.size
    return _answer.py_func(kind, theta, rows.reshape(-1, 1).astype(float), tail, replay.table(), size)


def test_a_call_of_more_rows_than_a_minibatch_is_refused_not_answered():
    replay = Replay({ROWS: None, PRIOR: None}, n_chains=1, dim=2, rows=3)
    with pytest.raises(ValueError, match="over all the data"):
        table_call(replay, ROWS, np.zeros(2), np.arange(4), np.array([0.0, 0.0]))


def test_the_table_answers_a_call_only_at_the_point_and_rows_it_was_asked_at():
    asked = []

    def rows_answer(points, index):
        asked.append((points.copy(), index.copy()))
        return points[:, None, :] + index[:, :, None]  # (n, m, d)

    replay = Replay({ROWS: rows_answer, PRIOR: lambda points, index: -points}, n_chains=2, dim=2, rows=3, slots=1)
    theta, rows = np.array([1.0, 2.0]), np.array([4, 0, 2])
    tail = np.array([1.0, 0.0])  # chain 1, no call made yet
    assert not table_call(replay, ROWS, theta, rows, tail).any()  # recorded, answered with zeros
    assert table_call(replay, PRIOR, theta, rows[:0], tail).shape == (2,)  # no slot left: the table grows
    assert replay.fill() and replay.status.shape[1] == 2 and not asked
    tail[:] = (1.0, 0.0)
    table_call(replay, ROWS, theta, rows, tail)
    table_call(replay, PRIOR, theta, rows[:0], tail)
    assert list(replay.status[1]) == [PENDING, PENDING] and not replay.status[0].any()
    assert replay.fill() and len(asked) == 1
    np.testing.assert_array_equal(asked[0][1], [rows])
    tail[:] = (1.0, 0.0)
    np.testing.assert_array_equal(table_call(replay, ROWS, theta, rows, tail), (theta + rows[:, None]).ravel())
    np.testing.assert_array_equal(table_call(replay, PRIOR, theta, rows[:0], tail), -theta)
    assert not replay.fill()  # every call answered: the step is done
    tail[:] = (1.0, 0.0)
    moved = theta + 1e-9  # another point (an earlier answer moved it): asked again, not answered from the table
    assert not table_call(replay, ROWS, moved, rows, tail).any()
    assert replay.status[1, 0] == PENDING and replay.status[1, 1] == ANSWERED
    tail[:] = (1.0, 0.0)
    replay.fill()
    assert not table_call(replay, ROWS, moved, rows[::-1], tail).any()  # other rows: asked again too
    tail[:] = (1.0, 0.0)
    replay.fill()
    diverged = np.array([np.nan, 2.0])  # a diverged chain's point: answered once, not asked at every pass
    table_call(replay, ROWS, diverged, rows, tail)
    assert replay.fill()
    tail[:] = (1.0, 0.0)
    np.testing.assert_array_equal(table_call(replay, ROWS, diverged, rows, tail), (diverged + rows[:, None]).ravel())
    assert replay.status[1, 0] == ANSWERED


# the data model with the known V(θ): its table's rows, prior and covariance, the last also at BAOAB's O step
COMPILED_CASES = [("data", "baoab", {"noise_estimate": "known"}),
                  ("density", "sgld", {"noise_estimate": "known"})]  # tests/targets/test_row_models.py's block


@pytest.mark.parametrize("model, name, options", COMPILED_CASES, ids=[case[0] for case in COMPILED_CASES])
def test_the_compiled_blocks_replay_the_python_sources_samples(model, name, options):
    target = (user_target(VectorisedGaussianMean(), batch_size=8) if model == "data"
              else user_target(MethodGaussian(), noise_variance=0.5))
    compiled, blocks = paths(target, name, n_steps=6, backend=COMPILED, **options)
    python, _ = paths(target, name, n_steps=6, **options)
    assert blocks.replay is not None and np.abs(compiled).max() > 0.01
    np.testing.assert_allclose(compiled, python, rtol=0, atol=1e-12)


@pytest.mark.parametrize("diagonal", [False, True])
@pytest.mark.parametrize("centred", [False, True])
def test_the_tables_covariance_is_the_sample_covariance_of_the_rows_gradients(diagonal, centred):
    """S_h²(θ) at two points against numpy's np.cov of the per-example h_i, N = 40 rows summed in chunks of 3 rows;
    g_i = x_i² ⊙ θ, so that the h_i about a centre, g_i(θ) − g_i(θ̂), still vary from row to row."""
    squares = GaussianMean(40, 3, 0).data ** 2
    points, centre = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]]), np.array([1.0, 1.0, -1.0])

    def quadratic(theta, index):
        return squares[index] * theta[:, None, :]

    every = np.tile(np.arange(40), (2, 1))
    examples = quadratic(points, every) - (quadratic(np.tile(centre, (2, 1)), every) if centred else 0.0)
    expected = np.array([np.cov(example, rowvar=False) for example in examples])
    if diagonal:
        expected = np.diagonal(expected, axis1=1, axis2=2)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("sgmcmc.engine.replay.CHUNK", 3 * 2 * 3)  # chunks of 3 rows for 2 points of d = 3
        covariance = row_covariance(quadratic, 40, points, diagonal, centre if centred else None)
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(covariance, expected, rtol=1e-12, atol=1e-14)


def test_a_vectorised_model_called_one_chain_at_a_time_says_so_in_one_line(caplog):
    """Once in a run (the runner makes the blocks once), and nothing where the table serves the sampler."""
    target = user_target(VectorisedGaussianMean(), batch_size=8)
    settings = RunOptions(n_steps=4, n_chains=2, burn_in=0, eval_every=4, progress=False, backend=PYTHON)
    with caplog.at_level(logging.WARNING):
        assert run_chains(make_sampler("hmc", target), Constant(0.01), settings,
                          np.random.default_rng(0)).status == "completed"
    said = [record.getMessage() for record in caplog.records]
    assert len(said) == 1 and "hmc on" in said[0] and "one chain at a time" in said[0], said
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        make_sampler("sgld", target).engine_blocks(PYTHON)  # on the table: all the chains at once, nothing to say
    assert not caplog.records
