"""Adding a sampler is one module, one registry line and one YAML file (README, "Adding a sampler"; issue 18).

A toy sampler defined here (:class:`ToyScaledSGLD`, SGLD with D = c·I), one :func:`register_sampler` call and one
``configs/sampler/toy_scaled_sgld.yaml`` written into a copy of ``configs/`` make it runnable from ``run.py``
(``run.main`` in this process, composing that copy), validated by its declared keys, and covered by the
recipe-agreement check of ``tests/samplers/test_recipe_agreement.py``; no file of the repository is touched. The
registration is removed afterwards, so other tests do not see the toy.
"""

import contextlib
import importlib.util
import io
import json
import logging
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from sgmcmc.engine import integrators
from sgmcmc.geometry import RationalMetric
from sgmcmc.recipe import Recipe
from sgmcmc.samplers import SAMPLERS, register_sampler
from sgmcmc.samplers.base import Sampler
from sgmcmc.schema import Key, real
from sgmcmc.state import SamplerState
from tests.samplers.test_recipe_agreement import check_recipe_agreement
from tests.test_config import sampler_file_problems

ROOT = Path(__file__).resolve().parents[2]
NAME = "toy_scaled_sgld"
TOY_YAML = f"""# A toy sampler (tests/samplers/test_adding_a_sampler.py): SGLD with D = scale * I.
name: {NAME}
step_size: 0.02
scale: 0.5             # c in D = c I
noise_estimate: known
integrator: euler
"""
SMALL = ["run.n_steps=60", "run.n_chains=8", "run.burn_in=20", "run.eval_every=20", "run.progress=false",
         "run.figures=false"]


# ---- the module: one class ----------------------------------------------------------------------------------------
class ToyScaledSGLD(Sampler):
    """z = θ, H = U, D = c·I, Q = 0 (Ma et al. 2015, Eq. 9 + K1): θ' = θ − εc∇Ũ(θ) + N(0, ε(2c − εc²V̂)). On the
    engine it is the Langevin integrator with the constant metric S = √c (D = S² = c·I, Γ = 0): a sampler names its
    integrator and metric, and writes no update of its own."""

    name = NAME
    exact_kernel = True  # the engine's blocks run this class's own recipe (a subclass of it does not inherit them)
    integrators = ("euler", "generic")
    parameters = {**Sampler.parameters, "scale": Key(real(0.0, strict=True), "c in D = c·I")}

    def __init__(self, target, scale: float = 1.0, **kwargs):
        super().__init__(target, **kwargs)
        self.scale = self.checked("scale", scale)

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        return SamplerState(theta=theta, **self.initial_noise(theta.shape[0]))

    def engine_integrator(self):
        return integrators.langevin, 1.0, False, False

    def engine_metric(self):
        return RationalMetric([np.sqrt(self.scale)], [0.0]).engine_function(self.target.dim)

    def recipe(self):
        def diffusion(z):
            return np.broadcast_to(self.scale * np.eye(z.shape[1]), (z.shape[0], z.shape[1], z.shape[1])).copy()

        return Recipe(
            energy_gradient=lambda z, rng: self.target.stochastic_gradient(z, rng),
            diffusion=diffusion,
            curl=lambda z: np.zeros((z.shape[0], z.shape[1], z.shape[1])),
            correction=lambda z: np.zeros_like(z),
            energy=self.target.potential,
            noise_covariance=lambda z: self._noise_block(z, np.full_like(z, self.scale)),
        )


class ToyScaledSGLDDoubleScale(ToyScaledSGLD):
    """A deliberate bug: the engine's step takes D = 2c·I (its metric S = √(2c)) while the recipe declares c·I."""

    exact_kernel = True

    def engine_metric(self):
        return RationalMetric([np.sqrt(2.0 * self.scale)], [0.0]).engine_function(self.target.dim)


# ---- the registry line (undone afterwards) ------------------------------------------------------------------------
@pytest.fixture
def registered():
    assert NAME not in SAMPLERS
    register_sampler(ToyScaledSGLD)
    try:
        yield ToyScaledSGLD
    finally:
        del SAMPLERS[NAME]


# ---- the YAML file, in a copy of configs/ ------------------------------------------------------------------------
@pytest.fixture
def config_dir(tmp_path):
    configs = tmp_path / "configs"
    shutil.copytree(ROOT / "configs", configs)
    (configs / "sampler" / f"{NAME}.yaml").write_text(TOY_YAML)
    return configs


