"""BPMF (T12) on the engine's blocks, through its sums door (``BPMF.engine_functions``): the sums and the prior, given
each chain's state (τ, the layout, λ), equal the numpy reference (the dense per-rating gradients of
``log_likelihood_gradients``, an independent computation, and ``log_prior_gradient``) under distinct hyperparameters
per chain, and a block's SGLD step is the step written from those numpy gradients on the block's own draws under the
hyperparameters of the block's start (read at each block, as a Gibbs step changes them), not the samplers' numpy
steps. The integrators are pinned to the generic recipe in tests/samplers/test_recipe_agreement.py and
tests/engine/test_driver.py; the blocks run as their Python source (the compiled block is that source:
tests/engine/test_driver.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import PYTHON, Blocks
from sgmcmc.samplers import make_sampler
from tests.targets.test_bpmf import _hyper, _target, _theta, ratings_file  # noqa: F401 (a fixture)
from tests.targets.test_logistic_regression_engine import sgld_steps_read_the_hyperparameters_at_each_block


@pytest.mark.parametrize("with_scatter", [True, False])
def test_the_sums_door_and_the_prior_are_the_reference(ratings_file, with_scatter):
    target = _hyper(_target(ratings_file))
    functions = target.engine_functions()
    theta = _theta(target, seed=3)
    index = np.array([[0, 5, 5, 9, 40, 41], [7, 3, 2, 1, 0, 60]])
    reference = target.log_likelihood_gradients(theta, index)
    state = functions["estimator_state"](2)
    assert state.shape == (2, functions["estimator_size"])
    for t, rows, expected, s in zip(theta, index, reference, state):
        total, scatter = functions["row_gradient_sums"](t, functions["data"][rows], with_scatter, s)
        np.testing.assert_allclose(total, expected.sum(axis=0), rtol=1e-12, atol=1e-13)
        squares = np.sum((expected - expected.mean(axis=0)) ** 2, axis=0) if with_scatter else np.zeros_like(total)
        np.testing.assert_allclose(scatter, squares, rtol=1e-9, atol=1e-12)
    per_chain = np.stack([functions["prior_gradient"](t, s) for t, s in zip(theta, state)])
    np.testing.assert_allclose(per_chain, target.log_prior_gradient(theta), rtol=1e-15)


def test_one_sgld_block_reads_the_hyperparameters_at_each_block(ratings_file):
    """Two blocks of one SGLD step (minibatches of 40 ratings) from one Blocks object, the hyperparameters (distinct
    per chain) changed between them as a Gibbs step would: each step is θ − ε∇Ũ + √(2ε)z written from the numpy
    ``log_likelihood_gradients`` and ``log_prior_gradient`` under the hyperparameters of its block's start, on the
    block's rows and normals drawn again (``sgld_by_hand`` in tests/targets/test_logistic_regression_engine.py)."""
    target = _hyper(_target(ratings_file, batch_size=40))

    def change(block_number):
        if block_number:
            values = target.hyperparameters()
            target.set_hyperparameters({key: value[::-1] * 1.7 for key, value in values.items()})

    sgld_steps_read_the_hyperparameters_at_each_block(target, change, n_chains=2, step_size=0.002, seed=4, rtol=1e-9)


def test_the_numpy_reference_has_no_engine_blocks_and_the_full_running_estimate_is_refused(ratings_file):
    target = _target(ratings_file)
    assert kernel_of(make_sampler("sgld", _target(ratings_file, kernels=False)), PYTHON) is None
    with pytest.raises(ValueError, match=r"^sampler.running_form=full: .* use sampler.running_form=diagonal$"):
        make_sampler("sghmc", target, noise_estimate="running", running_form="full")
    assert isinstance(kernel_of(make_sampler("sgld", target), PYTHON), Blocks)
