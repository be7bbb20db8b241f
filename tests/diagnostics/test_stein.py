"""The IMQ kernel Stein discrepancy (sgmcmc.diagnostics.stein; Gorham & Mackey 2017):

- against a hand-written double loop over the pairs with the kernel's derivatives written out one coordinate at a time
  (Liu, Lee & Jordan 2016 Theorem 3.6's four terms), the derivatives themselves against finite differences;
- the Stein identity E_p k0(X, y) = 0 by quadrature (N(0, 1));
- exact draws of N(0, Σ) in 2D: E[n·KSD²] = E_p k0(X, X) = tr Σ⁻¹ + d (c = 1, β = −1/2), the O(n^(−1/2)) fall; a
  shifted or wrongly scaled sample is clearly larger;
- SGLD on a Gaussian: the KSD falls with the step size, and doubling the injected noise variance is exposed;
- the run: trace.csv's ksd column and final.ksd on a toy target, final.ksd with its cost on a data target, none for an
  optimiser or LDA, and a stopped and resumed run with the KSD on equals the uninterrupted one.
"""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest
from scipy import integrate, stats

from sgmcmc.diagnostics.stein import (DATA_TARGET_MAX_POINTS, evenly_spaced_samples, final_ksd_metrics, imq_ksd,
                                      imq_stein_kernel, imq_stein_kernel_diagonal, target_ksd)
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target
from tests.deliberate_bugs import double_the_injected_noise

# ------------------------------------------------------------------------------ the independent reference


def imq(x, y, c, beta):
    return (c * c + sum((x[l] - y[l]) ** 2 for l in range(len(x)))) ** beta


def imq_dx(x, y, c, beta, j):
    """∂k/∂x_j = 2β (x_j − y_j) s^(β−1)."""
    s = c * c + sum((x[l] - y[l]) ** 2 for l in range(len(x)))
    return 2 * beta * (x[j] - y[j]) * s ** (beta - 1)


def imq_dy(x, y, c, beta, j):
    """∂k/∂y_j = −2β (x_j − y_j) s^(β−1)."""
    s = c * c + sum((x[l] - y[l]) ** 2 for l in range(len(x)))
    return -2 * beta * (x[j] - y[j]) * s ** (beta - 1)


def imq_dxdy(x, y, c, beta, j):
    """∂²k/∂x_j∂y_j = −2β s^(β−1) − 4β(β−1)(x_j − y_j)² s^(β−2)."""
    s = c * c + sum((x[l] - y[l]) ** 2 for l in range(len(x)))
    return -2 * beta * s ** (beta - 1) - 4 * beta * (beta - 1) * (x[j] - y[j]) ** 2 * s ** (beta - 2)


def reference_ksd(x, b, c=1.0, beta=-0.5, weights=None):
    """sqrt(Σ_ik w_i w_k Σ_j [b_j(x)b_j(y)k + b_j(x)∂_{y_j}k + b_j(y)∂_{x_j}k + ∂_{x_j}∂_{y_j}k]), a plain loop."""
    n, d = x.shape
    w = np.full(n, 1.0 / n) if weights is None else np.asarray(weights) / np.sum(weights)
    total = 0.0
    for i in range(n):
        for k in range(n):
            k0 = 0.0
            for j in range(d):
                k0 += (b[i, j] * b[k, j] * imq(x[i], x[k], c, beta) + b[i, j] * imq_dy(x[i], x[k], c, beta, j)
                       + b[k, j] * imq_dx(x[i], x[k], c, beta, j) + imq_dxdy(x[i], x[k], c, beta, j))
            total += w[i] * w[k] * k0
    return np.sqrt(total)


