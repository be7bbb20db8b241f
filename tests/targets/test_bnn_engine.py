"""The BNN (T11) on the engine's blocks, through its sums door (``BayesianNeuralNetwork.engine_functions``): the sums
and the grouped prior equal the numpy reference (the per-example gradients of ``log_likelihood_gradients``, an
independent computation, and ``log_prior_gradient`` under distinct precisions per chain and group), and a block's SGLD
step is the step written from those numpy gradients on the block's own draws under the precisions of the block's start
(read at each block, as a Gibbs step changes them), not the samplers' numpy steps. The integrators are pinned to the
generic recipe in tests/samplers/test_recipe_agreement.py and tests/engine/test_driver.py; the blocks run as their
Python source (the compiled block is that source: tests/engine/test_driver.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import COMPILED, PYTHON, Blocks
from sgmcmc.gradient_estimators import SVRG
from sgmcmc.samplers import make_sampler
from sgmcmc.targets.gaussian_prior import grouped_prior_gradient
from sgmcmc.targets.logistic_regression import LogisticRegression
from tests.helpers import door_potentials
from tests.targets.test_bnn import D, H, K, PRECISION_NAMES, _points, _target, _with_precisions
from tests.targets.test_logistic_regression_engine import (logistic,
                                                         sgld_steps_read_the_hyperparameters_at_each_block)


@pytest.mark.parametrize("with_scatter", [True, False])
def test_the_sums_door_is_the_per_example_reference(with_scatter):
    target = _target()
    functions = target.engine_functions()
    theta = _points(4, n=2)
    index = np.array([[0, 3, 3, 29, 11], [5, 6, 7, 8, 1]])
    reference = target.log_likelihood_gradients(theta, index)
    for t, rows, expected in zip(theta, index, reference):
        total, scatter = functions["row_gradient_sums"](t, functions["data"][rows], with_scatter)
        np.testing.assert_allclose(total, expected.sum(axis=0), rtol=1e-11, atol=1e-13)
        squares = np.sum((expected - expected.mean(axis=0)) ** 2, axis=0) if with_scatter else np.zeros_like(total)
        np.testing.assert_allclose(scatter, squares, rtol=1e-9, atol=1e-12)


def test_the_prior_given_each_chains_state_is_the_targets():
    target = _target()
    _with_precisions(target)
    functions = target.engine_functions()
    theta = _points(5)
    state = functions["estimator_state"](3)
    assert state.shape == (3, functions["estimator_size"]) == (3, 2 * len(PRECISION_NAMES) - 1)
    per_chain = np.stack([functions["prior_gradient"](t, s) for t, s in zip(theta, state)])
    np.testing.assert_allclose(per_chain, target.log_prior_gradient(theta), rtol=1e-15)


def test_the_door_gives_the_targets_potential_with_the_priors_normalising_terms():
    """U from the door's ``row_log_likelihoods`` and ``prior_log_density`` given each chain's precisions (as Python and
    compiled) is :meth:`potential` (U given λ) less the normalising terms ½ Σ_g n_g log λ_g that the door keeps, under
    distinct precisions per chain and group."""
    target = _target()
    values = _with_precisions(target)
    functions = target.engine_functions()
    theta = _points(6)
    sizes = np.array([D * H, H, H * K, K])  # n_g of W1, b1, W2, b2
    normalising = 0.5 * np.log(np.stack([values[name] for name in PRECISION_NAMES], axis=1)) @ sizes
    for potential in door_potentials(functions, theta, functions["estimator_state"](3)):
        np.testing.assert_allclose(potential, target.potential(theta) - normalising, rtol=1e-10)


def test_one_sgld_block_reads_the_precisions_at_each_block():
    """Two blocks of one SGLD step (minibatches of 7) from one Blocks object, the precisions (distinct per chain and
    group) redrawn between them as a Gibbs step would: each step is θ − ε∇Ũ + √(2ε)z written from the numpy
    ``log_likelihood_gradients`` and ``log_prior_gradient`` under the precisions of its block's start, on the block's
    rows and normals drawn again (``sgld_by_hand`` in tests/targets/test_logistic_regression_engine.py)."""
    target = _target(batch_size=7)

    def change(block_number):
        values = _with_precisions(target)
        if block_number:
            target.set_hyperparameters({key: value[::-1] * 1.5 for key, value in values.items()})

    sgld_steps_read_the_hyperparameters_at_each_block(target, change, n_chains=3, step_size=0.01, rtol=1e-9)


def test_estimates_the_sums_do_not_serve_are_refused_with_the_key_to_change():
    """The full running estimate (d × d) and pSGLD's stationary preconditioner need the per-example rows, which the
    BNN does not hand over: each is refused in one line naming the key and its remedy; the diagonal estimate and the
    running preconditioner run on the blocks."""
    target = _target()
    with pytest.raises(ValueError, match=r"^sampler.running_form=full: .* use sampler.running_form=diagonal$"):
        make_sampler("sghmc", target, noise_estimate="running", running_form="full")
    for name in ("psgld", "psgld_no_gamma"):
        with pytest.raises(ValueError, match=r"^sampler.preconditioner=stationary: .* use sampler.preconditioner=running$"):
            make_sampler(name, target, noise_estimate="zero")
        assert isinstance(kernel_of(make_sampler(name, target, preconditioner="running"), PYTHON), Blocks)
    diagonal = make_sampler("sghmc", target, noise_estimate="running", running_form="diagonal")
    assert isinstance(kernel_of(diagonal, PYTHON), Blocks)
    assert isinstance(kernel_of(make_sampler("sgld", target), PYTHON), Blocks)


class WithPriorState(LogisticRegression):
    """A rows-door model whose prior takes each chain's hyperparameters (as the BNN's does)."""

    def engine_functions(self):
        return {**super().engine_functions(), "prior_gradient": grouped_prior_gradient,
                "estimator_state": lambda n_chains: np.tile([1.0], (n_chains, 1)), "estimator_size": 1}


def test_svrg_refuses_a_model_whose_chains_carry_a_prior_state():
    """The chain's memory after the running estimate's is SVRG's own: a model with a prior state stays on the numpy
    steps with SVRG (and takes the blocks without it)."""
    target = logistic()
    model = WithPriorState(target.features, target.labels, batch_size=20)
    assert SVRG(model, update_every=5).engine_functions() is None
    assert SVRG(target, update_every=5).engine_functions() is not None
    assert isinstance(kernel_of(make_sampler("sgld", model), PYTHON), Blocks)


@pytest.mark.validate  # a block compiled for this model (tens of seconds): the long tier
def test_the_compiled_blocks_are_their_python_source():
    """BADODAB with the running diagonal estimate on the sums door, per-chain precisions (the prior's state and the
    noise slot that reads it away from a gradient, compiled): the compiled block equals its Python source (to
    rounding: BLAS against numpy's products)."""
    paths = []
    for backend in (COMPILED, PYTHON):
        target = _target(batch_size=7)
        _with_precisions(target, n_chains=2)
        sampler = make_sampler("badodab", target, noise_estimate="running", running_form="diagonal",
                               finite_population=False)
        blocks = sampler.engine_blocks(backend)
        assert isinstance(blocks, Blocks) and blocks.backend == backend
        rng = np.random.default_rng(0)
        block = blocks(np.random.default_rng(1), sampler.init(target.initial_position(2, rng), rng), np.full(10, 0.01),
                       0)
        assert block.status is None
        paths.append(block.theta)
    np.testing.assert_allclose(*paths, rtol=1e-10, atol=1e-13)


def test_a_sweep_takes_the_training_rows_in_order_epoch_after_epoch():
    """minibatch_order=sweep (the authors' fixed shuffled minibatches): SGD's blocks on the BNN take rows k·n … (k+1)·n
    − 1 at step t, k = t mod ⌊N/n⌋ (N = 30, n = 7: 4 steps an epoch, rows 28 and 29 never), as a hand-written loop of
    θ ← θ − ε∇Ũ on those rows with the numpy gradients; blocks of 3 and 6 steps, so that a block starts mid-epoch."""
    target = _target(batch_size=7, minibatch_order="sweep")
    assert target.n_data == 30
    sampler = make_sampler("sgd", target)
    blocks = kernel_of(sampler, PYTHON)
    theta = _points(8, n=2)
    rng = np.random.default_rng(0)
    state = sampler.init(theta, rng)
    step, expected = 0.01, theta.copy()
    for start, length in ((0, 3), (3, 6)):
        state = blocks(rng, state, np.full(length, step), start).state
        for t in range(start, start + length):
            rows = np.arange(7) + 7 * (t % 4)
            gradient = (-30 / 7 * target.log_likelihood_gradients(expected, np.tile(rows, (2, 1))).sum(axis=1)
                        - target.log_prior_gradient(expected))
            expected = expected - step * gradient
    np.testing.assert_allclose(state.theta, expected, rtol=1e-10, atol=1e-12)
    epochs = target.sweep_batches(8, 2, 0)
    assert sorted(epochs[:4, 0].ravel()) == list(range(28)) and np.array_equal(epochs[4:], epochs[:4])
    assert np.array_equal(target.sweep_batches(5, 2, 3), epochs[3:])


def test_random_minibatches_are_the_default():
    assert "batches" not in _target().engine_functions()
    with pytest.raises(ValueError, match="minibatch_order must be one of random, sweep"):
        _target(minibatch_order="shuffled")


@pytest.mark.parametrize("sampler, options", [("hmc", {}), ("sghmc_mh", {}), ("sgld", {"integrator": "generic"})])
def test_a_sweep_refuses_samplers_it_cannot_serve_in_one_line(sampler, options):
    """An exact gradient (HMC), a trajectory's minibatches (SGHMC + MH) or the generic step's own draws would not take
    the sweep's one minibatch a step: refused, naming the key."""
    from sgmcmc.config import ConfigError
    from sgmcmc.runner import check_minibatch_order

    chosen = make_sampler(sampler, _target(batch_size=7, minibatch_order="sweep"), **options)
    with pytest.raises(ConfigError, match=r"^target\.minibatch_order=sweep gives one minibatch a step") as error:
        check_minibatch_order(chosen)
    assert "\n" not in str(error.value)
    check_minibatch_order(make_sampler("sghmc", _target(batch_size=7, minibatch_order="sweep")))
