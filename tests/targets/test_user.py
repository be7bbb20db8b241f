"""Your own model (``target=custom``, sgmcmc/targets/user.py; issue 20).

- The example model (examples/breast_cancer_logistic.py) runs from the command line and from Python, and SGHMC's and
  SGLD's posterior means and standard deviations agree with a long hand-written HMC run (Laplace-whitened, with a
  Metropolis test: an independent reference) to tolerances that a factor 2 in the gradient or the noise breaks.
- A density model with exact moments and density gets the moment errors and the KL grid's metrics.
- Bad models (wrong gradient shape, NaN at θ₀, a missing method, a file that does not import, a gradient of the
  wrong sign or scale, a compiled gradient that disagrees) are one line, exit 2, no traceback, no folder.
- A model whose methods are callables keeps the engine's compiled blocks.
"""

import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit

from sgmcmc.config import ConfigError
from sgmcmc.engine.driver import PYTHON
from sgmcmc.experiment import build, run_experiment
from sgmcmc.geometry import RationalMetric
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets.user import UserModelError, load_model_class, user_target

# One worker takes the whole module (make's --dist loadgroup), so that its module fixture `reference_posterior` is built
# once a run: HMC on the full data, 3 s.
pytestmark = pytest.mark.xdist_group("test_user")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = "examples/breast_cancer_logistic.py:BreastCancerLogistic"
THREADS = {key: "1" for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}


def example_model(**options):
    return load_model_class(str(ROOT / EXAMPLE))(**options)


def config(target: dict, sampler: dict, tmp_path, **run) -> dict:
    settings = dict(n_steps=200, n_chains=4, burn_in=100, thin=1, eval_every=100, progress=False, figures=False,
                    results_dir=str(tmp_path / "runs"))
    settings.update(run)
    return {"seed": 0, "tune": "off", "sampler": sampler, "schedule": {"name": "constant"},
            "target": {"name": "custom", **target}, "run": settings}  # the step sizes given (tuning: test_tuning.py)


# -- the reference posterior: HMC on the full data, whitened by the Laplace approximation -------------------------
@pytest.fixture(scope="module")
def reference_posterior():
    """Posterior mean and sd of the example by HMC written here (not the package's): θ = θ̂ + A z with A Aᵀ the
    inverse Hessian at the mode, 16 chains × 3,000 iterations of 8 leapfrog steps, a Metropolis test each."""
    model = example_model()
    rows, variance = model.signed, model.prior_variance

    def potential(theta):
        return -log_expit(theta @ rows.T).sum(axis=-1) + 0.5 * (theta**2).sum(axis=-1) / variance

    def gradient(theta):
        return -expit(-(theta @ rows.T)) @ rows + theta / variance

    mode = minimize(lambda t: potential(t[None])[0], np.zeros(model.dim), jac=lambda t: gradient(t[None])[0],
                    method="BFGS", options={"gtol": 1e-10}).x
    weights = expit(rows @ mode) * (1 - expit(rows @ mode))
    hessian = (model.features * weights[:, None]).T @ model.features + np.eye(model.dim) / variance
    whitening = np.linalg.cholesky(np.linalg.inv(hessian))
    rng = np.random.default_rng(2)
    z = rng.standard_normal((16, model.dim))
    kept, accepted = [], []
    for iteration in range(3000):
        momentum = rng.standard_normal(z.shape)
        start_energy = potential(mode + z @ whitening.T) + 0.5 * (momentum**2).sum(axis=1)
        step = 0.35 * rng.uniform(0.8, 1.2)
        x, p = z.copy(), momentum - 0.5 * step * gradient(mode + z @ whitening.T) @ whitening
        for leap in range(8):
            x = x + step * p
            g = gradient(mode + x @ whitening.T) @ whitening
            p = p - (step if leap < 7 else 0.5 * step) * g
        accept = np.log(rng.random(z.shape[0])) < start_energy - potential(mode + x @ whitening.T) - 0.5 * (p**2).sum(axis=1)
        z = np.where(accept[:, None], x, z)
        accepted.append(accept.mean())
        if iteration >= 300:
            kept.append(mode + z @ whitening.T)
    draws = np.array(kept)
    assert np.mean(accepted) > 0.8
    mean, sd = draws.mean(axis=(0, 1)), draws.std(axis=(0, 1))
    # the reference's own Monte Carlo error, from the spread of its 16 chains, is far below the tolerances below
    assert np.max(draws.mean(axis=0).std(axis=0) / np.sqrt(16) / sd) < 0.02
    return mean, sd