@pytest.mark.parametrize("c, beta", [(1.0, -0.5), (0.7, -0.3)])
def test_reference_derivatives_match_finite_differences(c, beta):
    rng = np.random.default_rng(0)
    h = 1e-5
    for _ in range(5):
        x, y = rng.standard_normal(3), rng.standard_normal(3)
        for j in range(3):
            e = np.eye(3)[j] * h
            assert imq_dx(x, y, c, beta, j) == pytest.approx((imq(x + e, y, c, beta) - imq(x - e, y, c, beta)) / (2 * h),
                                                             rel=1e-6, abs=1e-9)
            assert imq_dy(x, y, c, beta, j) == pytest.approx((imq(x, y + e, c, beta) - imq(x, y - e, c, beta)) / (2 * h),
                                                             rel=1e-6, abs=1e-9)
            mixed = (imq(x + e, y + e, c, beta) - imq(x + e, y - e, c, beta) - imq(x - e, y + e, c, beta)
                     + imq(x - e, y - e, c, beta)) / (4 * h * h)
            assert imq_dxdy(x, y, c, beta, j) == pytest.approx(mixed, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("d", [1, 3])
@pytest.mark.parametrize("c, beta", [(1.0, -0.5), (0.7, -0.3)])
def test_imq_ksd_equals_the_double_loop(d, c, beta):
    rng = np.random.default_rng(d)
    x = rng.standard_normal((7, d)) * 1.5 + 0.3
    b = rng.standard_normal((7, d)) * 2.0  # any scores: the formula does not assume a target
    assert imq_ksd(x, b, c, beta) == pytest.approx(reference_ksd(x, b, c, beta), rel=1e-10)
    weights = rng.random(7)
    assert imq_ksd(x, b, c, beta, weights=weights) == pytest.approx(reference_ksd(x, b, c, beta, weights), rel=1e-10)
    # the (m × n) matrix form, and the diagonal formula
    uniform = np.full(7, 1 / 7)
    assert np.sqrt(uniform @ imq_stein_kernel(x, b, x, b, c, beta) @ uniform) == pytest.approx(
        reference_ksd(x, b, c, beta), rel=1e-10)
    np.testing.assert_allclose(imq_stein_kernel_diagonal(b, c, beta), np.diag(imq_stein_kernel(x, b, x, b, c, beta)),
                               rtol=1e-10)


def test_stein_identity_by_quadrature():
    """E_p k0(X, y) = 0 for p = N(0, 1) (score −x), whatever y: the defining property of a Stein kernel."""
    for y in (-1.5, 0.0, 0.4, 2.0):
        def integrand(x):
            return imq_stein_kernel(np.array([[x]]), np.array([[-x]]), np.array([[y]]), np.array([[-y]]))[0, 0] \
                * stats.norm.pdf(x)

        value, error = integrate.quad(integrand, -12, 12, epsabs=1e-12, limit=200)
        scale = integrate.quad(lambda x: abs(integrand(x)), -12, 12, limit=200)[0]
        assert abs(value) < 1e-9 * max(scale, 1.0), (y, value, scale)


@pytest.mark.parametrize("bad", [
    dict(samples=np.zeros((3, 2)), scores=np.zeros((3, 1))),
    dict(samples=np.zeros(3), scores=np.zeros(3)),
    dict(samples=np.array([[np.nan]]), scores=np.zeros((1, 1))),
    dict(samples=np.zeros((2, 1)), scores=np.zeros((2, 1)), weights=[1.0, -1.0]),
    dict(samples=np.zeros((2, 1)), scores=np.zeros((2, 1)), beta=0.5),
])
def test_bad_input_is_a_one_line_value_error(bad):
    with pytest.raises(ValueError) as error:
        imq_ksd(**bad)
    assert "\n" not in str(error.value)


# ------------------------------------------------------------------------------ exact draws

COVARIANCE = np.array([[1.0, 0.5], [0.5, 2.0]])
PRECISION = np.linalg.inv(COVARIANCE)
# E_p k0(X, X) = E‖Σ⁻¹X‖² + d = tr Σ⁻¹ + d for c = 1, β = −1/2 (k0(x, x) = ‖b(x)‖² + d)
EXPECTED_DIAGONAL = np.trace(PRECISION) + 2


def _exact_draws(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 2)) @ np.linalg.cholesky(COVARIANCE).T


