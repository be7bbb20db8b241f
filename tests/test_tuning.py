"""Tuning before sampling (sgmcmc/tuning.py; issue 34): its curvature against the model's matrix written out here, its
stability bound against the integrators themselves, its noise bound against the minibatch covariance written out with
numpy, the inflation it predicts against SGLD's exact stationary variance (scipy's discrete Lyapunov solver), and a
tuned run against the exact posterior."""

from __future__ import annotations

import json

import arviz
import numpy as np
import pytest
import yaml
from scipy.linalg import solve_discrete_lyapunov

from sgmcmc.config import ConfigError, RunOptions
from sgmcmc.data.synthetic_ratings import draw_ratings, write_ratings_dat
from sgmcmc.experiment import build, run_experiment
from sgmcmc.runner import run_chains
from sgmcmc.schedules import Constant
from sgmcmc.tuning import (START_CHECK_STEPS, TuningError, _Candidate, _power_iteration, checked_at_starts, curvature,
                           hessian, laplace_slopes, noise_inflation, noise_psd_bound, stability_bound, with_margin)

MODELS = "examples/exact_models.py"
# examples/exact_models.py's SmallScaleGaussian, written out again
MEAN = np.array([3.0, -2.0, 0.5])
SDS = np.array([0.002, 0.01, 0.05])
CORRELATION = np.array([[1.0, 0.6, -0.3], [0.6, 1.0, 0.2], [-0.3, 0.2, 1.0]])
COVARIANCE = np.outer(SDS, SDS) * CORRELATION
PRECISION = np.linalg.inv(COVARIANCE)


def config(model: str, sampler: dict, tmp_path, tune="auto", target=None, **run) -> dict:
    settings = dict(n_steps=400, n_chains=8, burn_in=200, progress=False, figures=False, ksd_points=0,
                    results_dir=str(tmp_path / "runs"))
    settings.update(run)
    return {"seed": 0, "tune": tune, "sampler": sampler, "schedule": {"name": "constant"},
            "target": {"name": "custom", "model": f"{MODELS}:{model}", **(target or {})}, "run": settings}


def test_the_hessian_of_a_quadratic_is_its_matrix():
    matrix = np.array([[4.0, 1.0], [1.0, 3.0]])
    assert np.allclose(hessian(lambda theta: (theta - 2.0) @ matrix, np.array([[1.0, -3.0]])), matrix, rtol=1e-7)


@pytest.mark.parametrize("spectrum, top_within, bottom_at_most", [(np.linspace(1.0, 100.0, 300), 0.02, 2.5),
                                                                  (np.geomspace(0.01, 1e4, 300), 0.02, 25.0)])
def test_power_iteration_takes_the_largest_eigenvalue_from_below_and_the_smallest_from_above(spectrum, top_within,
                                                                                            bottom_at_most):
    """Beyond 256 parameters the curvature's extremes come from 30 products each (tuning.curvature): λmax within 2%
    below, λmin above, by at most the factor the docstring quotes, on a diagonal matrix in a random rotation."""
    rotation, _ = np.linalg.qr(np.random.default_rng(3).standard_normal((300, 300)))
    matrix = rotation @ np.diag(spectrum) @ rotation.T
    rng = np.random.default_rng(0)
    top = _power_iteration(lambda v: matrix @ v, rng.standard_normal(300))
    bottom = top - _power_iteration(lambda v: top * v - matrix @ v, rng.standard_normal(300))
    assert (1 - top_within) * spectrum.max() <= top <= spectrum.max() * (1 + 1e-12)
    assert spectrum.min() <= bottom <= bottom_at_most


@pytest.mark.parametrize("sampler", ["sgld", "sghmc"])
def test_the_curvature_is_the_precision_and_the_laplace_factor_its_inverse(sampler, tmp_path):
    """With M = I (SGLD's D, SGHMC's TTᵀ) the extreme eigenvalues are those of the precision, and LLᵀ = Σ."""
    built = build(config("SmallScaleGaussian", {"name": sampler, "step_size": 1e-4}, tmp_path, tune="off",
                         backend="python"))  # no chains run: nothing to compile
    found = curvature(built.target, built.sampler, MEAN[None])
    values = np.linalg.eigvalsh(PRECISION)
    assert found.lambda_min == pytest.approx(values[0], rel=1e-5)
    assert found.lambda_max == pytest.approx(values[-1], rel=1e-5)
    assert np.allclose(found.laplace_factor @ found.laplace_factor.T, COVARIANCE, rtol=1e-4, atol=0)


