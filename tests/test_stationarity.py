"""The Fokker–Planck stationarity check (Ma et al. 2015, Eq. 3 and Theorem 1; SPEC §0 K1):
small and converging for the correct samplers, of fixed size for the naive ones, and invalid
D / Q rejected."""

import dataclasses

import numpy as np
import pytest

from sgmcmc import stationarity
from sgmcmc.recipe import RecipeError
from sgmcmc.samplers import make_sampler
from sgmcmc.stationarity import (
    STATIONARY_THRESHOLD,
    Grid,
    StationarityResult,
    default_grid,
    energy_gradient_by_differences,
    sampler_stationarity,
    stationarity_residual,
    verdict,
)
from sgmcmc.targets import make_target

# One worker takes the whole module (make's --dist loadgroup), so that its module fixture `double_well_results` is built
# once a run: every sampler's residual on the double well, 1.2 s.
pytestmark = pytest.mark.xdist_group("test_stationarity")

# The config step sizes (configs/sampler/*.yaml) and the SPEC §4.3 noise V = 4.
STEP = {"sgld": 0.02, "sgrld": 0.02, "hmc": 0.1, "naive_sghmc": 0.1, "sghmc": 0.1, "sgnht": 0.05,
        "naive_sgrhmc": 0.1, "sgrhmc": 0.1}
CORRECT = ["sgld", "sgrld", "hmc", "sghmc", "sgnht", "sgrhmc"]
NAIVE = ["naive_sghmc", "naive_sgrhmc"]


def residual(name, target="double_well", noise_variance=4.0, step=None, **kwargs):
    sampler = make_sampler(name, make_target(target, noise_variance=noise_variance),
                           **{k: v for k, v in kwargs.items() if k not in ("points", "order", "grid")})
    options = {k: v for k, v in kwargs.items() if k in ("points", "order", "grid")}
    return sampler_stationarity(sampler, STEP[name] if step is None else step, **options)


@pytest.fixture(scope="module")
def double_well_results():
    return {name: residual(name) for name in CORRECT + NAIVE}


# -- the samplers of the package ------------------------------------------------------------------
@pytest.mark.parametrize("name", CORRECT)
def test_correct_samplers_are_stationary_on_the_double_well(name, double_well_results):
    # measured at the default grids: 1.5e-6 (SGRLD) ... 1.9e-4 (SGNHT, 101³ points)
    assert double_well_results[name].relative_residual < 1e-3


@pytest.mark.parametrize("name", ["sgld", "sghmc", "sgrhmc"])
def test_correct_samplers_are_stationary_on_a_2d_target(name):
    # correlated_2d (T4, V = 4): sgld 201² points, sghmc / sgrhmc 41²×21² points; measured 1.1e-5, 3.3e-3, 3.6e-3
    assert residual(name, target="correlated_2d").relative_residual < 5e-3


@pytest.mark.parametrize("name", NAIVE)
def test_naive_samplers_are_at_least_ten_times_worse(name, double_well_results):
    worst_correct = max(double_well_results[n].relative_residual for n in CORRECT)
    # measured: naive_sghmc 6.7e-2, naive_sgrhmc 1.1e-1, against 1.9e-4 for the worst correct one
    assert double_well_results[name].relative_residual > 10 * worst_correct
    assert double_well_results[name].relative_residual > 3 * STATIONARY_THRESHOLD


@pytest.mark.parametrize("order, expected", [(2, 4.0), (4, 16.0)])
def test_residual_of_a_correct_sampler_converges_at_the_order_of_the_differences(order, expected):
    coarse = residual("sghmc", points=51, order=order).relative_residual
    fine = residual("sghmc", points=101, order=order).relative_residual  # h halved
    assert 0.7 * expected < coarse / fine < 1.3 * expected


@pytest.mark.parametrize("name", NAIVE)
def test_residual_of_a_naive_sampler_does_not_shrink(name):
    coarse = residual(name, points=51).relative_residual
    fine = residual(name, points=101).relative_residual
    assert 0.9 < coarse / fine < 1.1


def test_gradient_noise_without_friction_gives_the_expected_residual():
    # naive SGHMC: L*p = (ε/2)V ∂²_r p = (ε/2)V (r² − 1) p, largest at r = 0, θ = ±1 (p = 1): εV/2
    assert residual("naive_sghmc", step=0.1).max_abs_residual == pytest.approx(0.2, rel=1e-3)
    assert residual("naive_sghmc", step=0.05).max_abs_residual == pytest.approx(0.1, rel=1e-3)