def test_exact_draws_have_the_expected_ksd_and_a_shift_or_a_wrong_scale_is_larger():
    # for n independent exact draws E[KSD²] = E_p k0(X, X)/n (the pairs i ≠ j have mean 0): at n = 250 and 1000 the
    # mean over 12 seeds of n·KSD²/E_p k0(X, X) is 1 within 3 standard errors
    for n in (250, 1000):
        ratios = np.array([n * imq_ksd(x, -x @ PRECISION) ** 2 / EXPECTED_DIAGONAL
                           for x in (_exact_draws(n, seed) for seed in range(12))])
        assert abs(ratios.mean() - 1.0) < 3 * ratios.std(ddof=1) / np.sqrt(ratios.size), (n, ratios)
    # the O(n^(−1/2)) level sqrt(E k0(X, X)/n) bounds the exact samples' KSD (twice over) and is clearly exceeded by a
    # shift of 0.3 (0.3 and 0.2 standard deviations) and by the scale 1.3, seed by seed (paired draws)
    n = 1000
    level = np.sqrt(EXPECTED_DIAGONAL / n)
    for seed in range(6):
        x = _exact_draws(n, seed)
        shifted, scaled = x + 0.3, 1.3 * x
        exact_ksd = imq_ksd(x, -x @ PRECISION)
        assert exact_ksd < 2 * level
        assert imq_ksd(shifted, -shifted @ PRECISION) > 2 * level
        assert imq_ksd(scaled, -scaled @ PRECISION) > 2 * level


# ------------------------------------------------------------------------------ SGLD on a Gaussian

# N(0, 1) with gradient noise V = 1 (noise_estimate known: the injected N(0, ε(2 − εV)) brings the total to 2ε). SGLD's
# stationary variance there is 1/(1 − ε/2): 1.67, 1.25, 1.11 at ε = 0.8, 0.4, 0.2. 2,000 chains, the last of 60 steps
# kept: 2,000 independent points per run.
STEP_SIZES = (0.8, 0.4, 0.2)
SEEDS = range(5)
CHAINS = 2000


def _gaussian():
    return make_target("gaussian_1d", noise_variance=1.0)


def _last_step_ksd(sampler, step_size, seed):
    settings = RunOptions(n_steps=60, n_chains=CHAINS, burn_in=40, thin=20, eval_every=60, progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(seed))
    assert outcome.status == "completed" and outcome.samples.shape == (CHAINS, 1, 1)
    return target_ksd(sampler.target, outcome.samples, CHAINS).value


def _mean_and_se(values):
    values = np.asarray(values)
    return values.mean(), values.std(ddof=1) / np.sqrt(values.size)


def test_ksd_falls_with_sgld_step_size():
    sampler = make_sampler("sgld", _gaussian(), noise_estimate="known")
    summaries = [_mean_and_se([_last_step_ksd(sampler, step, seed) for seed in SEEDS]) for step in STEP_SIZES]
    for (larger, larger_se), (smaller, smaller_se) in zip(summaries, summaries[1:]):
        assert larger - smaller > 2 * np.hypot(larger_se, smaller_se), summaries


def test_ksd_exposes_a_doubled_noise_variance(monkeypatch):
    """SGLD's KSD at ε = 0.2, then with every block's injected normals times √2 (the engine's deliberate bug)."""
    step = 0.2
    sampler = make_sampler("sgld", _gaussian())
    correct = _mean_and_se([_last_step_ksd(sampler, step, seed) for seed in SEEDS])
    double_the_injected_noise(monkeypatch)
    doubled = _mean_and_se([_last_step_ksd(sampler, step, seed) for seed in SEEDS])
    assert doubled[0] - correct[0] > 2 * np.hypot(correct[1], doubled[1]), (correct, doubled)


# ------------------------------------------------------------------------------ the subsample and the target helper