def assert_posterior(samples: np.ndarray, reference) -> None:
    """Every coordinate's mean within 0.25 posterior sd of the reference and its sd within a factor 1.25 (a factor
    2 in the gradient or in the injected noise moves the sd by a factor √2)."""
    mean, sd = reference
    pooled = samples.reshape(-1, samples.shape[-1])
    assert np.max(np.abs(pooled.mean(axis=0) - mean) / sd) < 0.25
    ratio = pooled.std(axis=0) / sd
    assert 0.8 < ratio.min() and ratio.max() < 1.25, (ratio.min(), ratio.max())


POSTERIOR_RUN = dict(n_steps=40000, n_chains=16, burn_in=10000, thin=10, eval_every=10000)
SAMPLERS = {"sghmc": {"name": "sghmc", "step_size": 0.002, "friction": 1.0, "noise_estimate": "zero"},
            "sgld": {"name": "sgld", "step_size": 0.001, "noise_estimate": "zero"}}


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
@pytest.mark.parametrize("name", sorted(SAMPLERS))
def test_example_posterior_matches_a_long_hmc_run(name, tmp_path, reference_posterior):
    folder, status = run_experiment(config({"model": str(ROOT / EXAMPLE)}, SAMPLERS[name], tmp_path, **POSTERIOR_RUN))
    assert status == "completed"
    assert_posterior(np.load(folder / "samples.npz")["theta"], reference_posterior)
    assert (folder / "model.py").read_text() == (ROOT / "examples/breast_cancer_logistic.py").read_text()


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_the_posterior_check_catches_a_factor_two_in_the_minibatch_gradient(tmp_path, reference_posterior):
    """The same run with the likelihood's gradient doubled (the N/n scale off by 2; the model's gradient check is by
    central differences, so the scale is changed on the target, after the check) fails :func:`assert_posterior`."""
    target = user_target(example_model())
    original = target.log_likelihood_gradients
    target.log_likelihood_gradients = lambda theta, index: 2.0 * original(theta, index)
    sampler = make_sampler("sghmc", target, **{k: v for k, v in SAMPLERS["sghmc"].items() if k not in ("name", "step_size")})
    settings = RunOptions(**{**POSTERIOR_RUN, "n_chains": 8}, progress=False)
    outcome = run_chains(sampler, Constant(0.002), settings, np.random.default_rng(0))
    with pytest.raises(AssertionError):
        assert_posterior(outcome.samples, reference_posterior)


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_example_from_python_without_hydra():
    """The documented Python path: a model object, user_target, make_sampler, run_chains."""
    target = user_target(example_model(prior_variance=4.0), batch_size=64)
    assert (target.dim, target.n_data, target.batch_size) == (31, 569, 64)
    assert target.model.prior_variance == 4.0 and target.parameter_names()[0] == "intercept"
    sampler = make_sampler("sgld", target, noise_estimate="zero")
    outcome = run_chains(sampler, Constant(0.0005), RunOptions(n_steps=300, n_chains=2, burn_in=100, progress=False),
                         np.random.default_rng(0))
    assert outcome.status == "completed" and outcome.samples.shape == (2, 200, 31)


@pytest.mark.validate  # in make validate: make test took 636 s on a cold clone with it (budget 600 s)
def test_example_from_the_command_line(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), "target=custom", f"target.model={EXAMPLE}",
                             "+target.options.prior_variance=2.0", "target.batch_size=50", "sampler=sghmc",
                             "sampler.step_size=0.002", "sampler.noise_estimate=zero", "run.n_chains=4",
                             "run.n_steps=400", "run.burn_in=200", "run.progress=false",
                             f"run.results_dir={tmp_path}"], cwd=ROOT, capture_output=True, text=True,
                            env=dict(os.environ, **THREADS))
    assert result.returncode == 0, result.stderr
    (folder,) = tmp_path.iterdir()
    written = (folder / "config.yaml").read_text()
    assert "prior_variance: 2.0" in written and "batch_size: 50" in written
    assert np.load(folder / "samples.npz")["theta"].shape == (4, 200, 31)
    assert (folder / "model.py").is_file() and (folder / "figures" / "trace.png").is_file()
    names = np.load(folder / "samples.npz")["parameter_names"]
    assert names.shape == (31,) and names[0] == "intercept" and names[-1] == "worst fractal dimension"