def test_sghmc_without_the_noise_correction_is_not_stationary():
    wrong = residual("sghmc", step=0.1, noise_estimate="zero")
    assert wrong.relative_residual > 3 * STATIONARY_THRESHOLD  # measured 5.0e-2
    assert wrong.max_abs_residual == pytest.approx(0.1 * 4.0 / 2, rel=1e-3)  # the temperature error (ε/2)V
    coarse = residual("sghmc", step=0.1, noise_estimate="zero", points=101)
    assert verdict(coarse, wrong) == "NOT stationary"


def test_hmc_ignores_the_gradient_noise_of_the_target():
    assert residual("hmc", noise_variance=100.0).relative_residual < 1e-3


def test_sampler_check_calls_the_generic_function(monkeypatch):
    calls = []
    original = stationarity.stationarity_residual

    def spy(*args, **kwargs):
        calls.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(stationarity, "stationarity_residual", spy)
    residual("sgrld", points=101)
    assert len(calls) == 1 and calls[0]["step_size"] == 0.02 and calls[0]["gradient_noise"] is not None


def test_default_grid_covers_the_documented_ranges():
    sgnht = make_sampler("sgnht", make_target("double_well"), diffusion=2.0)
    assert default_grid(sgnht).bounds == ((-3.0, 3.0), (-4.0, 4.0), (-2.0, 6.0))  # ξ: A ± 4/√d
    sghmc = make_sampler("sghmc", make_target("correlated_2d"))
    grid = default_grid(sghmc)
    assert grid.bounds == ((-3.0, 3.0), (-2.0, 2.0), (-4.0, 4.0), (-4.0, 4.0)) and grid.shape == (41, 41, 21, 21)
    gaussian = make_sampler("sgld", make_target("gaussian_2d_prec"))
    spread = 4.0 * np.sqrt(np.diag(np.linalg.inv([[1.0, 0.9], [0.9, 1.0]])))
    assert np.allclose(default_grid(gaussian).bounds, [(-spread[0], spread[0]), (-spread[1], spread[1])])


# -- user-defined samplers ----------------------------------------------------------------------------
def well(z):
    return z[:, 0] ** 4 - 2.0 * z[:, 0] ** 2


def varying_diffusion(z):
    return (1.0 / (1.0 + z[:, 0] ** 2))[:, None, None]


def zero_curl(z):
    return np.zeros((z.shape[0], 1, 1))


GRID_1D = Grid.regular([(-3.0, 3.0)], 201)


def test_user_langevin_with_and_without_its_correction():
    exact = stationarity_residual(GRID_1D, well, varying_diffusion, zero_curl,
                                  correction=lambda z: -2.0 * z / (1.0 + z**2) ** 2)
    by_differences = stationarity_residual(GRID_1D, well, varying_diffusion, zero_curl)  # Γ from D + Q
    omitted = stationarity_residual(GRID_1D, well, varying_diffusion, zero_curl, correction="zero")
    assert exact.relative_residual < 1e-4 and by_differences.relative_residual < 1e-4
    assert omitted.relative_residual > 0.1


def test_user_sampler_with_gradient_noise_needs_its_correction():
    common = dict(correction=lambda z: -2.0 * z / (1.0 + z**2) ** 2, step_size=0.05, gradient_noise=4.0)
    corrected = stationarity_residual(GRID_1D, well, varying_diffusion, zero_curl,
                                      noise_covariance=lambda z: 4.0 * varying_diffusion(z) ** 2, **common)
    uncorrected = stationarity_residual(GRID_1D, well, varying_diffusion, zero_curl, **common)
    assert corrected.relative_residual < 1e-4 < 1e-2 < uncorrected.relative_residual


def coupled_diffusion(z):  # D(θ) = [[1, a], [a, 1]], a = ½ tanh(θ₁ + θ₂): off-diagonal, position dependent
    a = 0.5 * np.tanh(z[:, 0] + z[:, 1])
    out = np.zeros((z.shape[0], 2, 2))
    out[:, 0, 0] = out[:, 1, 1] = 1.0
    out[:, 0, 1] = out[:, 1, 0] = a
    return out


def constant_curl(z):
    return np.broadcast_to(np.array([[0.0, -1.0], [1.0, 0.0]]), (z.shape[0], 2, 2))


