"""A model written in JAX, in blackjax's form (sgmcmc/targets/jax_model.py; issue 35), against the same model written by
hand: examples/jax_models.py beside examples/exact_models.py, the same gradients to 1e-10 in float64; and beside
tests/targets/vectorised_models.py (by hand in the vectorised form a JAX model takes, so both run the same compiled
blocks), the same samples at the same seed over the first 100 steps to 1e-8, for a density model and a data model,
SGLD and SGHMC here, every other sampler in make validate; a PyTree's
coordinates named by its paths; a model as module-level functions; and the one-line refusals. Needs JAX
(``pip install -e ".[jax]"``, which ``make test``'s set-up installs): skipped without it."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

jax = pytest.importorskip("jax", reason="JAX is not installed: pip install -e '.[jax]' (the jax extra)")

from sgmcmc.config import RunOptions  # noqa: E402
from sgmcmc.engine.replay import replayed_rows, replayed_sums  # noqa: E402
from sgmcmc.experiment import build  # noqa: E402
from sgmcmc.runner import run_chains  # noqa: E402
from sgmcmc.schedules import Constant  # noqa: E402
from sgmcmc.targets.bnn import BayesianNeuralNetwork  # noqa: E402
from sgmcmc.targets.user import UserModelError, load_model_class, make_user_target, user_target  # noqa: E402

# each model's step size for the sample comparison: inside every sampler's stability and PSD bounds at these starts
STEPS = {"Banana": 0.05, "ConjugateRegression": 3e-5}
# pSGLD's stationary preconditioner on an exact gradient, 1/(λ + |∇U|), is 1/λ = 1e5 at its default λ where ∇U is near
# 0, and its derivative 1/λ² there turns the rounding differences of two ways of computing ∇U (1e-16) into O(10) within
# 100 steps on the banana (measured at step sizes 0.05 to 2e-5): the comparison takes λ = 1
PSGLD = {"damping": 1.0}
# ... and its Γ takes ∂²U/∂θ_i² by central differences of ∇U (a user model hands over no exact Hessian diagonal yet), which
# turn the two gradients' rounding differences (1e-16) into 1e-11 a step: 3.8e-8 at step 100 on the banana (measured);
# issue 35's 1e-8 then needs JAX's exact Hessian diagonal in the engine's pSGLD, not built
TOLERANCE = {("Banana", "psgld"): 1e-7}
FAST = ("sgld", "sghmc")  # make test; every correct sampler in make validate
EVERY = ("sgld", "psgld", "sghmc", "sghmc_mh", "naive_sghmc", "sgnht", "ccadl", "baoab", "badodab", "hmc")
BY_HAND = {"exact_models": "examples/exact_models.py", "vectorised": "tests/targets/vectorised_models.py",
           "jax": "examples/jax_models.py"}


def pair(model: str):
    return (make_user_target(f"{BY_HAND['exact_models']}:{model}"), make_user_target(f"{BY_HAND['jax']}:{model}"))


@pytest.mark.parametrize("model", sorted(STEPS))
def test_jax_gives_the_hand_written_gradients(model):
    by_hand, by_jax = pair(model)
    theta = np.random.default_rng(0).standard_normal((5, by_hand.dim)) * 2.0
    assert np.allclose(by_jax.gradient(theta), by_hand.gradient(theta), rtol=0, atol=1e-10)
    assert np.allclose(by_jax.potential(theta), by_hand.potential(theta), rtol=0, atol=1e-10)
    if model == "ConjugateRegression":
        index = np.random.default_rng(1).integers(0, by_hand.n_data, (5, 7))
        assert np.allclose(by_jax.log_likelihood_gradients(theta, index),
                           by_hand.log_likelihood_gradients(theta, index), rtol=0, atol=1e-10)
        assert np.allclose(by_jax.log_prior_gradient(theta), by_hand.log_prior_gradient(theta), rtol=0, atol=1e-10)


def same_samples(model: str, sampler: str, tmp_path) -> None:
    samples, step = [], STEPS[model]
    for file in (BY_HAND["vectorised"], BY_HAND["jax"]):
        config = {"seed": 0, "tune": "off", "sampler": {"name": sampler, "step_size": step, **(PSGLD if sampler == "psgld" else {})},
                  "schedule": {"name": "constant"},
                  "target": {"name": "custom", "model": f"{file}:{model}"},
                  "run": {"n_steps": 100, "n_chains": 3, "burn_in": 0, "progress": False, "figures": False,
                          "results_dir": str(tmp_path)}}
        built = build(config)
        start = 0.3 * np.random.default_rng(1).standard_normal((3, built.target.dim))
        outcome = run_chains(built.sampler, Constant(step), RunOptions(n_steps=100, n_chains=3, burn_in=0,
                                                                              progress=False),
                             np.random.default_rng(2), theta0=start, blocks=built.blocks)
        assert outcome.status == "completed"
        samples.append(outcome.samples)
    assert np.max(np.abs(samples[0] - samples[1])) < TOLERANCE.get((model, sampler), 1e-8)
    assert np.ptp(samples[1], axis=1).min() > 0  # the chains moved


@pytest.mark.parametrize("model", sorted(STEPS))
@pytest.mark.parametrize("sampler", FAST)
def test_jax_gives_the_hand_written_samples(model, sampler, tmp_path):
    same_samples(model, sampler, tmp_path)


@pytest.mark.validate
@pytest.mark.parametrize("model", sorted(STEPS))
@pytest.mark.parametrize("sampler", [name for name in EVERY if name not in FAST])
def test_jax_gives_the_hand_written_samples_on_every_sampler(model, sampler, tmp_path):
    same_samples(model, sampler, tmp_path)


def write(tmp_path, source: str):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent(source))
    return path


def test_a_pytree_model_as_module_functions_names_its_leaves(tmp_path):
    """blackjax's form as a script has it: module-level functions and a dict of parameters; θ is the leaves in the
    tree's order (a dict's: sorted keys), each row-major, and the names are their paths."""
    path = write(tmp_path, """
        import jax.numpy as jnp
        initial_position = {"w": jnp.zeros((2, 2)), "b": jnp.zeros(())}
        def logdensity_fn(params):
            return -0.5 * jnp.sum(params["w"] ** 2) - 0.5 * (params["b"] - 1.0) ** 2 / 4.0
    """)
    target = make_user_target(str(path))
    assert target.parameter_names() == ["['b']", "['w'][0, 0]", "['w'][0, 1]", "['w'][1, 0]", "['w'][1, 1]"]
    theta = np.arange(10.0).reshape(2, 5)
    expected = np.column_stack([(theta[:, 0] - 1.0) / 4.0, theta[:, 1:]])  # ∇U
    assert np.allclose(target.gradient(theta), expected, rtol=0, atol=1e-12)
    assert target.gradient(theta).dtype == np.float64


def test_a_function_jax_cannot_trace_is_one_line(tmp_path):
    path = write(tmp_path, """
        import jax.numpy as jnp
        initial_position = jnp.zeros(2)
        def logdensity_fn(params):
            if params[0] > 0:  # a Python branch on a traced value
                return -jnp.sum(params ** 2)
            return -jnp.sum(params ** 4)
    """)
    with pytest.raises(UserModelError) as error:
        make_user_target(str(path))
    assert str(error.value).startswith(f"target.model={path}: JAX cannot trace logdensity_fn (TracerBoolConversion")
    assert "\n" not in str(error.value)


def test_a_data_model_without_data_or_position_is_one_line(tmp_path):
    path = write(tmp_path, """
        import jax.numpy as jnp
        initial_position = jnp.zeros(2)
        def loglikelihood_fn(params, x):
            return -jnp.sum((x - params) ** 2)
        def logprior_fn(params):
            return -jnp.sum(params ** 2)
    """)
    with pytest.raises(UserModelError, match="needs data, a PyTree of arrays"):
        make_user_target(str(path))
    path.write_text("def logdensity_fn(params):\n    return -params ** 2\n")
    with pytest.raises(UserModelError, match="needs initial_position, a PyTree of parameters"):
        make_user_target(str(path))


def test_a_data_model_sums_its_rows_gradients_where_the_minibatch_takes_sums(tmp_path):
    """JAX's sums, ∇ of the rows' summed log-likelihood and their scatter, are those of its per-example gradients;
    plain minibatches with no noise estimate take them (the sums door: no (chains, n, d) array), the known noise the
    per-example rows. The samples through the sums are test_jax_gives_the_hand_written_samples'."""
    by_hand, by_jax = pair("ConjugateRegression")
    theta = np.random.default_rng(0).standard_normal((4, by_jax.dim))
    index = np.random.default_rng(1).integers(0, by_jax.n_data, (4, 9))
    rows = by_hand.log_likelihood_gradients(theta, index)
    total, scatter = by_jax.model.grad_log_likelihood_sums(theta, index, True)
    assert np.allclose(total, rows.sum(axis=1), rtol=0, atol=1e-10)
    assert np.allclose(scatter, ((rows - rows.mean(axis=1, keepdims=True)) ** 2).sum(axis=1), rtol=0, atol=1e-10)
    assert np.allclose(by_jax.gradient(theta), by_hand.gradient(theta), rtol=0, atol=1e-10)
    doors = {}
    for estimate in ("zero", "known"):
        config = {"seed": 0, "tune": "off", "sampler": {"name": "sgld", "step_size": 1e-5, "noise_estimate": estimate},
                  "schedule": {"name": "constant"},
                  "target": {"name": "custom", "model": f"{BY_HAND['jax']}:ConjugateRegression"},
                  "run": {"n_steps": 10, "n_chains": 2, "burn_in": 0, "progress": False, "figures": False,
                          "results_dir": str(tmp_path)}}
        doors[estimate] = build(config).blocks.source[1]
    assert doors["zero"].python is replayed_sums.py_func
    assert doors["known"].python is replayed_rows.py_func