# -- density models -------------------------------------------------------------------------------------------------
MEAN = np.array([1.0, -0.5])
COVARIANCE = np.array([[1.0, 0.6], [0.6, 2.0]])
PRECISION = np.linalg.inv(COVARIANCE)


class Gaussian:
    """N(MEAN, COVARIANCE) in the log-density form, with its exact moments."""

    dim = 2

    def log_density(self, theta):
        centred = theta - MEAN
        return -0.5 * np.einsum("ci,ij,cj->c", centred, PRECISION, centred)

    def grad_log_density(self, theta):
        return -(theta - MEAN) @ PRECISION

    def exact_moments(self):
        return MEAN, np.diag(COVARIANCE) + MEAN**2


class GaussianPotential:
    """The same in the potential form, with a normalised density and a KL grid (the full metrics)."""

    dim = 2

    def potential(self, theta):
        return -Gaussian().log_density(theta)

    def grad_potential(self, theta):
        return (theta - MEAN) @ PRECISION

    def exact_log_density(self, theta):
        from scipy.stats import multivariate_normal

        return multivariate_normal(MEAN, COVARIANCE).logpdf(theta).reshape(-1)

    def histogram_edges(self):
        return tuple(np.linspace(m - 5 * np.sqrt(v), m + 5 * np.sqrt(v), 41) for m, v in zip(MEAN, np.diag(COVARIANCE)))

    def reference_samples(self):
        return np.random.default_rng(0).multivariate_normal(MEAN, COVARIANCE, size=200_000)


NOISE_VARIANCE, NOISE_ESTIMATE = 20.0, "known"


def test_density_model_samples_its_gaussian_with_known_gradient_noise(tmp_path):
    """SGLD with v = 20 gradient noise, subtracted (``known``: ε²v is half of the 2ε to inject), on a Gaussian user
    model: the exact moments to within a few Monte Carlo standard errors (with ``noise_estimate=zero`` the variance
    comes out 1.5 times too large, and a doubled injected noise twice), and the moment errors reach metrics.json
    through the model's exact_moments."""
    import json

    folder, status = run_experiment(config({"model": f"{__name__}.Gaussian", "noise_variance": NOISE_VARIANCE},
                                           {"name": "sgld", "step_size": 0.05, "noise_estimate": NOISE_ESTIMATE}, tmp_path,
                                           n_steps=3000, n_chains=400, burn_in=500, thin=5, eval_every=1000))
    assert status == "completed"
    samples = np.load(folder / "samples.npz")["theta"].reshape(-1, 2)
    np.testing.assert_allclose(samples.mean(axis=0), MEAN, atol=0.1)
    np.testing.assert_allclose(np.cov(samples.T), COVARIANCE, atol=0.15 * np.max(COVARIANCE))
    final = json.loads((folder / "metrics.json").read_text())["final"]
    assert final["mean_error"] == pytest.approx(np.max(np.abs(samples.mean(axis=0) - MEAN)), rel=1e-9)
    assert "kl_pq" not in final  # exact moments, no density on a grid


def test_density_model_with_exact_density_gets_the_kl_metrics(tmp_path):
    folder, status = run_experiment(config({"model": f"{__name__}.GaussianPotential"},
                                           {"name": "sghmc", "step_size": 0.1, "noise_estimate": "zero"}, tmp_path,
                                           n_steps=2000, n_chains=200, burn_in=500, eval_every=500, figures=True))
    import json

    final = json.loads((folder / "metrics.json").read_text())["final"]
    assert status == "completed" and 0 <= final["kl_pq"] < 0.05 and final["mean_error"] < 0.15
    assert (folder / "figures" / "contour.png").is_file()


def test_a_user_metric_reaches_the_riemannian_samplers():
    metric = RationalMetric([1.0], [1.0])

    class WithMetric(Gaussian):
        def metric(self):
            return metric

    assert make_sampler("sgrld", user_target(WithMetric())).metric is metric


