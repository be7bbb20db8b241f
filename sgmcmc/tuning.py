"""Tuning before sampling (``tune=auto``, the default on ``target=custom``): the step size ε, and the friction C or
the thermostat's diffusion A where the sampler has one, chosen from what the target says of itself and a short
scored search; the run's chains then start from the chosen pilot's draws, near the posterior's bulk.

1. **The mode** θ̂: the control variates' centre where the run has one, else scipy's L-BFGS-B on the exact U and ∇U
   (:func:`sgmcmc.mode.lbfgs_mode`), or a root of ∇U on a target with no U (:func:`sgmcmc.mode.gradient_root`).
2. **The curvature** there, H = ∇²U(θ̂) by central differences of ∇U (all of it up to :data:`DENSE_HESSIAN_MAX_DIM`
   parameters; beyond, its extreme eigenvalues by power iteration on its products, :data:`POWER_ITERATIONS` each,
   after a mode of :data:`LARGE_MODE_ITERATIONS` L-BFGS-B iterations at most), seen through the
   sampler's own preconditioner M at θ̂: D_θθ of a first-order sampler (SGLD, SGRLD, pSGLD), TTᵀ = G⁻¹ of a momentum
   one (its curl's block Q_θr = −T). With λmin ≤ λmax the eigenvalues of MH:

   - stability: an Euler step in θ is stable for ε < 2/λmax, a splitting or leapfrog step of a momentum sampler for
     ε < 2/√λmax (the harmonic oscillator's bound);
   - the friction C (SGHMC, BAOAB) or diffusion A (SGNHT, BADODAB, CCAdL) starts at 2√λmin, critical damping of the
     slowest direction, and is raised where the minibatch noise needs it (3), up to 1/ε.
3. **The minibatch noise** V̂ = Cov ∇Ũ (the target's ``noise_covariance``) at θ̂ and at 32 draws of a widened
   Laplace approximation N(θ̂, 1.5²H⁻¹) (the control variates' noise vanishes at θ̂ itself; the run's chains go into
   the tails): with ``noise_estimate`` known or running the injected noise ε(2D − εB̂) must stay PSD at every chain
   and step (a step past it fails the run), ε ≤ ε_psd/2 (:func:`sgmcmc.recipe.largest_step`); with
   ``zero`` it is not subtracted and inflates the posterior variance by about ε/ε_psd (ε·V̂/(2D); SGLD's stationary
   variance in 1-D is (2 + εV)/(λ(2 − ελ))), held below :data:`NOISE_INFLATION`.
4. **The search** (Coullon, South & Nemeth 2023, "Efficient and generalisable tuning strategies for stochastic
   gradient MCMC"): the candidates ε_top·2⁻ᵏ, k = 0 … :data:`CANDIDATES` − 1, with ε_top = 0.9 of the smaller bound;
   each is a pilot of :data:`PILOT_CHAINS` chains from θ̂ (so that a step too small to move scores badly), scored by
   the IMQ kernel Stein discrepancy of its draws (after the first half of its first round) in the Laplace
   approximation's whitened coordinates (the kernel's scale is then the posterior's); successive halving keeps the
   better half and doubles their length until one is left (a bandit's budget: 20 rounds of :data:`PILOT_STEPS`).
   A candidate that diverges scores ∞; while the winner is the grid's smallest (or all diverged), the next smaller
   ones are tried.
5. **The start**: the run's chains start at draws of the widened Laplace approximation N(θ̂, 1.5²H⁻¹) where H is
   positive definite and U near quadratic over a Laplace sd (:func:`laplace_slopes`): near the bulk, but overdispersed (Gelman & Rubin's starts), so that chains that do not mix in
   the burn-in show in the sds and in R-hat rather than hide behind starts that were already right (a Gaussian's
   Laplace approximation is exact); else at the winner's pilot draws, evenly spaced over its chains and steps.

A run is 10⁵ times a pilot's chain-steps and meets rarer excursions: where the candidate twice the winner diverged,
the step size is the winner's half (:data:`DIVERGENCE_MARGIN`). And its chains start where the pilots' did not, some
in the tails: the run's own chains take :data:`START_CHECK_STEPS` steps from their starts at the chosen step size,
which is halved while any of them diverges (at most :data:`START_CHECK_HALVINGS` times; a banana's chains started at
x ≈ 4 meet 100 times the curvature at its mode).

What it cost (its gradient evaluations, pilot steps and seconds) and what it chose go into metrics.json's ``tuning``;
the chosen values into the run's config.yaml (``sampler.step_size`` and ``sampler.friction`` / ``sampler.diffusion``)
and onto the terminal. Its random numbers come from a generator of its own, seeded from the run's seed.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from sgmcmc.config import RunOptions
from sgmcmc.diagnostics.stein import DATA_TARGET_MAX_POINTS, evenly_spaced_samples, imq_ksd
from sgmcmc.mode import gradient_root, lbfgs_mode
from sgmcmc.recipe import largest_step
from sgmcmc.runner import COMPLETED, run_chains
from sgmcmc.schedules import Constant

DENSE_HESSIAN_MAX_DIM = 256
MODE_ITERATIONS = 500  # L-BFGS-B's iterations for the mode at most
# ... beyond DENSE_HESSIAN_MAX_DIM, where θ̂ is the pilots' start and the point the curvature is read at, not a Laplace
# centre (no Laplace factor is formed): the DRBM on letter (d = 4,326, N = 10,500) took 974 s for 500
LARGE_MODE_ITERATIONS = 50
POWER_ITERATIONS = 30  # products with H for each extreme eigenvalue beyond DENSE_HESSIAN_MAX_DIM
RECIPE_MAX_DIM = 512  # the sampler's D and Q at θ̂ are (dim z)² matrices: small models only (else M = I)
NOISE_INFLATION = 0.05  # the largest relative inflation of the posterior variance by uncorrected minibatch noise
CANDIDATES = 6
PILOT_CHAINS = 16
PILOT_STEPS = 200  # the first round's steps per candidate; each later round doubles them
KSD_POINTS = 400
# N·d beyond which a score's points are DATA_TARGET_MAX_POINTS (each a full-data gradient): the DRBM on letter
# (N·d = 4.5·10⁷) takes 0.5 s a point; the logistic regression on MNIST 7 vs 9 (1.2·10⁶) keeps KSD_POINTS
LARGE_DATA_MODEL = 1e7
MAX_EXTENSIONS = 3  # times the search moves to smaller step sizes (the winner the smallest, or all diverged)
START_CHECK_STEPS = 50
START_CHECK_HALVINGS = 3
FRICTION_KEYS = ("friction", "diffusion")  # C (SGHMC, BAOAB, SGHMC + MH) or A (SGNHT, BADODAB, CCAdL)
LAPLACE_NOISE_POINTS = 32
# the widened Laplace approximation N(θ̂, 1.5²H⁻¹): where the noise is read (where a thousand chains go) and the run
# starts (overdispersed, as R-hat asks)
LAPLACE_SPREAD = 1.5
# the Laplace approximation is kept where U's slope one of its standard deviations out along each of its axes is within
# this factor of a quadratic's 1 (laplace_slopes). examples/exact_models.py's banana has slopes 1 and 3 and keeps it;
# Welling & Teh's bimodal mixture (4.0, 10.3) and Ma et al.'s correlated 2D, a quartic's flat mode (10¹²: H ≈ 10⁻⁶ in
# θ₁, a Laplace sd of 800 where the posterior's is 1.2), do not: their chains start at the pilots' draws, their KSD
# is taken in θ, and their minibatch noise is read at θ̂ alone
LAPLACE_SLOPE_FACTOR = 5.0
KNOWN_NOISE_MARGIN = 0.5  # of ε_psd: a step past it at any chain fails the run
DIVERGENCE_MARGIN = 0.5  # the winner's step size times this where the candidate twice as large diverged


class TuningError(ValueError):
    """Tuning cannot run on this target or found no step size that completes: one line naming ``tune``."""


@dataclass
class Curvature:
    """The extreme eigenvalues of MH at θ̂ (:func:`curvature`), and H's Laplace factor L (H⁻¹ = LLᵀ) where H is dense
    and positive definite (None otherwise)."""

    lambda_min: float
    lambda_max: float
    laplace_factor: Optional[np.ndarray]
    gradient_calls: int


@dataclass
class Tuned:
    """What tuning chose and what it cost."""

    values: dict  # the sampler's keys it set: step_size, and friction or diffusion
    start: np.ndarray  # (n_chains, d): the run's θ₀
    mode: np.ndarray  # (d,)
    bounds: dict  # the step-size bounds: stability, noise (None where there is none)
    curvature: dict  # lambda_min, lambda_max of MH at θ̂
    candidates: list = field(default_factory=list)  # each candidate's step size, steps run and last score
    start_halvings: int = 0  # times the step size was halved for the run's chains' first steps (checked_at_starts)
    gradient_calls: int = 0  # exact-gradient calls of one position (mode, curvature, scores)
    pilot_chain_steps: int = 0
    seconds: float = 0.0

    def record(self) -> dict:
        """metrics.json's ``tuning``."""
        return {"chose": dict(self.values), "bounds": self.bounds, "curvature": self.curvature,
                "mode": self.mode.tolist(), "candidates": self.candidates,
                "start_check": {"steps": START_CHECK_STEPS, "halvings": self.start_halvings},
                "cost": {"seconds": self.seconds, "pilot_chain_steps": self.pilot_chain_steps,
                         "exact_gradient_calls": self.gradient_calls}}

    def line(self) -> str:
        """The terminal's line."""
        chose = ", ".join(f"sampler.{key}={value:.4g}" for key, value in self.values.items())
        return (f"tune=auto chose {chose} in {self.seconds:.1f} s ({self.pilot_chain_steps} pilot chain-steps); "
                "tune=off keeps the config's values")


