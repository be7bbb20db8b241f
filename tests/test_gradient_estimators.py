"""The gradient estimators (sgmcmc/gradient_estimators.py): each is unbiased against the full-data gradient (a
z-test over many independent minibatch draws), the control-variate estimate equals Baker et al. (2019) Eq. 5
written out by hand, its noise shrinks like ‖θ − θ̂‖² as θ approaches the centring value, the centre is the
posterior mode (Normal-Gamma's closed form), SVRG renews its centres on schedule, samplers run with them sample
the exact posterior (and a biased estimator fails the same check), and bad settings are one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.special import expit

from sgmcmc.config import ConfigError
from sgmcmc.experiment import build, run_experiment
from sgmcmc.gradient_estimators import ControlVariates, EstimatorError, SVRG, make_estimator
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from sgmcmc.targets.logistic_regression import LogisticRegression

ROOT = Path(__file__).resolve().parents[1]
ESTIMATORS = ("minibatch", "control_variates", "svrg")


def normal_gamma(batch_size=10):
    return make_target("normal_gamma", n_data=100, batch_size=batch_size, data_seed=0, initial_position=[0.0, 1.0])


def logistic(n_data=400, dim=3, batch_size=20, seed=0):
    """Data drawn from a known logistic model (features N(0, 1), weights (1, −0.5, 0.25, …))."""
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((n_data, dim))
    weights = np.array([1.0, -0.5, 0.25, 0.1, -0.2][:dim])
    labels = np.where(rng.random(n_data) < expit(features @ weights), 1.0, -1.0)
    return LogisticRegression(features, labels, batch_size=batch_size)


def hand_logistic_gradients(target, theta, index):
    """g_i = σ(−y_i θᵀx_i) y_i x_i written out again, for one chain's θ (d,) and indices (b,): (b, d)."""
    signed = target.labels[index, None] * target.features[index]
    return (1.0 / (1.0 + np.exp(signed @ theta)))[:, None] * signed


# ------------------------------------------------------------------------------------------------ unbiasedness
@pytest.mark.parametrize("name", ESTIMATORS)
@pytest.mark.parametrize("make", [normal_gamma, logistic], ids=["normal_gamma", "logistic"])
def test_every_estimator_is_unbiased(name, make):
    """20,000 independent minibatch draws at one θ (20,000 chains at the same point, after the centres are set
    elsewhere): every coordinate's mean is within 4.5 standard errors of the exact ∇U(θ)."""
    target = make()
    estimator = make_estimator(name, target, seed=3)
    draws = 20_000
    point = np.asarray(target.initial_position(1, np.random.default_rng(5)))[0] + 0.3
    if name == "svrg":  # the chains' own centres, away from the point where the gradient is taken
        estimator.minibatch_gradient(np.tile(point - 0.2, (draws, 1)), np.random.default_rng(6))
    theta = np.tile(point, (draws, 1))
    gradients = estimator.minibatch_gradient(theta, np.random.default_rng(7))[0]
    exact = target.gradient(point[None])[0]
    z = (gradients.mean(axis=0) - exact) / (gradients.std(axis=0, ddof=1) / np.sqrt(draws))
    assert np.all(np.abs(z) < 4.5), z
    assert np.all(gradients.std(axis=0) > 0)  # a real estimate with noise, not the exact gradient


class WithoutMeanTerm(ControlVariates):
    """A deliberately wrong estimator: the full-data gradient at the centre left out of h_i (its numpy minibatch
    gradient), and the ḡ(θ̂) it hands the engine's blocks 0 (their control variates without that term)."""

    def log_likelihood_gradients(self, theta, index):
        return super().log_likelihood_gradients(theta, index) - self.centre_mean[:, None, :]

    def engine_functions(self):
        functions = super().engine_functions()
        return {**functions, "centre_mean": np.zeros_like(functions["centre_mean"])}


def test_the_z_test_catches_an_estimator_without_its_full_gradient_term():
    target = logistic()
    estimator = WithoutMeanTerm(target, seed=3)
    point = np.full((20_000, target.dim), 0.3)
    gradients = estimator.minibatch_gradient(point, np.random.default_rng(7))[0]
    exact = target.gradient(point[:1])[0]
    z = (gradients.mean(axis=0) - exact) / (gradients.std(axis=0, ddof=1) / np.sqrt(point.shape[0]))
    assert np.max(np.abs(z)) > 4.5