# -- bad models -----------------------------------------------------------------------------------------------------
class WrongShape(Gaussian):
    def grad_log_density(self, theta):
        return super().grad_log_density(theta)[:, 0]


class NaNAtStart(Gaussian):
    def log_density(self, theta):
        return np.full(theta.shape[0], np.nan)


class WrongSign(Gaussian):
    def grad_log_density(self, theta):
        return -super().grad_log_density(theta)


class Doubled(Gaussian):
    def grad_log_density(self, theta):
        return 2 * super().grad_log_density(theta)


class NoGradient:
    dim = 2

    def log_density(self, theta):
        return -0.5 * np.sum(theta**2, axis=1)


class NoDimension(Gaussian):
    dim = 0


class ThreeNames(Gaussian):
    parameter_names = ["a", "b", "c"]


class Raises(Gaussian):
    def grad_log_density(self, theta):
        raise ZeroDivisionError("oops")


@pytest.mark.parametrize("model, message", [
    (WrongShape, "grad_log_density returned shape (3,) at θ₀; expected (3, 2)"),
    (NaNAtStart, "log_density is not finite at θ₀"),
    (WrongSign, "the gradient of log_density disagrees with its central differences"),
    (Doubled, "the gradient of log_density disagrees with its central differences"),
    (NoGradient, "the model has no grad_log_density (or grad_potential)"),
    (NoDimension, "the model needs dim, a positive integer"),
    (Raises, "grad_log_density raised ZeroDivisionError: oops at θ₀"),
    (ThreeNames, "parameter_names has 3 names for dim = 2"),
])
def test_bad_models_are_refused_with_one_line(model, message):
    with pytest.raises(UserModelError) as error:
        user_target(model(), spec="m.py:M")
    text = str(error.value)
    assert text.startswith("target.model=m.py:M: ") and message in text and "\n" not in text


def test_build_turns_a_bad_model_into_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match=r"^target.model=.*: log_density is not finite at θ₀"):
        build(config({"model": f"{__name__}.NaNAtStart"}, {"name": "sgld", "step_size": 0.01}, tmp_path))


BAD_FILE = """
import numpy as np


class WrongShape:
    dim = 2

    def log_density(self, theta):
        return -0.5 * np.sum(theta**2, axis=1)

    def grad_log_density(self, theta):
        return -theta.sum(axis=1)


class NaNAtStart(WrongShape):
    def grad_log_density(self, theta):
        return np.full(theta.shape, np.nan)


class MissingMethod:
    dim = 2
    n_data = 10

    def grad_log_prior(self, theta):
        return -theta
"""


@pytest.mark.parametrize("model, message", [
    ("bad.py:WrongShape", "grad_log_density returned shape (3,) at θ₀; expected (3, 2)"),
    ("bad.py:NaNAtStart", "grad_log_density is not finite at θ₀"),
    ("bad.py:MissingMethod", "the model has no grad_log_likelihood; a data model (it has n_data) needs it"),
    ("broken.py:Model", "broken.py does not import (SyntaxError"),
    ("bad.py:Absent", "bad.py has no Absent"),
    ("absent.py:Model", "no file absent.py"),
    ("???", "target.model is not set"),
])
def test_bad_models_on_the_command_line(model, message, tmp_path):
    """One line on stderr naming target.model, exit 2, no traceback, no run folder."""
    (tmp_path / "bad.py").write_text(BAD_FILE)
    (tmp_path / "broken.py").write_text("import numpy as np\nclass Model(:\n")
    runs = tmp_path / "runs"
    result = subprocess.run([sys.executable, str(ROOT / "run.py"), "target=custom", f"target.model={model}",
                             f"run.results_dir={runs}"], cwd=tmp_path, capture_output=True, text=True,
                            env=dict(os.environ, **THREADS))
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr + result.stdout
    assert result.stderr.startswith("error: target.model") and message in result.stderr, result.stderr
    assert not runs.exists()


# -- what the review found: models that passed the checks and broke the run, resumes with another file -------------
class FixedChains(Gaussian):
    def initial_position(self, n_chains, rng):
        return np.zeros((3, 2))  # ignores n_chains


