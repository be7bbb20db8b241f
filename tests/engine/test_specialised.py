"""The specialised kernels (one compilation per dispatch combination, what runs use) give the same bits as the generic
ones (what the rest of the test suite runs): sgmcmc.engine.kernels.Specialised."""

import numpy as np
import pytest

from sgmcmc.engine import kernels, splitting_kernels
from sgmcmc.runner import RunSettings, run_chains
from sgmcmc.schedules import Constant
from tests.helpers import build

# one configuration per kernel family and branch kind: formula, metric, integrator, noise mode, clipping, trajectory, MH
# (SGLD, SGRLD, SGHMC, the SGRHMCs, SGNHT, CCAdL and the HMC family run on the engine's blocks on these targets, not
# here)
CASES = [
    ("psgld", "correlated_2d", {}, {"noise_estimate": "known"}),
    ("psgld", "double_well", {}, {"preconditioner": "running", "noise_estimate": "zero"}),
    ("baoab", "gaussian_2d_cov", {}, {"noise_estimate": "known"}),
    ("badodab", "double_well", {}, {"noise_estimate": "known", "noise_clip": True}),
]


def _samples(sampler, specialise: bool, monkeypatch) -> np.ndarray:
    monkeypatch.setattr(kernels, "SPECIALISE", specialise)
    settings = RunSettings(n_steps=300, n_chains=7, burn_in=0, eval_every=300, progress=False)
    outcome = run_chains(sampler, Constant(0.01), settings, np.random.default_rng(5))
    assert outcome.status == "completed"
    return outcome.samples


@pytest.mark.parametrize("sampler_name, target_name, target_params, sampler_params", CASES,
                         ids=[case[0] for case in CASES])
def test_specialised_kernel_gives_the_generic_bits(sampler_name, target_name, target_params, sampler_params, monkeypatch):
    sampler = build(sampler_name, target_name, target_params, **sampler_params)
    assert sampler.compiled_kernel() is not None and sampler.engine_blocks() is None, "this case must run an old kernel"
    generic = _samples(sampler, False, monkeypatch)
    specialised = _samples(sampler, True, monkeypatch)
    np.testing.assert_array_equal(specialised, generic)


def test_specialised_kernel_compiles_per_combination(monkeypatch):
    """Two dispatch values give two entries; the same values again reuse one."""
    sampler = build("baoab", "double_well", {}, noise_estimate="known")
    monkeypatch.setattr(kernels, "SPECIALISE", True)
    monkeypatch.setattr(splitting_kernels.splitting_block, "entries", {})
    settings = RunSettings(n_steps=20, n_chains=2, burn_in=0, eval_every=20, progress=False)
    for _ in range(2):
        run_chains(sampler, Constant(0.01), settings, np.random.default_rng(0))
    assert len(splitting_kernels.splitting_block.entries) == 1
    run_chains(build("baoab", "correlated_2d", {}, noise_estimate="known"), Constant(0.01), settings,
               np.random.default_rng(0))
    assert len(splitting_kernels.splitting_block.entries) == 2
