"""Preconditioned SGLD (Li, Chen, Carlson & Carin, AAAI 2016, Algorithm 1) as a recipe sampler, with and without Γ.

Li et al.'s update, in Welling–Teh's convention (ε_WT), with ḡ = −∇Ũ(θ_t):

    V_{t+1} = αV_t + (1 − α) ḡ ⊙ ḡ,   G = diag(1 ⊘ (λ1 + √V_{t+1})),
    θ_{t+1} = θ_t + (ε_WT/2)[G ḡ + Γ(θ_t)] + N(0, ε_WT G),   Γ_i = Σ_j ∂_j G_ij   (dropped by the authors).

With ε_WT = 2ε (SPEC §0) this is the recipe's z = θ, H = U, D = G, Q = 0 step (Ma et al. 2015, Eq. 9 with +Γ, K1):

    θ' = θ − εD∇Ũ(θ) + εΓ(θ) + N(0, ε(2D − εD V̂ D)),   Γ_i = ∂_{θ_i} D_ii(θ)   (D diagonal).

What "with Γ" means. Γ is a derivative of D with respect to the position, so D must be a function of θ. The RMSProp
average V_t is not: it is a function of the gradient history. Its value at a point is what the recursion converges
to when the chain sits at θ long enough for the average to settle: V = αV + (1 − α) E ĝ(θ)², i.e.

    v(θ) = E[ĝ(θ) ⊙ ĝ(θ)] = ∇U(θ)² + diag Cov(ĝ(θ)),   D(θ) = diag(1 ⊘ (λ + √v(θ))).

This *stationary* preconditioner (``preconditioner: stationary``, the default) is a diagonal metric whose Γ is exact:

    Γ_i = ∂_i D_ii = −D_ii² ∂_i√v_i = −D_ii² (∂_iU ∂²_iiU + ½ ∂_i Cov_ii) / √v_i,

with ∂²_iiU from the target's ``hessian_diagonal`` (exact on the toy targets, central differences of the exact
gradient otherwise) and ∂_i Cov_ii by central differences of the target's noise covariance (0 where it is constant).
``psgld`` with this D and Γ is a recipe instance: its continuous dynamics leave exp(−U) invariant (``check.py``:
stationary). ``psgld_no_gamma`` is the same step without Γ, which is what Li et al. publish ("for efficiency"): in
1D its continuous dynamics are stationary for exp(−U)/D(θ) = exp(−U)(λ + √v(θ)), not exp(−U) (``check.py``: NOT
stationary; tests/samplers/test_psgld.py measures the bias of E θ²). The reading chosen here is the one under which
dropping Γ is the published approximation and keeping it is correct; the other readings either make Γ vanish (a
frozen preconditioner: both samplers coincide) or differentiate only the (1 − α) share of the current gradient in
V_t (Li et al.'s argument that Γ is small for α → 1), which is not the Γ of the metric the chain actually follows
when V_t has settled, and so is not recipe-correct either.

Where Cov(ĝ) comes from: the target's ``noise_covariance`` (the V it tells the samplers), else its
``minibatch_noise_covariance`` (the exact one it keeps for diagnostics), else 0. The stationary form needs the full
gradient ∇U and the Hessian diagonal at every step (and 2·dim more calls of the noise covariance), so it is for the
targets with a formula or a small data set.

``preconditioner: running`` is Li et al.'s Algorithm 1 itself: the RMSProp average V_t of the minibatch gradients,
kept per chain in ``SamplerState.preconditioner`` (V_0 = 0), D_t = 1/(λ + √V_t). Its D is a function of the history,
not of θ, so the recipe's Γ = Σ_j ∂_j D_ij(θ) of that frozen preconditioner is 0, and ``psgld`` and
``psgld_no_gamma`` take the same step there (Li et al.'s method, with B̂ = D V̂ D subtracted unless
``noise_estimate: zero``). It needs no full-data pass and is the form the data targets' defaults use. Its declared
recipe (``check.py``) is the update it takes: the stationary D, the dynamics the running average tracks, with Γ = 0,
which is ``psgld_no_gamma``'s, so ``check.py`` calls it NOT stationary and measures its bias (tests/test_check_cli.py:
E θ² on the double well more than 20 standard errors above the exact value). The generic integrator is refused with
``preconditioner: running``: its step would follow the stationary D(θ), not the running average.

Config keys: ``alpha`` (α, the running average's decay per step, Li et al.'s 0.99), ``damping`` (λ > 0, Li et al.'s
10⁻⁵), ``preconditioner`` (``stationary`` | ``running``).

On the engine (:func:`sgmcmc.engine.integrators.preconditioned`, :meth:`PSGLD.engine_integrator`), integrator
``euler``: the running preconditioner on every target that hands the engine its functions, V_t carried in
``state.preconditioner``; the stationary one on a density model with its constant V (with Γ, its exact ∂²U/∂θ_i² where
it hands over ``hessian_diagonal_into``, read in the integrator itself, else central differences
of its ∇U, :func:`sgmcmc.engine.estimators.differenced_stationary`), and on
a data model, with plain minibatches or the control variates (∇U and V(θ) over all the rows, V(θ) about the control
variates' centre, Γ's derivatives by central differences: :func:`sgmcmc.engine.estimators.rows_stationary`, 4d + 2
passes over the data a step, twice that with the control variates). The stationary one refuses SVRG (V(θ) about each
chain's own centre, which moves at every renewal). ``integrator: generic`` is the recipe's step.
"""