class Unnormalised(GaussianPotential):
    def exact_log_density(self, theta):
        return super().exact_log_density(theta) + np.log(2 * np.pi)


class OneEdgeArray(GaussianPotential):
    def histogram_edges(self):
        return np.linspace(-5, 5, 41)


class DecreasingEdges(GaussianPotential):
    def histogram_edges(self):
        return tuple(edges[::-1] for edges in super().histogram_edges())


class NoPotentialDoubled:
    """A density model with a gradient only: the gradient check cannot run (a warning says so)."""

    dim = 2

    def grad_log_density(self, theta):
        return -2 * theta


class MixedForms(Gaussian):
    """log_density with grad_potential: U = −log_density is checked against grad_potential."""

    def grad_potential(self, theta):
        return -super().grad_log_density(theta)


class MixedFormsWrong(MixedForms):
    def grad_potential(self, theta):
        return super().grad_log_density(theta)  # the sign of the other form


class Float32Example(type(example_model())):
    """The example in single precision: checked at its own precision, not refused."""

    def log_likelihood(self, theta, index):
        return super().log_likelihood(theta.astype(np.float32), index).astype(np.float32)

    def grad_log_likelihood(self, theta, index):
        return super().grad_log_likelihood(theta.astype(np.float32), index).astype(np.float32)


class LargeAtItsMode:
    """Σ over 10⁶ data of −(θ − x_i)²/2 at its mode: a value of ~5·10⁵ with a zero derivative."""

    dim = 1

    def __init__(self):
        self.data = np.random.default_rng(0).standard_normal(1_000_000)

    def log_density(self, theta):
        return -0.5 * ((theta[:, :1] - self.data[None, :]) ** 2).sum(axis=1)

    def grad_log_density(self, theta):
        return -(theta - self.data.mean()) * self.data.size

    def initial_position(self, n_chains, rng):
        return np.full((n_chains, 1), self.data.mean())


class CallableRowModel(load_model_class(str(ROOT / "examples/robust_regression.py:RobustRegression"))):
    def __call__(self):
        return "a model may be callable"


class WrongSums(type(example_model())):
    """Sums of its rows' gradients that are not those of grad_log_likelihood: their second sum forgets the mean."""

    def grad_log_likelihood_sums(self, theta, index, with_scatter):
        rows = self.grad_log_likelihood(theta, index)
        return rows.sum(axis=1), (rows**2).sum(axis=1)


class WrongSumAlone(type(example_model())):
    """Right with the second sum asked for, twice the first without it (the branch plain minibatches take)."""

    def grad_log_likelihood_sums(self, theta, index, with_scatter):
        rows = self.grad_log_likelihood(theta, index)
        scatter = ((rows - rows.mean(axis=1, keepdims=True)) ** 2).sum(axis=1)
        return (rows.sum(axis=1), scatter) if with_scatter else (2 * rows.sum(axis=1), np.zeros_like(scatter))


@pytest.mark.parametrize("model, message", [
    (FixedChains, "initial_position returned shape (3, 2) at θ₀; expected (5, 2)"),
    (WrongSums, "grad_log_likelihood_sums' Σ (g_i − ḡ)² (with_scatter=True) disagrees with grad_log_likelihood's"),
    (WrongSumAlone, "grad_log_likelihood_sums' Σ g_i (with_scatter=False) disagrees with grad_log_likelihood's"),
    (Unnormalised, "exact_log_density integrates to 6.2"),
    (OneEdgeArray, "histogram_edges() must return a tuple of two increasing arrays"),
    (DecreasingEdges, "histogram_edges() must return a tuple of two increasing arrays"),
    (MixedFormsWrong, "the gradient of log_density disagrees with its central differences"),
])
def test_models_that_would_break_the_run_are_refused(model, message):
    with pytest.raises(UserModelError) as error:
        user_target(model(), spec="m.py:M")
    assert message in str(error.value), str(error.value)


def test_legitimate_models_are_not_refused_and_a_skipped_check_says_so(caplog):
    assert user_target(MixedForms()).has_potential
    user_target(Float32Example())
    user_target(LargeAtItsMode())
    with caplog.at_level("WARNING", logger="sgmcmc.targets.user"):
        user_target(NoPotentialDoubled())
    assert "no log_density (or potential): grad_log_density is not checked" in caplog.text