def test_a_quadratic_s_laplace_slopes_are_one_and_a_quartic_s_flat_mode_drops_its_laplace_approximation(tmp_path):
    """U = ½θᵀAθ has slope exactly 1 one Laplace sd out along each axis; Ma et al.'s correlated 2D (θ₁⁴/10 at its
    mode, H ≈ 10⁻⁶ there) is far from it, so its chains start at the pilots' draws and the tuning completes (it once
    refused: its noise bound read at Laplace draws 800 sds wide was 0)."""
    matrix = np.array([[4.0, 1.0], [1.0, 3.0]])
    factor = np.linalg.cholesky(np.linalg.inv(matrix))
    assert np.allclose(laplace_slopes(lambda theta: theta @ matrix, np.zeros((1, 2)), factor), 1.0, rtol=1e-12)
    settings = dict(n_steps=400, n_chains=4, burn_in=200, progress=False, figures=False, ksd_points=0,
                    results_dir=str(tmp_path / "runs"))
    built = build({"seed": 0, "tune": "auto", "sampler": {"name": "sgrhmc", "step_size": 0.1},
                   "schedule": {"name": "constant"}, "target": {"name": "correlated_2d"}, "run": settings})
    assert built.tuned.values["step_size"] <= built.tuned.bounds["stability"]
    assert curvature(built.target, built.sampler, built.tuned.mode[None]).laplace_factor is None


def test_a_target_with_gibbs_resampled_hyperparameters_is_refused_for_that_reason(tmp_path):
    """BPMF's precisions are Gibbs-resampled every gibbs_every steps: the one line says so and names tune=off (it once
    said the target had no exact gradient)."""
    ratings = tmp_path / "ratings.dat"
    write_ratings_dat(draw_ratings(30, 25, 700, latent_dim=3, seed=5), ratings)
    settings = dict(n_steps=40, n_chains=2, burn_in=20, progress=False, figures=False, ksd_points=0,
                    results_dir=str(tmp_path / "runs"))
    with pytest.raises(ConfigError, match="^tune=auto cannot tune target 'bpmf_movielens': its hyperparameters are "
                                          r"Gibbs-resampled every \d+ steps.*set tune=off and sampler.step_size$"):
        build({"seed": 0, "tune": "auto", "sampler": {"name": "sgld", "step_size": 1e-5},
               "schedule": {"name": "constant"}, "run": settings,
               "target": {"name": "bpmf_movielens", "ratings_file": str(ratings), "latent_dim": 3, "batch_size": 50}})


@pytest.mark.parametrize("sampler, momentum", [({"name": "sgld"}, False),
                                               ({"name": "sghmc", "friction": 1e-3}, True),
                                               ({"name": "baoab", "friction": 1e-3}, True)])
def test_the_stability_bound_is_where_the_integrator_starts_to_diverge(sampler, momentum, tmp_path):
    """At 0.95 of the bound (2/λmax for SGLD's Euler step, 2/√λmax for the splitting and BAOAB steps) 4 chains from the
    mean stay finite for 2,000 steps; at 1.5 of it they diverge (a bound off by a factor 2 fails one or the other)."""
    bound = stability_bound(np.linalg.eigvalsh(PRECISION)[-1], momentum)
    built = build(config("SmallScaleGaussian", {**sampler, "step_size": bound}, tmp_path, tune="off"))
    statuses = []
    for factor in (0.95, 1.5):
        settings = RunOptions(n_steps=2000, n_chains=4, burn_in=1000, progress=False)
        outcome = run_chains(built.sampler, Constant(factor * bound), settings, np.random.default_rng(0),
                             theta0=np.repeat(MEAN[None], 4, axis=0), blocks=built.blocks)
        statuses.append(outcome.status)
    assert statuses == ["completed", "diverged"]


def test_the_noise_bound_is_two_over_the_largest_eigenvalue_of_the_minibatch_covariance(tmp_path):
    """SGLD with the known noise on the conjugate regression: ε_psd = 2/λmax(V), V = N(N − n)/n · S², S² the covariance
    over the rows of g_i = (y_i − x_iᵀθ) x_i (σ = 1), written out here; at three positions, the least of them."""
    built = build(config("ConjugateRegression", {"name": "sgld", "step_size": 1e-6}, tmp_path, tune="off",
                         backend="python"))  # no chains run: nothing to compile
    rows = built.target.model.data
    positions = np.array([[1.0, -0.5, 2.0], [0.0, 0.0, 0.0], [2.0, 1.0, -1.0]])
    bounds = []
    for theta in positions:
        gradients = (rows[:, 3] - rows[:, :3] @ theta)[:, None] * rows[:, :3]
        n, size = rows.shape[0], 32
        covariance = n * (n - size) / size * np.cov(gradients, rowvar=False)
        bounds.append(2.0 / np.linalg.eigvalsh(covariance)[-1])
    assert noise_psd_bound(built.sampler, positions) == pytest.approx(min(bounds), rel=1e-8)


