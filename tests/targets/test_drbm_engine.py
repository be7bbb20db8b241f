"""The DRBM (T9) on the engine's blocks, through its rows and sums doors (``DiscriminativeRBM.engine_functions``):
the doors equal the numpy reference's per-example gradients (an independent vectorised computation,
``log_likelihood_gradients_numpy``), and a block's SGLD step on the sums door is the step written from those numpy
gradients on the block's own draws, not the samplers' numpy steps. The integrators (and the diagonal running estimate
of Shang et al.'s Fig. 3, fed by the sums' scatter pinned here) are pinned to the generic recipe in
tests/samplers/test_recipe_agreement.py and tests/engine/test_driver.py; the blocks run as their Python source (the
compiled block is that source: tests/engine/test_driver.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import kernel_of
from sgmcmc.engine.driver import PYTHON, Blocks
from sgmcmc.samplers import make_sampler
from tests.helpers import door_potentials
from tests.targets.test_drbm import SHAPES, _points, _target
from tests.targets.test_logistic_regression_engine import one_step, sgld_by_hand, start_state


@pytest.mark.parametrize("shape", list(SHAPES))
def test_the_rows_and_sums_doors_are_the_numpy_reference(shape):
    target = _target(shape)
    functions = target.engine_functions()
    theta = _points(target, 31, n=2)
    index = np.array([[0, 4, 9, 4, 29], [3, 1, 28, 2, 7]])
    reference = target.log_likelihood_gradients_numpy(theta, index)
    for t, rows, expected in zip(theta, index, reference):
        batch = functions["data"][rows]
        gradients = functions["row_gradients"](t, batch)
        np.testing.assert_allclose(gradients, expected, rtol=1e-12, atol=1e-13 * np.abs(expected).max())
        total, scatter = functions["row_gradient_sums"](t, batch, True)
        np.testing.assert_allclose(total, expected.sum(axis=0), rtol=1e-11, atol=1e-12 * np.abs(expected).max())
        squares = np.sum((expected - expected.mean(axis=0)) ** 2, axis=0)
        np.testing.assert_allclose(scatter, squares, rtol=1e-10, atol=1e-12 * squares.max())
        np.testing.assert_array_equal(functions["row_gradient_sums"](t, batch, False)[1], 0.0)
    np.testing.assert_allclose(functions["prior_gradient"](theta[0]), target.log_prior_gradient(theta)[0], rtol=1e-15)
    assert functions["n_data"] == target.n_data == functions["data"].shape[0]


def test_the_rows_door_gives_the_targets_potential():
    """U = −Σ_i log p(y_i | x_i) − log p(θ) from the door's compiled ``row_log_likelihoods`` (by the gradient kernel's
    forward pass) and ``prior_log_density`` (as Python and compiled) is the numpy :meth:`potential`, at three points
    and at one with a label weight beyond the kernel's ``_SAFE`` (its other softplus path)."""
    target = _target("small")
    theta = _points(target, 32, n=4)
    theta[3, target.n_hidden * (target.n_features + 1)] = 400.0  # U_{0,0}
    for potential in door_potentials(target.engine_functions(), theta):
        np.testing.assert_allclose(potential, target.potential(theta), rtol=1e-10)


CASES = [
    ("ccadl", dict(diffusion=2.0, noise_estimate="running", running_form="diagonal", integrator="theta_first",
                   finite_population=False)),
    ("sghmc", dict(friction=2.0, noise_estimate="running", running_form="diagonal", noise_clip=True,
                   integrator="theta_first", finite_population=False)),
    ("sgnht", dict(diffusion=2.0, noise_estimate="running", running_form="diagonal", integrator="theta_first",
                   finite_population=False)),
    ("sgld", dict(noise_estimate="zero")),
    ("baoab", dict(noise_estimate="running", running_form="diagonal", finite_population=False)),
]


@pytest.mark.parametrize("shape", list(SHAPES))
def test_one_sgld_block_is_written_from_the_numpy_reference(shape):
    """One SGLD step of a block (a minibatch of 8 of 30 examples, 2 chains) against θ − ε∇Ũ + √(2ε)z written from
    ``log_likelihood_gradients_numpy`` and ``log_prior_gradient`` on the block's rows and normals drawn again
    (``sgld_by_hand`` in tests/targets/test_logistic_regression_engine.py)."""
    target = _target(shape, batch_size=8)
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    state = start_state(sampler, n_chains=2)
    block = one_step(sampler.engine_blocks(PYTHON), state, 0.01, seed=6)
    expected = sgld_by_hand(target, state.theta, 0.01, seed=6,
                                 likelihood_gradients=target.log_likelihood_gradients_numpy)
    assert block.status is None
    np.testing.assert_allclose(block.theta[:, 0], expected, rtol=1e-10, atol=1e-12)
    assert np.abs(expected - state.theta).max() > 1e-3


def test_the_papers_samplers_take_the_engine_and_the_numpy_reference_does_not():
    """ccadl_fig3's samplers run on the blocks; the target with ``kernels`` off (its numpy reference) hands the engine
    nothing and runs on the numpy steps."""
    for name, params in CASES[:3]:
        assert isinstance(kernel_of(make_sampler(name, _target("small", batch_size=8), **params), PYTHON), Blocks)
        assert kernel_of(make_sampler(name, _target("small", batch_size=8, kernels=False), **params), PYTHON) is None