# ------------------------------------------------------------------------------------------------ the target's facts


def posterior_mode(target, rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """θ̂ (1, d) and the exact-gradient calls it took: the control variates' centre, else L-BFGS-B on U, else a root
    of ∇U."""
    centre = getattr(target, "centre", None)
    if centre is not None and np.shape(centre)[0] == 1:
        return np.asarray(centre, dtype=float), 0
    start = np.asarray(target.initial_position(1, rng), dtype=float)
    if target.has_potential:
        # the pilots start here and the curvature is read here: a mode to a few digits does (the control variates'
        # centre, which every gradient is taken against, is found to the tolerance of sgmcmc.gradient_estimators)
        iterations = MODE_ITERATIONS if start.shape[1] <= DENSE_HESSIAN_MAX_DIM else LARGE_MODE_ITERATIONS
        mode = lbfgs_mode(target.potential, target.gradient, start, gtol=1e-6 * max(1.0, target.n_data or 1.0),
                          maxiter=iterations)
    else:
        mode = gradient_root(target.gradient, start)
    if not np.all(np.isfinite(mode.theta)):
        raise TuningError(f"tune=auto: no finite mode of target {target.name!r} from its initial position "
                          f"({mode.message}); set tune=off and sampler.step_size")
    return mode.theta, mode.calls


def _difference_step(theta: np.ndarray) -> float:
    return 1e-5 * max(1.0, float(np.max(np.abs(theta))))


def hessian(gradient: Callable, theta: np.ndarray) -> np.ndarray:
    """∇²U at θ (1, d) by central differences of ∇U along each axis (2d positions in one call), symmetrised."""
    d = theta.shape[1]
    h = _difference_step(theta)
    shifts = np.concatenate([np.eye(d), -np.eye(d)]) * h
    slopes = np.asarray(gradient(theta + shifts), dtype=float)
    matrix = (slopes[:d] - slopes[d:]) / (2.0 * h)
    return 0.5 * (matrix + matrix.T)


def preconditioner(sampler, theta: np.ndarray) -> Optional[np.ndarray]:
    """M at θ (1, d): D_θθ of a first-order sampler, TTᵀ of a momentum one (Q_θr = −T); None where the sampler has no
    recipe or its state is too large for dense matrices (then M = I)."""
    d = theta.shape[1]
    try:
        state = sampler.init(theta, np.random.default_rng(0))
        z = sampler.pack(state)
        if z.shape[1] > RECIPE_MAX_DIM:
            return None
        recipe = sampler.recipe_at(0.0)
    except TypeError:  # no recipe (HMC): M = I
        return None
    if state.momentum is None:
        return np.asarray(recipe.diffusion(z), dtype=float)[0][:d, :d]
    block = -np.asarray(recipe.curl(z), dtype=float)[0][:d, d:2 * d]
    return block @ block.T


def curvature(target, sampler, theta: np.ndarray) -> Curvature:
    """The extreme eigenvalues of MH at θ̂ (module docstring, 2); dense up to :data:`DENSE_HESSIAN_MAX_DIM`."""
    d = theta.shape[1]
    metric = preconditioner(sampler, theta)
    if d <= DENSE_HESSIAN_MAX_DIM:
        matrix = hessian(target.gradient, theta)
        laplace = None
        try:
            laplace = np.linalg.cholesky(np.linalg.inv(matrix))
        except np.linalg.LinAlgError:
            pass
        calls = 2 * d
        if laplace is not None:
            slopes = laplace_slopes(target.gradient, theta, laplace)
            calls += 2 * d
            if not np.all((slopes > 1.0 / LAPLACE_SLOPE_FACTOR) & (slopes < LAPLACE_SLOPE_FACTOR)):
                laplace = None
        scaled = matrix if metric is None else metric @ matrix
        values = np.sort(np.linalg.eigvals(scaled).real)
        return Curvature(float(values[0]), float(values[-1]), laplace, calls)
    h = _difference_step(theta)
    calls = 0

    def product(v):
        nonlocal calls
        calls += 2
        v = np.asarray(v, dtype=float).reshape(1, d)
        if metric is not None:
            v = v @ metric
        return ((target.gradient(theta + h * v) - target.gradient(theta - h * v)) / (2.0 * h))[0]

    rng = np.random.default_rng(0)
    top = _power_iteration(product, rng.standard_normal(d))
    bottom = top - _power_iteration(lambda v: top * v - product(v), rng.standard_normal(d))
    return Curvature(bottom, top, None, calls)


def laplace_slopes(gradient: Callable, theta: np.ndarray, factor: np.ndarray) -> np.ndarray:
    """The slopes ∇U(θ̂ ± Le_i)·(±Le_i) of U one Laplace standard deviation out along each column of L (H⁻¹ = LLᵀ),
    (2d,): all exactly 1 where U is the quadratic U(θ̂) + ½(θ − θ̂)ᵀH(θ − θ̂) (Le_iᵀ H Le_i = 1)."""
    steps = np.concatenate([factor.T, -factor.T])
    return np.einsum("ij,ij->i", np.asarray(gradient(theta + steps), dtype=float), steps)


def _power_iteration(product: Callable, vector: np.ndarray) -> float:
    """The largest eigenvalue of a symmetric operator, as the Rayleigh quotient after :data:`POWER_ITERATIONS` products
    (each two passes of ∇U over all the data: a bounded cost on a large model, which scipy's Lanczos bounds only by its
    restarts). Both are approached from one side: λmax from below (within 2% on 300 eigenvalues spread evenly over
    [1, 100], tests/test_tuning.py), so the stability bound a little high, which the search's divergent candidates
    catch; λmin, from the shifted operator, from above, and on a wide spectrum by far (about 2 for 1 on the even spread;
    15 to 19 for 0.01 on 300 eigenvalues spread geometrically over [0.01, 10⁴]), so the friction 2√λmin damps more than
    critically, never less."""
    vector = vector / np.linalg.norm(vector)
    value = 0.0
    for _ in range(POWER_ITERATIONS):
        image = product(vector)
        value = float(vector @ image)
        norm = float(np.linalg.norm(image))
        if not norm > 0:
            break
        vector = image / norm
    return value


def stability_bound(lambda_max: float, momentum: bool) -> float:
    """The largest stable step in the stiffest direction: 2/λ (Euler) or 2/√λ (splitting, leapfrog)."""
    if not lambda_max > 0:
        return math.inf
    return 2.0 / math.sqrt(lambda_max) if momentum else 2.0 / lambda_max


def noise_psd_bound(sampler_with_known_noise, positions: np.ndarray) -> float:
    """ε_psd: the largest ε for which 2D − εB̂ is PSD at every position (n, d) (:func:`sgmcmc.recipe.largest_step`),
    with a sampler whose ``noise_estimate`` is known (B̂ from the target's noise_covariance); ∞ without noise."""
    sampler = sampler_with_known_noise
    state = sampler.init(positions, np.random.default_rng(0))
    z = sampler.pack(state)
    if z.shape[1] > RECIPE_MAX_DIM:
        return math.inf
    recipe = sampler.recipe_at(0.0)
    if recipe.noise_covariance is None:
        return math.inf
    diffusion = np.asarray(recipe.diffusion(z), dtype=float)
    noise = np.broadcast_to(np.asarray(recipe.noise_covariance(z), dtype=float), diffusion.shape)
    return float(largest_step(diffusion, noise))


def noise_inflation(step_size: float, psd_bound: float) -> float:
    """The relative inflation of the posterior variance by minibatch noise that is not subtracted, ε/ε_psd (ε·V̂/(2D),
    module docstring, 3)."""
    return 0.0 if math.isinf(psd_bound) else step_size / psd_bound if psd_bound > 0 else math.inf


# ---------------------------------------------------------------------------------------------------------- search


def whitened_ksd(target, samples: np.ndarray, mode: np.ndarray, laplace: Optional[np.ndarray]) -> tuple[float, int]:
    """The IMQ KSD of at most :data:`KSD_POINTS` of ``samples`` (c, m, d) (of
    :data:`~sgmcmc.diagnostics.stein.DATA_TARGET_MAX_POINTS` on a data target beyond :data:`LARGE_DATA_MODEL`) in the
    coordinates y = L⁻¹(θ − θ̂) (scores Lᵀ(−∇U)), and the gradient calls; ∞ for points or scores that are not finite."""
    large = (target.n_data or 0) * samples.shape[-1] > LARGE_DATA_MODEL
    points = evenly_spaced_samples(samples, DATA_TARGET_MAX_POINTS if large else KSD_POINTS)
    if not np.all(np.isfinite(points)):
        return math.inf, 0
    scores = -np.asarray(target.gradient(points), dtype=float)
    if laplace is not None:
        points = np.linalg.solve(laplace, (points - mode).T).T
        scores = scores @ laplace
    with np.errstate(over="ignore", invalid="ignore"):
        value = imq_ksd(points, scores)
    return (float(value) if np.isfinite(value) else math.inf), int(points.shape[0])


@dataclass
class _Candidate:
    step_size: float
    position: np.ndarray  # the chains' θ where the last round left them
    draws: list = field(default_factory=list)  # kept samples of each round (c, m, d)
    steps: int = 0
    score: float = math.inf

    def record(self) -> dict:
        return {"step_size": self.step_size, "steps": self.steps, "ksd": None if math.isinf(self.score) else self.score}


class _PilotRecords(logging.Filter):
    """Drops the run loop's records while a pilot runs (its divergences are the search's business, not the run's)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def _quiet_run(sampler, blocks, step_size: float, theta0: np.ndarray, steps: int, burn_in: int, rng, backend: str):
    """``steps`` steps of the chains at ``theta0`` with the run's blocks, without the run loop's records: the outcome,
    and whether every chain completed with finite draws."""
    settings = RunOptions(n_steps=steps, n_chains=theta0.shape[0], burn_in=burn_in, thin=1, eval_every=steps,
                          progress=False, backend=backend)
    quiet, run_log = _PilotRecords(), logging.getLogger(run_chains.__module__)
    run_log.addFilter(quiet)
    try:
        outcome = run_chains(sampler, Constant(step_size), settings, rng, None, theta0=theta0, blocks=blocks)
    finally:
        run_log.removeFilter(quiet)
    return outcome, outcome.status == COMPLETED and bool(np.all(np.isfinite(outcome.samples)))


def _pilot(sampler, blocks, candidate: _Candidate, steps: int, first: bool, rng, backend: str) -> bool:
    """Run one round of ``candidate``'s chains, quietly; its draws (after the first half of the first round) are kept.
    False when it diverged."""
    outcome, completed = _quiet_run(sampler, blocks, candidate.step_size, candidate.position, steps,
                                    steps // 2 if first else 0, rng, backend)
    candidate.steps += steps
    if not completed:
        return False
    candidate.position = outcome.final_theta
    candidate.draws.append(outcome.samples)
    return True


def _halving(sampler, blocks, target, step_sizes, mode: np.ndarray, laplace, rng, backend: str) -> tuple:
    """Successive halving over ``step_sizes``, every candidate's chains from θ̂: the winner (None when all diverged),
    the candidates, the pilot chain-steps and the gradient calls of the scores."""
    alive = [_Candidate(float(step), np.repeat(mode, PILOT_CHAINS, axis=0)) for step in step_sizes]
    everyone, chain_steps, calls = list(alive), 0, 0
    steps, first_round = PILOT_STEPS, True
    while True:
        for candidate in alive:
            if _pilot(sampler, blocks, candidate, steps, first_round, rng, backend):
                candidate.score, used = whitened_ksd(target, np.concatenate(candidate.draws, axis=1), mode[0], laplace)
                calls += used
            else:
                candidate.score = math.inf
            chain_steps += steps * PILOT_CHAINS
        alive = [candidate for candidate in alive if not math.isinf(candidate.score)]
        if len(alive) <= 1:
            return (alive[0] if alive else None), everyone, chain_steps, calls
        alive = sorted(alive, key=lambda candidate: candidate.score)[:math.ceil(len(alive) / 2)]
        steps, first_round = 2 * steps, False


def search(sampler, blocks, target, top: float, mode: np.ndarray, laplace, rng, backend: str) -> tuple:
    """The step-size search (module docstring, 4): successive halving over ε_top·2⁻ᵏ; while the winner is the grid's
    smallest step (or every candidate diverged), again over the next smaller ones, at most :data:`MAX_EXTENSIONS`
    times. The winner, every candidate, the pilot chain-steps and the gradient calls of the scores."""
    everyone, chain_steps, calls, best = [], 0, 0, None
    grid = top * 2.0 ** -np.arange(CANDIDATES)
    for _ in range(MAX_EXTENSIONS + 1):
        winner, tried, steps, used = _halving(sampler, blocks, target, grid, mode, laplace, rng, backend)
        everyone, chain_steps, calls = everyone + tried, chain_steps + steps, calls + used
        if winner is not None and (best is None or winner.score < best.score):
            best = winner
        if winner is not None and winner.step_size > grid[-1]:
            break
        grid = grid[-1] * 2.0 ** -np.arange(1, CANDIDATES + 1)
    if best is None:
        raise TuningError(f"tune=auto: every step size from {top:.3g} down to {everyone[-1].step_size:.3g} diverged "
                          "in the pilots; set tune=off and a sampler.step_size that completes")
    return best, everyone, chain_steps, calls


def starts(winner: _Candidate, n_chains: int, mode: np.ndarray, laplace: Optional[np.ndarray], rng) -> np.ndarray:
    """The run's θ₀ (module docstring, 5): draws of N(θ̂, LLᵀ), or the winner's pilot draws, evenly spaced over its
    chains and steps (repeated if there are fewer)."""
    if laplace is not None:
        return mode + LAPLACE_SPREAD * rng.standard_normal((n_chains, mode.shape[1])) @ laplace.T
    draws = np.concatenate(winner.draws, axis=1)
    points = evenly_spaced_samples(draws, n_chains)
    return points[np.arange(n_chains) % points.shape[0]]


def checked_at_starts(sampler, blocks, step_size: float, theta0: np.ndarray, rng, backend: str) -> tuple:
    """``step_size``, halved while the run's own chains diverge in their first :data:`START_CHECK_STEPS` steps from
    ``theta0`` (module docstring), the times it was halved, and the chain-steps it took."""
    chain_steps = 0
    for halvings in range(START_CHECK_HALVINGS + 1):
        _, completed = _quiet_run(sampler, blocks, step_size, theta0, START_CHECK_STEPS, START_CHECK_STEPS - 1, rng,
                                  backend)
        chain_steps += START_CHECK_STEPS * theta0.shape[0]
        if completed:
            return step_size, halvings, chain_steps
        if halvings < START_CHECK_HALVINGS:
            step_size /= 2
    raise TuningError(f"tune=auto: the run's chains diverge from their starts in {START_CHECK_STEPS} steps at every "
                      f"step size down to {step_size:.3g}; set tune=off and a sampler.step_size that completes")


def with_margin(winner: _Candidate, candidates: list) -> float:
    """The winner's step size, halved where the candidate twice as large diverged (module docstring)."""
    doubled = [c for c in candidates if math.isclose(c.step_size, 2 * winner.step_size, rel_tol=1e-9)]
    return winner.step_size * (DIVERGENCE_MARGIN if any(math.isinf(c.score) for c in doubled) else 1.0)


# ----------------------------------------------------------------------------------------------------------- tune


def tune(make_sampler: Callable[..., object], target, n_chains: int, seed: int, backend: str,
         blocks_for: Callable) -> tuple[object, object, Tuned]:
    """Tune the sampler that ``make_sampler(**values)`` builds on ``target`` (module docstring); return the tuned
    sampler, its blocks (``blocks_for(sampler)``, made once for the pilots and the run) and :class:`Tuned`."""
    if getattr(target, "gibbs_every", 0):
        raise TuningError(f"tune=auto cannot tune target {target.name!r}: its hyperparameters are Gibbs-resampled every "
                          f"{target.gibbs_every} steps, so the posterior of θ its pilots would be scored against (the "
                          "kernel Stein discrepancy) moves; set tune=off and sampler.step_size")
    if not target.has_exact_gradient:
        raise TuningError(f"tune=auto needs the exact gradient of target {target.name!r} (its pilots are scored by "
                          "the kernel Stein discrepancy); set tune=off and sampler.step_size")
    started = time.perf_counter()
    rng = np.random.default_rng([int(seed), 0x74756E65])  # tuning's own stream ("tune"), never the run's
    sampler = make_sampler()
    mode, calls = posterior_mode(target, rng)
    shape = curvature(target, sampler, mode)
    calls += shape.gradient_calls
    momentum = sampler.init(mode, np.random.default_rng(0)).momentum is not None
    stability = stability_bound(shape.lambda_max, momentum)
    if math.isinf(stability):
        raise TuningError(f"tune=auto: the curvature of target {target.name!r} at its mode is not positive "
                          f"(largest eigenvalue {shape.lambda_max:.3g}); set tune=off and sampler.step_size")
    friction_key = next((key for key in FRICTION_KEYS if key in type(sampler).parameters), None)
    values, bounds = {}, {"stability": stability, "noise": None}
    positions = _noise_positions(sampler, target, mode, shape.laplace_factor, rng)
    zero = getattr(sampler, "noise_estimate", "known") == "zero"
    allowed = NOISE_INFLATION if zero else KNOWN_NOISE_MARGIN  # of ε_psd
    if friction_key is not None:
        current = float(sampler.friction_coefficient if friction_key == "friction" else sampler.diffusion)
        per_unit = _noise_bound(make_sampler, {friction_key: 1.0}, positions)  # ε_psd at C = 1: it grows as C
        critical = 2.0 * math.sqrt(max(shape.lambda_min, 0.0))
        needed = stability / (allowed * per_unit) if per_unit > 0 else math.inf
        chosen = min(max(critical, needed), 1.0 / stability) if critical > 0 or needed < math.inf else current
        values[friction_key] = float(chosen)
        sampler = make_sampler(**values)
    psd = _noise_bound(make_sampler, values, positions)
    noise = allowed * psd
    bounds["noise"] = None if math.isinf(noise) else noise
    top = 0.9 * min(stability, noise)
    if not 0 < top < math.inf:  # e.g. the noise's B̂ outside D's range at a draw of a near-singular Laplace approximation
        raise TuningError(f"tune=auto: no step size satisfies the bounds on target {target.name!r} (stability "
                          f"{stability:.3g}, minibatch noise {noise:.3g}); set tune=off and sampler.step_size")
    blocks = blocks_for(sampler)
    winner, everyone, chain_steps, score_calls = search(sampler, blocks, target, top, mode, shape.laplace_factor,
                                                        rng, backend)
    theta0 = starts(winner, n_chains, mode, shape.laplace_factor, rng)
    step_size, halvings, start_steps = checked_at_starts(sampler, blocks, with_margin(winner, everyone), theta0, rng, backend)
    values = {"step_size": float(step_size), **values}
    tuned = Tuned(values, theta0, mode[0], bounds, {"lambda_min": shape.lambda_min, "lambda_max": shape.lambda_max},
                  [candidate.record() for candidate in everyone], halvings, calls + score_calls,
                  chain_steps + start_steps, time.perf_counter() - started)
    return sampler, blocks, tuned


def _noise_positions(sampler, target, mode: np.ndarray, laplace, rng) -> Optional[np.ndarray]:
    """θ̂ and :data:`LAPLACE_NOISE_POINTS` draws of N(θ̂, 1.5²H⁻¹) (module docstring, 3), where the minibatch noise
    is read; None where the target gives no noise covariance or the sampler no noise estimate."""
    if "noise_estimate" not in type(sampler).parameters or target.noise_covariance(mode) is None:
        return None
    if laplace is None:
        return mode
    draws = rng.standard_normal((LAPLACE_NOISE_POINTS, mode.shape[1]))
    return np.concatenate([mode, mode + LAPLACE_SPREAD * draws @ laplace.T])


def _noise_bound(make_sampler, values: dict, positions: Optional[np.ndarray]) -> float:
    """ε_psd at ``positions`` of the sampler with ``values`` and the known noise estimate; ∞ where there is none."""
    if positions is None:
        return math.inf
    return noise_psd_bound(make_sampler(**values, noise_estimate="known"), positions)