from __future__ import annotations

import numpy as np

from sgmcmc.engine import estimators, integrators
from sgmcmc.engine.estimators import on_rows, running_size, source_of
from sgmcmc.engine.static import static
from sgmcmc.recipe import Recipe
from sgmcmc.samplers.base import NOISE_ESTIMATES, Sampler, diagonal_matrices, per_example_gradients
from sgmcmc.schema import Key, choice, optional, real
from sgmcmc.state import SamplerState

PRECONDITIONERS = ("stationary", "running")
PSGLD_KEYS = {
    "alpha": Key(real(0.0, maximum=1.0), "α: decay of the RMSProp average V_t = αV_{t−1} + (1 − α)ĝ² "
                                          "(preconditioner: running; Li et al. 2016: 0.99)"),
    "damping": Key(real(0.0, strict=True), "λ in D = 1/(λ + √V) (Li et al. 2016: 1e-5)"),
    "preconditioner": Key(choice(*PRECONDITIONERS), "V in D = 1/(λ + √V): its value at θ, E ĝ(θ)² = ∇U² + "
                                                    "diag Cov(ĝ) (stationary: a metric of θ, exact Γ), or Li et al.'s "
                                                    "running average of the minibatch gradients (running: Γ = 0)"),
    "noise_estimate": Key(optional(choice(*NOISE_ESTIMATES)), "V̂ subtracted from the injected noise: the "
                          "target's V(θ) (known), none (zero), the minibatches' running covariance (running); null: known with the stationary preconditioner, zero with the running one "
                          "(Li et al. 2016 subtract none: its V₀ = 0 makes D = 1/λ at the first steps, where "
                          "ε(2D − εDV̂D) is not PSD)"),
}
_SPACING = 1e-5  # relative spacing of the central differences of the noise covariance


# -- pure functions over (n_chains, dim) arrays ---------------------------------------------------------------------
def preconditioner_diagonal(second_moment: np.ndarray, damping: float) -> np.ndarray:
    """D = 1 ⊘ (λ + √V) (Li et al. 2016, Eq. 5: their G(θ), the recipe's D)."""
    return 1.0 / (damping + np.sqrt(second_moment))


def stationary_second_moment(gradient: np.ndarray, noise_diagonal: np.ndarray) -> np.ndarray:
    """v(θ) = E ĝ(θ)² = ∇U(θ)² + diag Cov(ĝ(θ)): the fixed point of the RMSProp recursion at θ."""
    return gradient * gradient + noise_diagonal


def stationary_correction(diffusion: np.ndarray, gradient: np.ndarray, hessian_diagonal: np.ndarray,
                          noise_derivative: np.ndarray, second_moment: np.ndarray) -> np.ndarray:
    """Γ_i = ∂_i D_ii(θ) = −D_ii² (∂_iU ∂²_iiU + ½∂_i Cov_ii) / √v_i for D = 1/(λ + √v(θ)) (Ma et al. 2015, Eq. 3;
    0 where v_i = 0, where √v has no derivative)."""
    root = np.sqrt(second_moment)
    slope = np.divide(gradient * hessian_diagonal + 0.5 * noise_derivative, root,
                      out=np.zeros_like(root), where=root > 0)
    return -diffusion * diffusion * slope