def test_the_predicted_inflation_is_sgld_s_stationary_variance(tmp_path):
    """SGLD with noise_estimate=zero on the small-scale Gaussian whose gradient carries N(0, vI) noise: the stationary
    covariance solves Σ = AΣAᵀ + (2ε + ε²v)I, A = I − εP, so it is (1 + εv/2) times the noiseless one (scipy's discrete
    Lyapunov solver, the truth here). The prediction ε/ε_psd is εv/2; 20,000 chains started at the noiseless
    stationary law, after 40 steps, have that inflation along the stiffest direction (which relaxes in a few steps)."""
    values, vectors = np.linalg.eigh(PRECISION)
    step = 0.2 * 2.0 / values[-1]
    noise = 0.6 / step  # εv/2 = 0.3
    built = build(config("SmallScaleGaussian", {"name": "sgld", "step_size": step, "noise_estimate": "zero"},
                         tmp_path, tune="off", target={"noise_variance": noise}))
    known = built.sampler_with(noise_estimate="known")
    predicted = noise_inflation(step, noise_psd_bound(known, MEAN[None]))
    assert predicted == pytest.approx(step * noise / 2, rel=1e-9)
    transition = np.eye(3) - step * PRECISION
    noiseless = solve_discrete_lyapunov(transition, 2 * step * np.eye(3))
    inflated = solve_discrete_lyapunov(transition, (2 * step + step**2 * noise) * np.eye(3))
    stiff = vectors[:, -1]
    assert stiff @ inflated @ stiff / (stiff @ noiseless @ stiff) == pytest.approx(1 + predicted, rel=1e-9)
    rng = np.random.default_rng(1)
    chains = 20_000
    start = MEAN + rng.standard_normal((chains, 3)) @ np.linalg.cholesky(noiseless).T
    outcome = run_chains(built.sampler, Constant(step), RunOptions(n_steps=40, n_chains=chains, burn_in=39,
                                                                     progress=False),
                         rng, theta0=start, blocks=built.blocks)
    along = (outcome.samples[:, -1] - MEAN) @ stiff
    measured = along.var() / (stiff @ noiseless @ stiff)
    # the variance of a variance estimate from 20,000 draws: sd 1%; the bound would miss a factor 2 in v (1.6 vs 1.3)
    assert measured == pytest.approx(1 + predicted, rel=0.04)


@pytest.mark.parametrize("noise, warned", [(0.6, True), (0.04, False)])
def test_the_minibatch_noise_warning_fires_above_ten_percent(noise, warned, tmp_path):
    """εv/2 = 0.3: metrics.json's warnings name the minibatch noise and the step size that brings it to 5%;
    εv/2 = 0.02: they do not."""
    step = 1e-5
    folder, status = run_experiment(config("SmallScaleGaussian", {"name": "sgld", "step_size": step,
                                                                   "noise_estimate": "zero"},
                                           tmp_path, tune="off", target={"noise_variance": noise / step},
                                           n_steps=100, burn_in=50))
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["final"]["noise_inflation"] == pytest.approx(noise / 2, rel=1e-6)
    found = [w for w in metrics["warnings"] if w["check"] == "minibatch_noise"]
    assert bool(found) == warned
    if warned:
        assert found[0]["remedy"].startswith(f"sampler.step_size={step * 0.05 / (noise / 2):.3g} ")


def test_the_margin_halves_a_winner_next_to_a_divergence():
    winner, doubled = _Candidate(0.1, np.zeros((1, 1)), score=1.0), _Candidate(0.2, np.zeros((1, 1)))
    assert with_margin(winner, [winner, doubled]) == 0.05  # 0.2 diverged (score ∞)
    doubled.score = 2.0
    assert with_margin(winner, [winner, doubled]) == 0.1