# ---------------------------------------------------------------------------------------------- the formulas
def test_control_variates_equal_baker_et_al_eq_5_by_hand():
    """∇Ũ_cv(θ) = ∇U(θ̂) − (N/n) Σ_{i∈S}(g_i(θ) − g_i(θ̂)) − ∇log p(θ) + ∇log p(θ̂), with the same minibatch."""
    target = logistic()
    estimator = make_estimator("control_variates", target, seed=0)
    theta = np.random.default_rng(1).normal(size=(4, target.dim))
    gradient = estimator.minibatch_gradient(theta, np.random.default_rng(2))[0]
    index = target.minibatch(np.random.default_rng(2), 4)  # the same draw
    centre = estimator.centre[0]
    full_at_centre = -sum(hand_logistic_gradients(target, centre, np.arange(target.n_data))) + centre
    scale = target.n_data / target.batch_size
    for chain in range(4):
        difference = (hand_logistic_gradients(target, theta[chain], index[chain])
                      - hand_logistic_gradients(target, centre, index[chain])).sum(axis=0)
        expected = full_at_centre - scale * difference + theta[chain] - centre
        np.testing.assert_allclose(gradient[chain], expected, rtol=1e-10, atol=1e-10)


def test_svrg_renews_each_chain_s_centre_every_update_every_gradients():
    target = logistic()
    estimator = make_estimator("svrg", target, update_every=3)
    rng = np.random.default_rng(0)
    positions = [rng.normal(size=(2, target.dim)) for _ in range(7)]
    for calls, theta in enumerate(positions):
        estimator.minibatch_gradient(theta, rng)
        renewed_at = positions[(calls // 3) * 3]
        np.testing.assert_array_equal(estimator.centre, renewed_at)
        mean = np.stack([hand_logistic_gradients(target, row, np.arange(target.n_data)).mean(axis=0) for row in renewed_at])
        np.testing.assert_allclose(estimator.centre_mean, mean, rtol=1e-10, atol=1e-12)
    # 7 minibatch gradients (2n each) and 3 renewals (N each) per chain
    assert estimator.cost()["gradient_evaluations_per_chain"] == 7 * 2 * target.batch_size + 3 * target.n_data
    assert make_estimator("svrg", target).update_every == int(np.ceil(target.n_data / target.batch_size))


def test_the_centre_is_the_posterior_mode():
    """Normal-Gamma's posterior ∝ γ^{α_N − 1/2} exp(−γ(β_N + κ_N(µ − µ_N)²/2)) has its mode at
    (µ_N, (α_N − 1/2)/β_N): L-BFGS finds it to 1e-6, Baker et al.'s SGD to the scale of its step's noise."""
    target = normal_gamma()
    post = target.posterior_parameters()
    mode = np.array([post["mu_N"], (post["alpha_N"] - 0.5) / post["beta_N"]])
    lbfgs = make_estimator("control_variates", target, seed=0)
    np.testing.assert_allclose(lbfgs.centre[0], mode, atol=1e-6)
    sgd = make_estimator("control_variates", target, seed=0, optimiser="sgd", centre_steps=5000, centre_step_size=1e-3)
    np.testing.assert_allclose(sgd.centre[0], mode, atol=0.03)
    assert sgd.cost()["centring_gradient_evaluations"] == 5000 * target.batch_size + target.n_data


# ------------------------------------------------------------------------------------------ the noise shrinks
def test_control_variate_noise_shrinks_as_theta_approaches_the_centre():
    """The empirical variance of 4,000 draws at θ̂ + s·u falls like s² (by ~100 per decade of s), while the plain
    minibatch's stays put; DataTarget's exact noise covariance of the h_i agrees with the draws."""
    target = logistic(n_data=2000, batch_size=50)
    estimator = make_estimator("control_variates", target, seed=0)
    direction = np.array([1.0, -1.0, 0.5]) / 1.5
    variance, plain = {}, {}
    for distance in (1.0, 0.1, 0.01):
        theta = np.tile(estimator.centre[0] + distance * direction, (4000, 1))
        variance[distance] = estimator.minibatch_gradient(theta, np.random.default_rng(1))[0].var(axis=0).sum()
        plain[distance] = target.minibatch_gradient(theta, np.random.default_rng(1))[0].var(axis=0).sum()
        exact = np.trace(estimator.noise_covariance(theta[:1])[0])
        assert abs(variance[distance] / exact - 1) < 0.1, (distance, variance[distance], exact)
    for near, far in ((0.1, 1.0), (0.01, 0.1)):
        assert 50 < variance[far] / variance[near] < 200, variance
        assert 0.5 < plain[far] / plain[near] < 2, plain
    assert variance[0.01] < 1e-3 * plain[0.01]
    at_centre = estimator.minibatch_gradient(np.tile(estimator.centre[0], (10, 1)), np.random.default_rng(2))[0]
    np.testing.assert_allclose(at_centre, np.tile(target.gradient(estimator.centre)[0], (10, 1)), atol=1e-8)


# -------------------------------------------------------------------------------------- sampling with them
POSTERIOR_CHAINS, POSTERIOR_STEPS, BURN_IN = 200, 5000, 1000


def posterior_moments(sampler, step_size):
    """Pooled (E µ, E γ, Var µ, Var γ) of a run and the standard errors of the means from the chains' spread."""
    settings = RunOptions(n_steps=POSTERIOR_STEPS, n_chains=POSTERIOR_CHAINS, burn_in=BURN_IN, eval_every=POSTERIOR_STEPS,
                           progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(11))
    assert outcome.status == "completed"
    samples = outcome.samples
    means = samples.mean(axis=1)
    return samples.reshape(-1, 2).mean(axis=0), samples.reshape(-1, 2).var(axis=0), means.std(axis=0) / np.sqrt(len(means))


def exact_moments(target):
    post = target.posterior_parameters()
    alpha, beta, kappa = post["alpha_N"], post["beta_N"], post["kappa_N"]
    mean = np.array([post["mu_N"], alpha / beta])
    variance = np.array([beta / (kappa * (alpha - 1)), alpha / beta**2])  # Student-t(2α) scale² β/(ακ); Gamma(α, β)
    return mean, variance


@pytest.mark.validate  # Normal-Gamma's blocks with each estimator compiled for this test (seconds each)
@pytest.mark.parametrize("sampler, params, estimator, step_size", [
    ("sgld", {}, "control_variates", 1e-3),
    ("sgld", {}, "svrg", 1e-3),
    ("sghmc", {"friction": 10.0}, "control_variates", 0.02),
])
def test_samplers_with_an_estimator_sample_the_exact_posterior(sampler, params, estimator, step_size):
    """Normal-Gamma (exact posterior): the means within 4 standard errors (plus the step's O(ε) bias, 0.01 of a
    posterior sd) and the variances within 12%; twice the injected noise doubles them, a biased estimator moves the
    means by many standard errors (next test)."""
    target = normal_gamma()
    run = make_sampler(sampler, make_estimator(estimator, target, seed=0), noise_estimate="zero", **params)
    mean, variance, standard_error = posterior_moments(run, step_size)
    exact_mean, exact_variance = exact_moments(target)
    assert np.all(np.abs(mean - exact_mean) < 4 * standard_error + 0.01 * np.sqrt(exact_variance)), (mean, exact_mean)
    assert np.all(np.abs(variance / exact_variance - 1) < 0.12), (variance, exact_variance)


def test_the_posterior_check_catches_a_biased_estimator():
    target = normal_gamma()
    run = make_sampler("sgld", WithoutMeanTerm(target, seed=0), noise_estimate="zero")
    mean, variance, standard_error = posterior_moments(run, 1e-3)
    exact_mean, exact_variance = exact_moments(target)
    assert np.any(np.abs(mean - exact_mean) > 4 * standard_error + 0.01 * np.sqrt(exact_variance)) or \
        np.any(np.abs(variance / exact_variance - 1) > 0.12)


# ------------------------------------------------------------------------------ runs, resume, config errors
def config(tmp_path, gradient, sampler="sgld", **run):
    return {"seed": 2, "sampler": {"name": sampler, "step_size": 1e-3, "noise_estimate": "known"},
            "target": {"name": "normal_gamma", "n_data": 100, "batch_size": 10, "data_seed": 0,
                       "initial_position": [0.0, 1.0]},
            "schedule": {"name": "constant"}, "gradient": gradient,
            "run": {"n_steps": 60, "n_chains": 3, "burn_in": 10, "thin": 1, "eval_every": 20, "progress": False,
                    "figures": False, "results_dir": str(tmp_path), **run}}


@pytest.mark.parametrize("gradient", [{"name": "control_variates"}, {"name": "svrg", "update_every": 7}])
def test_a_run_records_the_estimator_and_its_cost(gradient, tmp_path):
    folder, status = run_experiment(config(tmp_path, gradient))
    assert status == "completed"
    metrics = json.loads((folder / "metrics.json").read_text())
    cost = metrics["gradient_estimator"]
    assert cost["estimator"] == gradient["name"]
    per_step = 2 * 10
    if gradient["name"] == "svrg":  # 60 gradients, renewals at 0, 7, …, 56: 9 full passes
        assert cost["gradient_evaluations_per_chain"] == 60 * per_step + 9 * 100
    else:
        assert cost["gradient_evaluations_per_chain"] == cost["centring_gradient_evaluations"] + 60 * per_step


@pytest.mark.parametrize("path", ["numpy", "engine"])
def test_a_stopped_svrg_run_resumes_bit_identically(path, tmp_path):
    """Stopped after step 25 (between the renewals at gradients 21 and 28) and resumed from its checkpoint with
    another generator: samples, final state and cost equal an uninterrupted run's. On the numpy steps (Normal-Gamma,
    the known V̂, SGLD's generic recipe step) and on the engine's blocks (logistic regression, whose blocks hand each chain's θ̂, ḡ(θ̂) and count
    back to the estimator, which the checkpoint keeps)."""
    from sgmcmc.checkpoint import Checkpointer, load_latest
    from sgmcmc.engine.blocks import kernel_of
    from sgmcmc.engine.driver import Blocks
    from sgmcmc.evaluation import Evaluator
    from tests.helpers import RequestStopAt

    # the engine's blocks as Python (the compiled block is that source: tests/engine/test_estimators.py)
    settings = RunOptions(n_steps=60, n_chains=3, burn_in=10, eval_every=20, progress=False, backend="python")
    make, noise_estimate, integrator = (normal_gamma, "known", "generic") if path == "numpy" else (logistic, "zero",
                                                                                                   "euler")

    def run(stop_at=float("inf"), folder=None, resume=None, seed=4):
        sampler = make_sampler("sgld", make_estimator("svrg", make(), update_every=7), noise_estimate=noise_estimate,
                               integrator=integrator)
        assert isinstance(kernel_of(sampler, "python"), Blocks) == (path == "engine")
        stop = RequestStopAt(stop_at)
        checkpointer = Checkpointer(folder, "hash", every_steps=5) if folder is not None else None
        outcome = run_chains(sampler, Constant(1e-3), settings, np.random.default_rng(seed), Evaluator(sampler.target),
                             stop_requested=lambda: stop.requested, checkpointer=checkpointer, resume=resume,
                             observers=[stop])
        return outcome, sampler.target.cost()

    whole, whole_cost = run()
    part, _ = run(stop_at=25, folder=tmp_path)
    assert part.status == "interrupted" and part.steps_done == 25
    checkpoint, _ = load_latest(tmp_path, "hash")
    rest, rest_cost = run(resume=checkpoint, seed=999)
    np.testing.assert_array_equal(rest.samples, whole.samples)
    np.testing.assert_array_equal(rest.final_theta, whole.final_theta)
    target = make()
    assert rest_cost == whole_cost == {"estimator": "svrg", "update_every": 7, "gradient_evaluations_per_chain":
                                       60 * 2 * target.batch_size + 9 * target.n_data}


@pytest.mark.parametrize("overrides, message", [
    (["gradient=control_variates"], "error: gradient=control_variates needs a data target with per-example gradients; "
                                    "target 'double_well' has none (use gradient=minibatch)"),
    (["gradient=svrg", "target=gaussian_1d"], "error: gradient=svrg needs a data target"),
    (["gradient=control_variates", "target=normal_gamma", "gradient.optimiser=sgd"],
     "error: gradient.centre_step_size is required with gradient.optimiser=sgd"),
    (["gradient=nope"], "error: gradient='nope' is invalid: allowed values are control_variates, minibatch, svrg"),
    (["gradient=svrg", "target=normal_gamma", "gradient.update_every=0"],
     "error: gradient.update_every=0 is invalid: allowed values are integers >= 1"),
])
def test_bad_estimator_settings_are_one_line_errors(overrides, message, tmp_path):
    runs = tmp_path / "runs"
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), *overrides, "run.n_steps=20", "run.burn_in=0",
                             f"run.results_dir={runs}"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith(message), result.stderr
    assert not runs.exists()


def test_a_config_without_a_gradient_section_is_the_minibatch_one(tmp_path):
    plain = config(tmp_path, {"name": "minibatch"})
    del plain["gradient"]
    built = build(plain)
    assert built.target.name == "normal_gamma" and not isinstance(built.target, (ControlVariates, SVRG))
    with pytest.raises(ConfigError, match="gradient: minibatch takes no settings|gradient.update_every"):
        build(config(tmp_path, {"name": "minibatch", "update_every": 3}))
    with pytest.raises(EstimatorError):
        make_estimator("svrg", make_target("double_well"))


def test_at_the_same_step_the_plain_minibatch_inflates_the_variance_and_control_variates_do_not():
    """SGLD without a noise correction at ε = 10⁻³ on Normal-Gamma: the plain minibatch's gradient noise (V ~ 10³)
    adds ε²V/2 of variance per step and inflates Var µ by about half, the control variates' (‖θ − θ̂‖² smaller) do not
    (the check above, 12%)."""
    target = normal_gamma()
    _, variance, _ = posterior_moments(make_sampler("sgld", target, noise_estimate="zero"), 1e-3)
    _, exact_variance = exact_moments(target)
    assert variance[0] / exact_variance[0] > 1.3, variance / exact_variance


def test_a_run_folder_from_before_the_gradient_group_resumes():
    """A config without ``gradient`` (written before the group existed) has the same hash and no difference from
    today's config with the default minibatch section, so ``run.resume`` accepts its folder."""
    from sgmcmc.checkpoint import config_differences, config_hash
    from sgmcmc.keys import validate_config

    today = validate_config(config(Path("."), {"name": "minibatch"}))
    old = {key: value for key, value in today.items() if key != "gradient"}
    assert config_hash(old) == config_hash(today) and config_differences(today, old) == []
    other = validate_config(config(Path("."), {"name": "svrg"}))
    assert config_hash(other) != config_hash(today) and config_differences(other, old)


def test_svrg_noise_covariance_matches_its_draws_and_the_memory_check_counts_it():
    """The exact covariance of SVRG's estimate at each chain's position (given its centre) against 4,000 draws; the
    memory check knows that svrg with noise_estimate=known forms the d × d V(θ) per chain."""
    from sgmcmc.memory import run_shape
    from sgmcmc.config import RunOptions as Settings

    target = logistic(n_data=2000, batch_size=50)
    estimator = make_estimator("svrg", target, update_every=10**6)
    centres = np.array([[0.3, -0.2, 0.1], [1.0, 0.5, -0.5]])
    estimator.minibatch_gradient(centres, np.random.default_rng(0))  # the renewal: centres at these positions
    theta = centres + np.array([[0.2, 0.1, -0.1], [-0.3, 0.2, 0.1]])
    exact = estimator.noise_covariance(theta)
    centre_means = estimator.centre_mean.copy()
    for chain in range(2):  # 4,000 draws at one chain's θ, every row with that chain's centre (no renewal: 10⁶)
        estimator.centre = np.repeat(centres[chain:chain + 1], 4000, axis=0)
        estimator.centre_mean = np.repeat(centre_means[chain:chain + 1], 4000, axis=0)
        sample = estimator.minibatch_gradient(np.repeat(theta[chain:chain + 1], 4000, axis=0), np.random.default_rng(9))[0]
        assert abs(np.trace(np.cov(sample.T)) / np.trace(exact[chain]) - 1) < 0.1
    sampler = make_sampler("sgld", make_estimator("svrg", target), noise_estimate="known")
    assert run_shape(sampler, Settings(n_steps=10, n_chains=2, burn_in=0)).known_data_noise


def test_sgd_centring_with_one_step_is_its_last_iterate():
    target = normal_gamma()
    one = make_estimator("control_variates", target, optimiser="sgd", centre_steps=1, centre_step_size=1e-4)
    start = target.initial_position(1, np.random.default_rng([0, 0x6376]))
    assert np.all(np.isfinite(one.centre)) and not np.allclose(one.centre, start)
