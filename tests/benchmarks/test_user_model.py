"""The user-model row of ``make bench-peers`` (:mod:`benchmarks.user_model`) compares like with like: blackjax's
gradient estimator on its model is ours on ``examples/robust_regression.py`` (the same rows, N/n scaling and prior),
and blackjax's chains are float64 and finite. Needs jax and blackjax (``pip install -e ".[peers]"``): skipped
without them."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import user_model
from examples.robust_regression import RobustRegression
from sgmcmc.engine.estimators import minibatch_gradient, source_of
from sgmcmc.targets.user import user_target


@pytest.fixture(scope="module")
def jax():
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    return user_model.load_jax()[0]


def test_blackjax_estimates_the_same_gradient_as_ours(jax):
    import blackjax

    model = RobustRegression(n_data=500, dim=4, seed=3)
    target = user_target(model, "RobustRegression", batch_size=50)
    rows = np.arange(7, 57)
    theta = np.random.default_rng(0).standard_normal(4)
    ours = np.empty(4)
    minibatch_gradient.py_func(tuple(part.python if hasattr(part, "python") else part
                                     for part in source_of(target.engine_functions())), theta, np.zeros((2, 4)), rows,
                               np.zeros(0), ours, np.zeros((4, 4)))
    with jax.enable_x64(True):
        estimator = blackjax.sgmcmc.gradients.grad_estimator(*user_model.blackjax_model(model.data))
        theirs = -np.asarray(estimator(jax.numpy.asarray(theta), jax.numpy.asarray(model.data[rows])))
    np.testing.assert_allclose(theirs, ours, rtol=1e-10)


def test_blackjax_chains_are_float64_and_finite(jax):
    model = RobustRegression(n_data=300, dim=3, seed=1)
    with jax.enable_x64(True):
        run = user_model.blackjax_chains("sghmc", model.data, 20)
        positions = run(jax.numpy.zeros((2, 3)), jax.random.split(jax.random.PRNGKey(0), 2))
    assert positions.shape == (2, 20, 3) and positions.dtype == np.float64 and np.isfinite(np.asarray(positions)).all()