def test_a_callable_model_keeps_its_compiled_path():
    assert make_sampler("sghmc", user_target(CallableRowModel(n_data=200)), noise_estimate="zero").engine_blocks(PYTHON)


def test_settings_of_the_other_kind_of_model_are_refused():
    with pytest.raises(UserModelError, match=r"target.noise_variance=1.0 is for a density model"):
        user_target(example_model(), noise_variance=1.0)
    with pytest.raises(UserModelError, match=r"target.batch_size=10 is for a data model"):
        user_target(Gaussian(), batch_size=10)


MODEL_FILE = """
import numpy as np


class Gaussian:
    dim = 1

    def log_density(self, theta):
        return -0.5 * np.sum(theta**2, axis=1) / {variance}

    def grad_log_density(self, theta):
        return -theta / {variance}
"""


def test_a_resume_with_an_edited_model_file_is_refused(tmp_path):
    """The checkpoint keeps the SHA-256 of the model's file as it was loaded; a resume with the same file continues bit
    for bit, one with an edited file is a CheckpointError, and model.py in the folder is the file the run started with."""
    from sgmcmc.checkpoint import CheckpointError, Checkpointer, load_latest
    from sgmcmc.targets.user import make_user_target
    from tests.helpers import RequestStopAt

    path = tmp_path / "model.py"
    path.write_text(MODEL_FILE.format(variance=1.0))
    settings = RunOptions(n_steps=40, n_chains=3, burn_in=10, eval_every=10, progress=False, block_seconds=0.0)

    def run(stop_at=None, resume=None, folder=None):
        target = make_user_target(f"{path}:Gaussian")
        stop = RequestStopAt(float("inf") if stop_at is None else stop_at)
        checkpointer = Checkpointer(folder, "hash") if folder is not None else None
        outcome = run_chains(make_sampler("sgld", target), Constant(0.1), settings, np.random.default_rng(1),
                             stop_requested=lambda: stop.requested, checkpointer=checkpointer, resume=resume,
                             observers=[stop])
        return target, outcome

    _, whole = run()
    started, _ = run(stop_at=15, folder=tmp_path)
    checkpoint, _ = load_latest(tmp_path, "hash")
    _, resumed = run(resume=checkpoint)
    np.testing.assert_array_equal(resumed.samples, whole.samples)
    path.write_text(MODEL_FILE.format(variance=4.0))
    with pytest.raises(CheckpointError, match="the model's file differs from the one the run started with"):
        run(resume=checkpoint)
    (tmp_path / "run").mkdir()
    started.write_artifacts(tmp_path / "run", None)  # the source as loaded, not the edited file
    assert "/ 1.0" in (tmp_path / "run" / "model.py").read_text()


@pytest.mark.parametrize("sampler, same", [("sgrld", "sgld"), ("sgrhmc", "sghmc")])
def test_a_riemannian_sampler_on_a_model_without_a_metric_says_it_is_its_euclidean_twin(sampler, same, caplog):
    """With no metric() on the model and sampler.metric null, G = I: SGRLD is SGLD and SGRHMC is SGHMC, said in one
    line naming the override that gives a position-dependent G; nothing is said once a metric is given."""
    config = {"seed": 0, "tune": "off",
              "target": {"name": "custom", "model": "examples/breast_cancer_logistic.py:BreastCancerLogistic"},
              "sampler": {"name": sampler, "step_size": 1e-9}, "schedule": {"name": "constant"},
              "run": {"n_steps": 10, "n_chains": 2, "burn_in": 0, "progress": False, "backend": "python"}}  # no compile
    with caplog.at_level(logging.WARNING, logger="sgmcmc"):
        build(config)
    said = [record.getMessage() for record in caplog.records if "G(θ) = I" in record.getMessage()]
    assert said == [f"{sampler} with G(θ) = I is {same}: target custom has no metric of its own (a model's metric()) "
                    "and sampler.metric is null; set 'sampler.metric={name: rational}' for a position-dependent one"]
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="sgmcmc"):
        build({**config, "sampler": {**config["sampler"], "metric": {"name": "rational"}}})
    assert not [record for record in caplog.records if "G(θ) = I" in record.getMessage()]