def run_cli(config_dir: Path, *argv: str) -> tuple[int, str, str]:
    """``python run.py <argv>`` in this process, with ``configs/`` replaced by ``config_dir``: (exit code, stdout,
    stderr). A fresh copy of run.py's module; the logging set-up Hydra and the run leave behind is undone."""
    spec = importlib.util.spec_from_file_location("sgmcmc_run_adding_a_sampler", ROOT / "run.py")
    run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run)
    run.CONFIG_DIR = config_dir
    root = logging.getLogger()
    saved_logging = (root.level, list(root.handlers))
    saved_argv, out, err, code = sys.argv, io.StringIO(), io.StringIO(), 0
    sys.argv = [str(ROOT / "run.py"), *argv]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            run.main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    finally:
        sys.argv = saved_argv
        root.setLevel(saved_logging[0])
        for handler in root.handlers[:]:
            if handler not in saved_logging[1]:
                root.removeHandler(handler)
    return code, out.getvalue(), err.getvalue()


def test_without_its_registry_line_the_toy_is_refused(config_dir, tmp_path):
    """The YAML file alone is not a sampler: the config names no registered one (one line, exit 2, no folder)."""
    code, _, stderr = run_cli(config_dir, f"sampler={NAME}", *SMALL, f"run.results_dir={tmp_path / 'runs'}")
    assert code == 2 and stderr.startswith(f"error: sampler='{NAME}' is invalid: allowed values are "), stderr
    assert not (tmp_path / "runs").exists()


def test_a_registered_toy_runs_from_the_command_line(registered, config_dir, tmp_path):
    code, stdout, stderr = run_cli(config_dir, f"sampler={NAME}", "target=double_well", *SMALL,
                                   f"run.results_dir={tmp_path / 'runs'}")
    assert code == 0, stderr
    folder = Path(stdout.strip().splitlines()[-1])
    assert folder.parent == tmp_path / "runs"
    metrics = json.loads((folder / "metrics.json").read_text())
    assert metrics["status"] == "completed" and metrics["steps_done"] == 60
    config = yaml.safe_load((folder / "config.yaml").read_text())
    assert config["sampler"] == {"name": NAME, "step_size": 0.02, "scale": 0.5, "noise_estimate": "known",
                                 "integrator": "euler"}
    theta = np.load(folder / "samples.npz")["theta"]
    assert theta.shape == (8, 40, 1) and np.isfinite(theta).all()


def test_a_registered_toy_is_validated_by_its_declared_keys(registered, config_dir, tmp_path):
    results = f"run.results_dir={tmp_path / 'runs'}"
    code, _, stderr = run_cli(config_dir, f"sampler={NAME}", "sampler.scale=-1", *SMALL, results)
    assert code == 2 and stderr == f"error: sampler.scale=-1.0 is invalid: allowed values are numbers > 0.0\n", stderr
    code, _, stderr = run_cli(config_dir, f"sampler={NAME}", "sampler.integrator=splitting", *SMALL, results)
    assert code == 2 and "sampler.integrator='splitting' is invalid: allowed values are euler, generic" in stderr, stderr
    code, _, stderr = run_cli(config_dir, f"sampler={NAME}", "sampler.friction=1", *SMALL, results)
    assert code == 2 and f"sampler.friction is not a known key of sampler '{NAME}'" in stderr and "scale" in stderr, stderr
    assert not (tmp_path / "runs").exists()


def test_a_registered_toy_is_covered_by_the_recipe_agreement_check(registered):
    assert check_recipe_agreement(NAME) == ("generic", "euler")


def test_the_recipe_agreement_check_catches_a_broken_toy():
    """The same check on a toy whose engine step takes twice its declared D: its Euler step misses the recipe's."""
    broken = type("BrokenToy", (ToyScaledSGLDDoubleScale,), {"name": "toy_broken_sgld", "exact_kernel": True})
    register_sampler(broken)
    try:
        with pytest.raises(AssertionError, match="toy_broken_sgld, integrator euler"):
            check_recipe_agreement("toy_broken_sgld")
    finally:
        del SAMPLERS["toy_broken_sgld"]


def test_the_toy_config_file_follows_the_naming_rule(registered, config_dir):
    assert sampler_file_problems(config_dir) == []