def small_network(n_data: int = 40, n_features: int = 6, n_hidden: int = 4, n_classes: int = 3):
    """A hand-written BNN (sgmcmc/targets/bnn.py) and examples/bnn_jax.py's functions on the same random data, with a
    position PyTree of the same shapes."""
    rng = np.random.default_rng(3)
    features, labels = rng.random((n_data, n_features)), rng.integers(0, n_classes, n_data)
    by_hand = BayesianNeuralNetwork(features, labels, features[:5], labels[:5], n_hidden=n_hidden, batch_size=10,
                                    n_classes=n_classes, gibbs_every=0)
    example = load_model_class(f"{BNN_EXAMPLE}:BayesianNeuralNetwork")

    class Small:  # the example's functions, its data and position made small (the example loads MNIST)
        loglikelihood_fn = staticmethod(example.loglikelihood_fn)
        logprior_fn = staticmethod(example.logprior_fn)
        data = (features, labels)
        initial_position = (np.zeros((n_features, n_hidden)), np.zeros(n_hidden), np.zeros((n_hidden, n_classes)),
                            np.zeros(n_classes))

    return by_hand, user_target(Small())


BNN_EXAMPLE = "examples/bnn_jax.py"


def test_the_bnn_in_jax_gives_the_hand_written_gradients():
    """examples/bnn_jax.py's network (W1, b1, W2, b2, flattened in that order as bnn.py packs θ) gives bnn.py's
    hand-written backward pass: per-example gradients, their sums, the full-data ∇U with λ = 1, to 1e-10."""
    by_hand, by_jax = small_network()
    theta = np.random.default_rng(4).standard_normal((3, by_hand.dim))
    index = np.random.default_rng(5).integers(0, by_hand.n_data, (3, 10))
    assert by_jax.dim == by_hand.dim
    rows = by_hand.log_likelihood_gradients(theta, index)
    assert np.allclose(by_jax.log_likelihood_gradients(theta, index), rows, rtol=0, atol=1e-10)
    assert np.allclose(by_jax.model.grad_log_likelihood_sums(theta, index, False)[0], rows.sum(axis=1), rtol=0,
                       atol=1e-10)
    assert np.allclose(by_jax.gradient(theta), by_hand.gradient(theta), rtol=0, atol=1e-10)
    assert np.allclose(by_jax.potential(theta), by_hand.potential(theta), rtol=0, atol=1e-10)