def test_evenly_spaced_samples_take_the_chains_in_turn_evenly_in_time():
    chains, kept = 6, 10
    samples = np.arange(chains * kept, dtype=float).reshape(chains, kept, 1)  # value = chain·kept + step
    chosen = evenly_spaced_samples(samples, 4)[:, 0].astype(int)
    np.testing.assert_array_equal(chosen // kept, [0, 1, 3, 4])  # different chains, spread over all 6: ⌊j·6/4⌋
    np.testing.assert_array_equal(chosen % kept, [0, 2, 5, 7])  # ⌊j·10/4⌋
    assert evenly_spaced_samples(samples, 100).shape == (60, 1)  # all of them
    one_chain = evenly_spaced_samples(np.arange(10.0)[:, None], 5)[:, 0]
    np.testing.assert_array_equal(one_chain, [0, 2, 4, 6, 8])


def test_target_ksd_is_none_without_an_exact_gradient_or_two_samples():
    target = _gaussian()
    assert target_ksd(target, np.zeros((1, 1, 1)), 100) is None
    assert target_ksd(target, np.zeros((3, 0, 1)), 100) is None
    assert target_ksd(target, np.array([[[np.inf]], [[0.0]]]), 100) is None

    class NoGradient:
        has_exact_gradient = False
        gibbs_every = 0
        n_data = None

    assert target_ksd(NoGradient(), np.zeros((3, 4, 1)), 100) is None
    result = target_ksd(target, np.random.default_rng(0).standard_normal((3, 4, 1)), 100)
    assert result.points == result.gradient_evaluations == 12 and result.seconds >= 0


# ------------------------------------------------------------------------------ in the run


def _compose(tmp_path, *overrides):
    from experiments.common import compose

    return compose([*overrides, f"run.results_dir={tmp_path}", "run.progress=false", "run.figures=false"])


def _read(folder):
    with open(folder / "trace.csv") as handle:
        rows = list(csv.DictReader(handle))
    return rows, json.loads((folder / "metrics.json").read_text())


def test_a_toy_run_writes_the_ksd_column_and_final_ksd(tmp_path):
    from sgmcmc.experiment import run_experiment

    config = _compose(tmp_path, "target=gaussian_1d", "sampler=sgld", "run.n_steps=60", "run.burn_in=20",
                      "run.n_chains=20", "run.eval_every=20", "run.ksd_points=1000")
    folder, status = run_experiment(config)
    rows, metrics = _read(folder)
    assert status == "completed"
    assert [row["ksd"] for row in rows][0] == ""  # step 20: still in burn-in, no samples
    ksd = [float(row["ksd"]) for row in rows[1:]]
    assert len(ksd) == 2 and all(value > 0 for value in ksd)
    samples = np.load(folder / "samples.npz")["theta"]  # 20 x 40 = 800 <= 1000: all of them
    target = _gaussian()
    expected = imq_ksd(samples.reshape(-1, 1), -target.gradient(samples.reshape(-1, 1)))
    final = metrics["final"]
    assert final["ksd"] == pytest.approx(expected, rel=1e-12) and ksd[-1] == pytest.approx(expected, rel=1e-12)
    assert final["ksd_points"] == final["ksd_gradient_evaluations"] == 800


@pytest.mark.validate  # a logistic-regression run on MNIST (14 s): the long tier
def test_a_data_run_writes_final_ksd_with_its_cost_and_no_column(tmp_path):
    from sgmcmc.experiment import run_experiment

    config = _compose(tmp_path, "target=normal_gamma", "sampler=sgld", "run.n_steps=200", "run.burn_in=100",
                      "run.thin=1", "run.n_chains=4", "run.eval_every=100", "run.ksd_points=1000")
    folder, status = run_experiment(config)
    rows, metrics = _read(folder)
    assert status == "completed" and rows and "ksd" not in rows[0]
    final = metrics["final"]
    assert final["ksd_points"] == final["ksd_gradient_evaluations"] == DATA_TARGET_MAX_POINTS
    assert final["ksd"] > 0 and final["ksd_seconds"] >= 0


def test_an_optimiser_run_and_ksd_off_write_no_ksd(tmp_path):
    from sgmcmc.experiment import run_experiment

    for overrides in (["sampler=sgd", "run.ksd_points=1000"], ["sampler=sgld", "run.ksd_points=0"]):
        config = _compose(tmp_path, "target=gaussian_1d", *overrides, "run.n_steps=40", "run.burn_in=10",
                          "run.n_chains=5", "run.eval_every=10")
        folder, status = run_experiment(config)
        rows, metrics = _read(folder)
        assert status == "completed" and "ksd" not in rows[-1] and "ksd" not in metrics["final"], overrides


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_lda_gets_no_ksd():
    from tests.targets.test_lda import _target as tiny_lda

    target = tiny_lda()
    assert not target.has_exact_gradient
    sampler = make_sampler("sgrld", target, noise_estimate="zero")
    # the engine's Python path: nothing to compile for the small corpus's d = 54
    settings = RunOptions(n_steps=6, n_chains=1, burn_in=2, eval_every=3, progress=False, backend="python")
    outcome = run_chains(sampler, Constant(0.01), settings, np.random.default_rng(0), ksd_points=100)
    assert outcome.status == "completed" and outcome.samples.shape[1] == 4
    assert all("ksd" not in row for row in outcome.trace)
    assert final_ksd_metrics(target, outcome.samples, 100) == {}


def test_a_stopped_and_resumed_run_has_the_same_ksd_trace(tmp_path):
    from sgmcmc.checkpoint import Checkpointer, load_latest
    from tests.helpers import RequestStopAt

    settings = RunOptions(n_steps=60, n_chains=5, burn_in=15, thin=2, eval_every=10, progress=False)

    def run(folder=None, stop_at=float("inf"), resume=None):
        sampler = make_sampler("sgld", make_target("double_well"))
        stop = RequestStopAt(stop_at)
        checkpointer = Checkpointer(folder, "hash", every_steps=5) if folder is not None else None
        return run_chains(sampler, Constant(0.05), settings, np.random.default_rng(3), stop_requested=lambda: stop.requested,
                          checkpointer=checkpointer, resume=resume, observers=[stop], ksd_points=12)

    whole = run()
    assert sum("ksd" in row for row in whole.trace) == 3  # the rows of W1 with kept samples: 20, 40 and 60
    stopped = run(tmp_path, stop_at=33)
    assert stopped.status == "interrupted"
    resumed = run(resume=load_latest(tmp_path, "hash")[0])
    assert resumed.trace == whole.trace


def test_the_kernel_sums_are_centred_so_a_far_away_sample_keeps_its_value():
    """The KSD depends on differences x − y only: a sample shifted by 10⁸ (with its scores) has the same KSD; the
    inner-product form without centring loses ‖x − y‖² to rounding there."""
    points = np.random.default_rng(0).standard_normal((500, 2))
    scores = -points
    assert imq_ksd(points + 1e8, scores) == pytest.approx(imq_ksd(points, scores), rel=1e-6)


def test_with_more_chains_than_points_the_subsample_spans_every_chain():
    samples = np.arange(5000.0).reshape(5000, 1, 1)  # value = chain
    chosen = evenly_spaced_samples(samples, 1000)[:, 0]
    assert chosen.min() == 0 and chosen.max() >= 4995 and np.unique(chosen).size == 1000


def test_target_ksd_is_none_when_the_kernel_sums_overflow():
    """Finite points near overflow (a diverging chain): no NaN in metrics.json, None."""
    samples = np.array([[[1e160]], [[-1e160]], [[0.0]]])
    assert target_ksd(_gaussian(), samples, 100) is None


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_a_target_with_gibbs_updated_hyperparameters_gets_no_ksd(tmp_path):
    """θ's score given the current per-chain precisions is not the score of θ's posterior (and the gradient takes one
    precision per chain): no KSD, in the trace or at the end, and the run completes."""
    from tests.helpers import HierarchicalGaussian

    target = HierarchicalGaussian(shape=3.0, rate=3.0, gibbs_every=10)
    settings = RunOptions(n_steps=200, n_chains=3, burn_in=100, eval_every=50, progress=False)
    outcome = run_chains(make_sampler("sgld", target), Constant(0.05), settings, np.random.default_rng(0),
                         ksd_points=1000)
    assert outcome.status == "completed" and not any("ksd" in row for row in outcome.trace)
    assert final_ksd_metrics(target, outcome.samples, 1000) == {}