class PSGLD(Sampler):
    """pSGLD with Γ (recipe-correct for the stationary preconditioner; see the module docstring)."""

    name = "psgld"
    integrators = ("euler", "generic")
    parameters = {**Sampler.parameters, **PSGLD_KEYS}
    with_gamma = True
    exact_kernel = True

    def __init__(self, target, alpha: float = 0.99, damping: float = 1e-5, preconditioner: str = "stationary",
                 noise_estimate: str | None = None, **kwargs):
        preconditioner = self.checked("preconditioner", preconditioner)
        if self.checked("noise_estimate", noise_estimate) is None:
            noise_estimate = "zero" if preconditioner == "running" else "known"
        super().__init__(target, noise_estimate=noise_estimate, **kwargs)
        self.alpha = self.checked("alpha", alpha)
        self.damping = self.checked("damping", damping)
        self.preconditioner = preconditioner
        if self.preconditioner == "running" and self.integrator == "generic":
            raise ValueError("integrator generic follows the stationary preconditioner: use preconditioner=stationary "
                             "or integrator=euler")
        if self.preconditioner == "stationary" and not target.has_exact_gradient:
            raise ValueError(f"preconditioner=stationary needs the exact gradient, which target {target.name!r} does "
                             f"not have (use preconditioner=running)")
        if self.preconditioner == "stationary" and getattr(target, "estimator", None) == "svrg":
            raise ValueError("sampler.preconditioner=stationary with gradient=svrg: its D(θ) = 1/(λ + √v(θ)) would take "
                             "V(θ) about each chain's own SVRG centre, which moves at every renewal, so D would not be a "
                             "function of θ and Γ would not keep the target; use gradient=control_variates (one fixed "
                             "centre) or sampler.preconditioner=running")
        if self.preconditioner == "stationary" and not per_example_gradients(target):
            raise ValueError(f"sampler.preconditioner=stationary: its V(θ) and Γ need the per-example gradients over all "
                             f"N rows at every step, and target {target.name!r} hands over its minibatch sums alone; "
                             f"use sampler.preconditioner=running")

    def init(self, theta, rng):
        theta = np.array(theta, dtype=float)
        average = np.zeros_like(theta) if self.preconditioner == "running" else None
        return SamplerState(theta=theta, preconditioner=average, **self.initial_noise(theta.shape[0]))

    # -- the stationary preconditioner D(θ) and its Γ ----------------------------------------------------------------
    def noise_diagonal(self, theta: np.ndarray) -> np.ndarray:
        """diag Cov(ĝ(θ)) (n, d): the target's V, else its diagnostic minibatch covariance, else 0."""
        covariance = self.target.noise_covariance(theta)
        if covariance is None:
            covariance = self.target.minibatch_noise_covariance(theta)
        if covariance is None:
            return np.zeros_like(theta)
        covariance = np.asarray(covariance, dtype=float)
        diagonal = np.diagonal(covariance, axis1=-2, axis2=-1)
        return np.array(np.broadcast_to(diagonal, theta.shape))

    def noise_derivative(self, theta: np.ndarray) -> np.ndarray:
        """∂_i Cov_ii(θ) (n, d) by central differences (exactly 0 for a constant covariance)."""
        out = np.zeros_like(theta)
        for i in range(theta.shape[1]):
            spacing = _SPACING * (1.0 + np.abs(theta[:, i:i + 1]))
            shift = np.zeros_like(theta)
            shift[:, i:i + 1] = spacing
            upper, lower = self.noise_diagonal(theta + shift), self.noise_diagonal(theta - shift)
            out[:, i] = (upper[:, i] - lower[:, i]) / (2.0 * spacing[:, 0])
        return out

    def diffusion(self, theta: np.ndarray) -> np.ndarray:
        """Diagonal of D(θ) = 1/(λ + √v(θ)), (n, d)."""
        moment = stationary_second_moment(self.target.gradient(theta), self.noise_diagonal(theta))
        return preconditioner_diagonal(moment, self.damping)

    def correction(self, theta: np.ndarray) -> np.ndarray:
        """Γ(θ) of the stationary preconditioner (zero for ``psgld_no_gamma``, and for the running preconditioner,
        whose update takes none)."""
        if not self.with_gamma or self.preconditioner == "running":
            return np.zeros_like(theta)
        gradient = self.target.gradient(theta)
        moment = stationary_second_moment(gradient, self.noise_diagonal(theta))
        diffusion = preconditioner_diagonal(moment, self.damping)
        return stationary_correction(diffusion, gradient, self.target.hessian_diagonal(theta),
                                     self.noise_derivative(theta), moment)

    # -- the engine's blocks ----------------------------------------------------------------------------------------
    def engine_integrator(self):
        """:func:`~sgmcmc.engine.integrators.preconditioned` with the constants (α, λ, diag V): V a density model's
        constant gradient-noise covariance, in the stationary v(θ) (none on a data model)."""
        functions = self.engine_functions() or {}
        noise = np.diagonal(np.atleast_2d(functions.get("noise_covariance", np.zeros((1, 1)))))
        constants = np.concatenate([[self.alpha, self.damping], np.broadcast_to(noise, self.target.dim)])
        return integrators.preconditioned, constants, False, False

    def engine_functions(self):
        """The target's functions: for the running preconditioner always (a data model's too); for the stationary one
        on a density model that hands over its constant V, and on a data model (its V(θ) the per-example covariance over
        all the rows, about the control variates' θ̂ where there is one). None elsewhere."""
        functions = super().engine_functions()
        if functions is None or self.preconditioner == "running":
            return functions
        if on_rows(functions):
            return functions
        return functions if "noise_covariance" in functions else None  # a density model's constant V

    def engine_curvature(self, functions, running, callbacks=False):
        """What :func:`~sgmcmc.engine.integrators.preconditioned` takes after its constants: the target's ∂²U/∂θ_i²
        and its parameters (:func:`no_curvature` where none is read), and the moments function with its arguments
        (:func:`no_moments` where none is called): on a data model :func:`~sgmcmc.engine.estimators.rows_stationary`
        with the model's source (plain minibatches or the control variates), c (the target's N(N − n)/n, or N(N − 1)/n for minibatches drawn with
        replacement: Welling–Teh's ``minibatch_noise_covariance``, (N²/n) times the covariance over N) and whether Γ
        is wanted; on a density model without its own ∂²U/∂θ_i² whose Γ is wanted
        :func:`~sgmcmc.engine.estimators.differenced_stationary` with diag V."""
        d = self.target.dim
        curvature = (static(functions.get("hessian_diagonal_into", no_curvature)),
                     np.ascontiguousarray(functions.get("parameters", np.zeros(1)), dtype=float))
        moments = (static(no_moments), np.zeros(1))
        if self.engine_variant() == integrators.MOMENTS or self.engine_variant() == integrators.MOMENTS_WITHOUT_CORRECTION:
            if on_rows(functions):
                n_data, batch = float(functions["n_data"]), float(self.target.batch_size)
                scale = n_data * ((n_data - 1.0) if functions.get("replacement") else (n_data - batch)) / batch
                plain = source_of({key: value for key, value in functions.items() if key != "row_gradient_sums"},
                                  callbacks=callbacks)
                moments = (static(estimators.rows_stationary, inline=False),
                           (plain, np.array([scale, running_size(running, d), float(self.with_gamma)])))
            else:
                noise = np.diagonal(np.atleast_2d(functions["noise_covariance"]))
                moments = (static(estimators.differenced_stationary),
                           np.ascontiguousarray(np.broadcast_to(noise, d), dtype=float))
        return (*curvature, *moments)

    def engine_carry(self):
        """The running average V_t, ``state.preconditioner`` (init's V_0 = 0); nothing for the stationary D(θ)."""
        return ("preconditioner", False) if self.preconditioner == "running" else None

    def engine_variant(self):
        """:data:`~sgmcmc.engine.integrators.RUNNING`, or the stationary preconditioner with Γ or without: from the
        target's constant V and ∂²U/∂θ_i² (``PLAIN``, ``WITHOUT_CORRECTION``), or from a moments function
        (``MOMENTS``, ``MOMENTS_WITHOUT_CORRECTION``: a data model's; a density model's without its own ∂²U/∂θ_i²
        whose Γ is wanted)."""
        if self.preconditioner == "running":
            return integrators.RUNNING
        functions = self.engine_functions() or {}
        if on_rows(functions) or (self.with_gamma and "hessian_diagonal_into" not in functions):
            return integrators.MOMENTS if self.with_gamma else integrators.MOMENTS_WITHOUT_CORRECTION
        return integrators.PLAIN if self.with_gamma else integrators.WITHOUT_CORRECTION

    def recipe_note(self):
        """What ``check.py`` checks when it is not the stationary D with its Γ; None otherwise."""
        if self.preconditioner == "running" and self.with_gamma:
            return ("preconditioner=running takes no Γ (its D is a function of the gradient history, not of θ): "
                    "checked is the stationary D it tracks, without Γ, psgld_no_gamma's dynamics")
        return None

    def recipe(self):
        return Recipe(
            energy_gradient=lambda z, rng: self.target.stochastic_gradient(z, rng),
            diffusion=lambda z: diagonal_matrices(self.diffusion(z)),
            curl=lambda z: np.zeros((z.shape[0], z.shape[1], z.shape[1])),
            correction=self.correction,
            energy=self.target.potential,
            noise_covariance=lambda z: self._noise_block(z, self.diffusion(z)),
        )


class PSGLDNoGamma(PSGLD):
    """pSGLD as Li et al. (2016) publish it: Γ dropped. Its declared recipe has Γ = 0, on purpose (like naive SGRHMC):
    the same D as ``psgld``, so the difference between the two is Γ alone."""

    name = "psgld_no_gamma"
    with_gamma = False
    exact_kernel = True  # PSGLD's blocks with Γ = 0 (the integrator's variant, from with_gamma)


def no_moments(arguments, source, theta, rows, memory, normals, gradient, moment, slope):
    """The moments slot of blocks that call no moments function (the integrator's other branches): nothing."""
    return


def no_curvature(theta, parameters, out):
    """The curvature slot of a target without ∂²U/∂θ_i² where Γ does not read it (the running preconditioner, or
    Γ dropped): NaN."""
    for j in range(theta.shape[0]):
        out[j] = np.nan