def test_off_diagonal_position_dependent_diffusion():
    grid = Grid.regular([(-4.0, 4.0), (-4.0, 4.0)], 161)
    with_gamma = stationarity_residual(grid, quadratic, coupled_diffusion, constant_curl)  # Γ by finite differences
    without = stationarity_residual(grid, quadratic, coupled_diffusion, constant_curl, correction="zero")
    assert with_gamma.relative_residual < 1e-4
    assert without.relative_residual > 1e-2
    # gradient noise with a non-diagonal V, exactly cancelled by B̂ = M V Mᵀ, M = D + Q
    noise = np.array([[2.0, 0.7], [0.7, 1.0]])

    def subtracted(z):
        carrier = coupled_diffusion(z) + constant_curl(z)
        return carrier @ noise @ np.swapaxes(carrier, 1, 2)

    corrected = stationarity_residual(grid, quadratic, coupled_diffusion, constant_curl, step_size=0.1,
                                      gradient_noise=noise, noise_covariance=subtracted)
    uncorrected = stationarity_residual(grid, quadratic, coupled_diffusion, constant_curl, step_size=0.1, gradient_noise=noise)
    assert corrected.relative_residual == pytest.approx(with_gamma.relative_residual, rel=1e-6)
    assert uncorrected.relative_residual > 1e-2


def test_energy_gradient_by_differences_matches_the_exact_gradient():
    z = np.linspace(-3, 3, 41)[:, None]
    assert np.allclose(energy_gradient_by_differences(well)(z), 4 * z**3 - 4 * z, rtol=1e-9, atol=1e-9)


def not_psd(z):
    return -np.ones((z.shape[0], 1, 1))


def not_symmetric(z):
    out = np.zeros((z.shape[0], 2, 2))
    out[:, 0, 0] = out[:, 1, 1] = 1.0
    out[:, 0, 1] = 0.5
    return out


def not_skew(z):
    out = np.zeros((z.shape[0], 2, 2))
    out[:, 0, 1] = out[:, 1, 0] = 1.0
    return out


def quadratic(z):
    return 0.5 * np.sum(z**2, axis=1)


GRID_2D = Grid.regular([(-3.0, 3.0), (-3.0, 3.0)], 21)


def test_a_diffusion_that_is_not_psd_is_rejected():
    with pytest.raises(RecipeError, match="diffusion matrix D.*positive semidefinite"):
        stationarity_residual(GRID_1D, well, not_psd, zero_curl)


def test_a_diffusion_that_is_not_symmetric_is_rejected():
    with pytest.raises(RecipeError, match="diffusion matrix D.*not symmetric"):
        stationarity_residual(GRID_2D, quadratic, not_symmetric, lambda z: np.zeros((z.shape[0], 2, 2)))


def test_a_curl_that_is_not_skew_symmetric_is_rejected():
    with pytest.raises(RecipeError, match="curl matrix Q.*skew-symmetric"):
        stationarity_residual(GRID_2D, quadratic, lambda z: np.broadcast_to(np.eye(2), (z.shape[0], 2, 2)), not_skew)


def test_a_psd_diffusion_only_inside_part_of_the_grid_is_rejected():
    def sign_changing(z):  # PSD for θ < 2 only
        return (2.0 - z[:, 0])[:, None, None]

    with pytest.raises(RecipeError, match="positive semidefinite"):
        stationarity_residual(GRID_1D, well, sign_changing, zero_curl)


# -- results and verdicts -------------------------------------------------------------------------
def test_result_is_a_frozen_record():
    result = stationarity_residual(GRID_1D, well, varying_diffusion, zero_curl)
    assert isinstance(result, StationarityResult)
    assert result.grid_shape == (201,) and result.spacing == pytest.approx((0.03,)) and result.bounds == ((-3.0, 3.0),)
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.relative_residual = 0.0


def fake(value):
    return StationarityResult(value, value, value, (3,), (1.0,), ((0.0, 2.0),), 0.0, 4)


def test_verdict():
    assert verdict(fake(1e-3), fake(1e-4)) == "stationary"
    assert verdict(fake(5e-3), fake(4.9e-3)) == "NOT stationary"  # small, but not shrinking
    assert verdict(fake(1.0), fake(0.1)) == "unresolved"
    assert verdict(fake(1e-9), fake(1e-9)) == "stationary"  # rounding level
    assert verdict(None, fake(1e-3)) == "stationary" and verdict(None, fake(0.1)) == "NOT stationary"


def test_grid_validation_and_coarsening():
    grid = Grid.regular([(-1.0, 1.0), (0.0, 4.0)], [5, 9])
    assert grid.shape == (5, 9) and grid.spacing == (0.5, 0.5)
    assert grid.coarsened().shape == (3, 5) and grid.coarsened().spacing == (1.0, 1.0)
    with pytest.raises(ValueError):
        Grid((np.array([0.0, 1.0, 3.0]),))
    with pytest.raises(ValueError):
        Grid.regular([(1.0, 0.0)], 5)