def test_the_start_check_halves_a_step_that_the_tail_starts_diverge_at(tmp_path):
    """SGNHT on the banana from 1,000 starts of N(0, 1.5²I) (its Laplace starts; the curvature at x = 4 is 100 times
    the mode's): at 0.45, the step size its pilots chose from the mode were it 4 times larger, some chains blow up. The
    check halves it to a step size at which they all complete their first steps, and at which twice it did not, both
    run again here; far past any stable step it says so in one line naming tune."""
    built = build(config("Banana", {"name": "sgnht", "step_size": 0.1, "diffusion": 0.5}, tmp_path, tune="off"))
    starts = 1.5 * np.random.default_rng(1).standard_normal((1000, 2))
    step_size, halvings, chain_steps = checked_at_starts(built.sampler, built.blocks, 0.45, starts,
                                                         np.random.default_rng(2), "compiled")
    assert 1 <= halvings <= 3 and step_size == 0.45 / 2**halvings and chain_steps == (halvings + 1) * 50 * 1000
    settings = RunOptions(n_steps=START_CHECK_STEPS, n_chains=1000, burn_in=START_CHECK_STEPS - 1, progress=False)
    statuses = [run_chains(built.sampler, Constant(factor * step_size), settings, np.random.default_rng(3),
                           theta0=starts, blocks=built.blocks).status for factor in (1, 2)]
    assert statuses == ["completed", "diverged"]
    with pytest.raises(TuningError, match="^tune=auto: the run's chains diverge from their starts"):
        checked_at_starts(built.sampler, built.blocks, 100.0, starts, np.random.default_rng(2), "compiled")


def moments_hold(theta: np.ndarray, mean: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each coordinate's mean error in ArviZ's MCSEs of the mean, and its sd ratio."""
    mcse = np.asarray(arviz.mcse(arviz.convert_to_dataset(theta), method="mean")["x"].values, dtype=float)
    return np.abs(theta.mean(axis=(0, 1)) - mean) / mcse, theta.std(axis=(0, 1)) / sd


def test_a_tuned_run_samples_the_small_scale_gaussian_and_says_what_it_chose(tmp_path, caplog):
    """SGHMC tuned on the small-scale Gaussian (sds 0.002 to 0.05, mean far from 0; the default step 0.1 diverges):
    every mean within 4 MCSE and every sd within 10% from its Laplace starts; the chosen values in config.yaml, on the terminal and, with
    the cost, in metrics.json. Then the same run untuned at 10 times the chosen step size warns."""
    folder, status = run_experiment(config("SmallScaleGaussian", {"name": "sghmc", "step_size": 0.1}, tmp_path,
                                           n_chains=64, n_steps=1500, burn_in=500))
    assert status == "completed"
    metrics = json.loads((folder / "metrics.json").read_text())
    chose = metrics["tuning"]["chose"]
    written = yaml.safe_load((folder / "config.yaml").read_text())["sampler"]
    assert written["step_size"] == chose["step_size"] and written["friction"] == chose["friction"]
    assert chose["step_size"] < 0.9 * stability_bound(np.linalg.eigvalsh(PRECISION)[-1], True)
    assert set(metrics["tuning"]["cost"]) == {"seconds", "pilot_chain_steps", "exact_gradient_calls"}
    assert any(f"sampler.step_size={chose['step_size']:.4g}" in record.getMessage() for record in caplog.records)
    errors, ratios = moments_hold(np.load(folder / "samples.npz")["theta"], MEAN, SDS)
    assert np.all(errors < 4) and np.all(np.abs(ratios - 1) < 0.1), (errors, ratios)
    # the slowest direction (sd 0.05) needs about √κ ≈ 37 times the stiffest's steps: R-hat may say the chains are
    # short for it, nothing else may be said
    assert {warning["check"] for warning in metrics["warnings"]} <= {"rhat", "ess"}
    wrong = {"name": "sghmc", "step_size": 10 * chose["step_size"], "friction": chose["friction"]}
    folder, status = run_experiment(config("SmallScaleGaussian", wrong, tmp_path, tune="off", n_chains=64,
                                           n_steps=1500, burn_in=500))
    metrics = json.loads((folder / "metrics.json").read_text())
    assert status == "diverged" or metrics["warnings"], metrics


def test_a_tuned_run_is_resumed_with_the_values_it_chose(tmp_path, monkeypatch):
    """``run.resume`` with the command that started a tuned run (the config's own step size, tune=auto) takes the chosen
    values from the run's config.yaml instead of tuning again: the configs then agree, and what stops the resume is
    only that this run has completed."""
    first = config("Banana", {"name": "sgld", "step_size": 0.02}, tmp_path, n_steps=60, burn_in=30)
    folder, status = run_experiment(first)
    assert status == "completed"
    again = config("Banana", {"name": "sgld", "step_size": 0.02}, tmp_path, n_steps=60, burn_in=30,
                   resume=str(folder))

    def tuned_again(*args, **kwargs):
        raise AssertionError("a resume tuned again")

    monkeypatch.setattr("sgmcmc.experiment.tune", tuned_again)
    with pytest.raises(ConfigError, match=r"^run\.resume: .* has already ended \(status completed\)"):
        run_experiment(again)
