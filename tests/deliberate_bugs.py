"""Deliberate bugs on the engine's blocks, for the tests that show a statistical check catches one: each breaks what a
block hands its compiled integrator (the step's random numbers) or what a block is made of (its integrator, its
metric function: a wrapper that calls the real one and breaks its result) and leaves the engine's code as it is, so
no update is copied. The draws' bugs compile no block again; a wrapper's block is compiled once (numba's cache keeps
it)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sgmcmc.engine import driver, integrators
from sgmcmc.engine.static import StaticFunction, call3, call4, call20, static
from sgmcmc.geometry import rational_metric
from sgmcmc.samplers.base import Sampler
from sgmcmc.targets import double_well

REAL_BLOCK_DRAWS = driver.block_draws
REAL_ENGINE_BLOCKS = Sampler.engine_blocks
# the real functions called as compiled functions by the wrappers below, not their source inlined into them (static's
# CALLED): measured cold, after the sampler's real block, the wrapper's block compiled in 6 s (SGNHT, double well),
# 12 s (CCAdL, Normal-Gamma) and 6 s (SGRLD, double well) so, 19 s, 42 s and 9 s with the source inlined
THERMOSTAT, RATIONAL_METRIC = static(integrators.thermostat, inline=False), static(rational_metric, inline=False)
OU_SPLITTING = static(integrators.ou_splitting, inline=False)
DOUBLE_WELL_CURVATURE = static(double_well.hessian_diagonal_into, inline=False)


def doubled_noise_draws(*args, **kwargs):
    """:func:`sgmcmc.engine.driver.block_draws` with slot 1, the injected noise's standard normals, times √2: every
    integrator that injects from slot 1 (Langevin, the momentum and thermostat steps) injects twice its variance."""
    rows, normals, uniforms = REAL_BLOCK_DRAWS(*args, **kwargs)
    normals[:, 1] *= np.sqrt(2.0)
    return rows, normals, uniforms


def double_the_injected_noise(monkeypatch) -> None:
    """Every block of the test draws :func:`doubled_noise_draws`."""
    monkeypatch.setattr(driver, "block_draws", doubled_noise_draws)


def ou_noise_draws(factor: float):
    """:func:`sgmcmc.engine.driver.block_draws` with slot 0, the O step's standard normals in
    :func:`~sgmcmc.engine.integrators.ou_splitting` (BAOAB, BADODAB), times ``factor``: the O step injects ``factor``²
    times the variance of r₂ = e^{−hc} r₁ + N(0, 2hD' − h²V̂), and r cools (below 1) or heats (above)."""

    def draws(*args, **kwargs):
        rows, normals, uniforms = REAL_BLOCK_DRAWS(*args, **kwargs)
        normals[:, 0] *= factor
        return rows, normals, uniforms

    return draws


def halve_the_ou_noise(monkeypatch) -> None:
    """Every block of the test draws the O step's noise at half its variance (:func:`ou_noise_draws`)."""
    monkeypatch.setattr(driver, "block_draws", ou_noise_draws(1.0 / np.sqrt(2.0)))


def double_the_ou_noise(monkeypatch) -> None:
    """Every block of the test draws the O step's noise at twice its variance (:func:`ou_noise_draws`)."""
    monkeypatch.setattr(driver, "block_draws", ou_noise_draws(np.sqrt(2.0)))


def thermostat_at_twice_the_temperature(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows,
                                        step_size, normals, uniform, gradient, noise, diffusion, scale, at, correction,
                                        square):
    """:func:`sgmcmc.engine.integrators.thermostat`, then ξ' − ε: ξ' = ξ + ε(kᵀk/d − 2), Γ_ξ = −2 in the place of the
    recipe's −1 (Ma et al. 2015 Eq. 15; Shang et al. 2015 Algorithm 1 step 6 for CCAdL), so the thermostat holds kᵀk/d
    at 2, twice the temperature, and the chains sample exp(−U/2)."""
    result = call20(THERMOSTAT, source, parameters, options, variance, theta, momentum, xi, carry, memory, rows,
                    step_size, normals, uniform, gradient, noise, diffusion, scale, at, correction, square)
    xi[0] -= step_size
    return result


def badodab_thermostat_on_the_norm(source, parameters, options, variance, theta, momentum, xi, carry, memory, rows,
                                   step_size, normals, uniform, gradient, noise, diffusion, scale, at, correction,
                                   square):
    """:func:`sgmcmc.engine.integrators.ou_splitting`, then ξ' − h(π/2 − 1): BADODAB's two half D steps,
    ξ' = ξ + h(rᵀr/d − 1), become ξ + h(rᵀr/d − π/2), a thermostat that holds rᵀr/d at π/2. That is what SGMCMCJax's
    BADODAB holds in 1D, whose D step updates ξ with ‖r‖ − d (E|r| = 1 for r ~ N(0, σ²) gives σ² = π/2)."""
    result = call20(OU_SPLITTING, source, parameters, options, variance, theta, momentum, xi, carry, memory, rows,
                    step_size, normals, uniform, gradient, noise, diffusion, scale, at, correction, square)
    xi[0] -= step_size * (0.5 * np.pi - 1.0)
    return result


def double_well_curvature_flipped(theta, parameters, out):
    """The double well's ∂²U/∂θ² (:func:`sgmcmc.targets.double_well.hessian_diagonal_into`) negated: pSGLD's
    stationary Γ = −D² ∂U ∂²U / √v with the wrong sign."""
    call3(DOUBLE_WELL_CURVATURE, theta, parameters, out)
    for j in range(theta.shape[0]):
        out[j] = -out[j]


def rational_metric_without_its_derivative(theta, parameters, root, derivative):
    """:func:`sgmcmc.geometry.rational_metric`'s S = G^{-1/2} with ∂_i S_ii set to 0: SGRLD's Γ_i = 2 S_ii ∂_i S_ii (Ma
    et al. 2015 Eq. 14) and gSGRHMC's γ_i = ∂_i S_ii (Algorithm 1) are 0, the correction that keeps the target
    stationary where G depends on θ."""
    call4(RATIONAL_METRIC, theta, parameters, root, derivative)
    for j in range(theta.shape[0]):
        derivative[j] = 0.0


HOTTER_THERMOSTAT = static(thermostat_at_twice_the_temperature)
GAMMA_FLIPPED = static(double_well_curvature_flipped)
THERMOSTAT_ON_THE_NORM = static(badodab_thermostat_on_the_norm)
# keyed on rational_metric's key too (its file's digest): a block cached with it is not read once sgmcmc/geometry.py
# changes
_WITHOUT_DERIVATIVE = static(rational_metric_without_its_derivative)
METRIC_WITHOUT_ITS_DERIVATIVE = StaticFunction(_WITHOUT_DERIVATIVE.dispatcher,
                                               f"{_WITHOUT_DERIVATIVE.key}({RATIONAL_METRIC.key})")


def change_the_blocks(monkeypatch, change) -> None:
    """Every sampler's engine blocks (:meth:`sgmcmc.samplers.base.Sampler.engine_blocks`) changed by ``change(blocks)
    -> blocks``, patched on the class, as the instance's methods are left alone (a callable set on the instance would
    not be the class's declared hook, and the sampler would have no blocks); an AssertionError where a sampler has none (the bug would land nowhere)."""

    def changed(self, backend=driver.COMPILED):
        blocks = REAL_ENGINE_BLOCKS(self, backend)
        assert blocks is not None, f"{self.name} on {self.target.name} has no engine blocks"
        return change(blocks)

    monkeypatch.setattr(Sampler, "engine_blocks", changed)


def with_the_hotter_thermostat(blocks: driver.Blocks) -> driver.Blocks:
    """Blocks of :func:`~sgmcmc.engine.integrators.thermostat` (SGNHT's, CCAdL's) with
    :func:`thermostat_at_twice_the_temperature` as their step."""
    assert blocks.step.dispatcher is integrators.thermostat, blocks.step
    return replace(blocks, step=HOTTER_THERMOSTAT)


def with_the_thermostat_on_the_norm(blocks: driver.Blocks) -> driver.Blocks:
    """Blocks of :func:`~sgmcmc.engine.integrators.ou_splitting` (BADODAB's) with
    :func:`badodab_thermostat_on_the_norm` as their step."""
    assert blocks.step.dispatcher is integrators.ou_splitting and blocks.xi, blocks.step
    return replace(blocks, step=THERMOSTAT_ON_THE_NORM)


def with_gamma_flipped(blocks: driver.Blocks) -> driver.Blocks:
    """Blocks of pSGLD's stationary preconditioner on the double well with :func:`double_well_curvature_flipped` as
    their curvature."""
    assert blocks.parameters[4].python is double_well.hessian_diagonal_into, blocks.parameters[4]
    return replace(blocks, parameters=(*blocks.parameters[:4], GAMMA_FLIPPED, *blocks.parameters[5:]))


def without_the_metric_derivative(blocks: driver.Blocks) -> driver.Blocks:
    """Blocks on :func:`~sgmcmc.geometry.rational_metric` (SGRLD's, SGRHMC's on the 1D targets) with
    :func:`rational_metric_without_its_derivative` as their metric."""
    assert blocks.parameters[0].python is rational_metric, blocks.parameters[0]
    return replace(blocks, parameters=(METRIC_WITHOUT_ITS_DERIVATIVE, *blocks.parameters[1:]))


def aim_the_thermostat_at_twice_the_temperature(monkeypatch) -> None:
    """Every block of the test runs :func:`thermostat_at_twice_the_temperature`."""
    change_the_blocks(monkeypatch, with_the_hotter_thermostat)


def aim_badodabs_thermostat_at_the_norm(monkeypatch) -> None:
    """Every block of the test runs :func:`badodab_thermostat_on_the_norm`."""
    change_the_blocks(monkeypatch, with_the_thermostat_on_the_norm)


def drop_the_metric_derivative(monkeypatch) -> None:
    """Every block of the test takes :func:`rational_metric_without_its_derivative`."""
    change_the_blocks(monkeypatch, without_the_metric_derivative)
