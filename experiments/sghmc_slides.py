"""The SGHMC slides (Xiao 2014, on Chen, Fox & Guestrin 2014) and the matching paper figures (SPEC E7, E9, §4.6).

1. Acceptance table (E7) on the double well T2 with ∇Ũ = ∇U + N(0, 4), slide settings ε = 0.1, m = 10,
   C = 1: naive SGHMC + MH, naive SGHMC without MH, SGHMC + MH (sampler ``sghmc_mh``), beside the
   published 0.62 / 1.0 / 0.76; plus the acceptance against m and C.
2. Paper Fig. 1 with the code settings (ε = 0.1, m = 50, C = 3, 80,000 samples): histograms of HMC,
   naive SGHMC with / without MH and SGHMC against the exact density on T2 and T1.
3. Paper Fig. 2 (E9, T6): (θ, r) traces of exact, noisy, noisy-with-resampling Hamiltonian dynamics and
   SGHMC from θ = 1, 300 points × 50 inner steps (the samplers through ``run_chains`` with a ``PathObserver``,
   no run folders; the Hamiltonian paths with ``leapfrog``).
4. Paper Fig. 3a/3b (E9, T5 ``gaussian_2d_cov``): covariance error against autocorrelation time for
   5 SGLD and 5 SGHMC settings; the first 50 steps of SGLD and SGHMC from (0, 0).

    python -m experiments.sghmc_slides [--smoke] [--root results/paper] [--jobs 2]
"""

from __future__ import annotations

import sys
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from experiments.common import Setting, load_samples, parse_args, run_settings, setting
from sgmcmc.diagnostics import bin_masses_1d
from sgmcmc.diagnostics.comparison import compare, compare_to_value
from sgmcmc.observers import PathObserver
from sgmcmc.paper import PaperFolder
from sgmcmc.config import RunOptions
from sgmcmc.runner import run_chains
from sgmcmc.samplers import make_sampler
from sgmcmc.schedules import Constant
from sgmcmc.targets import make_target

FIGURE_ID = "sghmc-slides"

# --- 1. acceptance table (E7) --------------------------------------------------------------------
ACCEPTANCE_METHODS = {  # method -> (label, overrides on top of +experiment=sghmc_slides_acceptance, published)
    "naive_sghmc_mh": ("Naive SGHMC (with MH)", ["sampler=naive_sghmc", "sampler.metropolis=true"], 0.62),
    "naive_sghmc": ("Naive SGHMC (without MH)", ["sampler=naive_sghmc", "sampler.metropolis=false"], 1.0),
    "sghmc_mh": ("SGHMC (with MH)", ["sampler=sghmc_mh"], 0.76),
}
ACCEPTANCE_SEEDS = (0, 1, 2)
SWEEP_STEPS = (10, 20, 30, 50)  # m
SWEEP_FRICTIONS = (1.0, 3.0)  # C
SWEEP_SEED = 10

# --- 2. Fig. 1 (code settings) -------------------------------------------------------------------
FIG1_TARGETS = ("double_well", "gaussian_1d")
FIG1_METHODS = {  # method -> (label, experiment config, extra overrides)
    "hmc": ("HMC (exact gradient, MH)", "sghmc_slides_fig1", ["sampler=hmc"]),
    "naive_sghmc_mh": ("naive SGHMC (with MH)", "sghmc_slides_fig1", ["sampler=naive_sghmc", "sampler.metropolis=true"]),
    "naive_sghmc": ("naive SGHMC (no MH)", "sghmc_slides_fig1", ["sampler=naive_sghmc", "sampler.metropolis=false"]),
    "sghmc": ("SGHMC (C = 3)", "sghmc_slides_fig1_sghmc", []),
}
TARGET_LABELS = {"double_well": "T2: U = θ⁴ − 2θ²", "gaussian_1d": "T1: U = θ²/2"}
COLORS = {"hmc": "tab:cyan", "naive_sghmc_mh": "tab:purple", "naive_sghmc": "k", "sghmc": "tab:green",
          "sghmc_mh": "tab:green", "sgld": "tab:blue"}

# --- 3. Fig. 2 phase space (E9, T6) --------------------------------------------------------------
PHASE = {"step_size": 0.1, "friction": 3.0, "noise_variance": 0.25, "start": (1.0, 0.0), "n_points": 300,
         "inner_steps": 50, "seed": 10}

# --- 4. Fig. 3 (E9, T5) --------------------------------------------------------------------------
FIG3A_INDICES = (1, 2, 3, 4, 5)
FIG3B = {"sgld_eta": 0.05, "sghmc_eta": 0.05, "sghmc_alpha": 0.035, "seed": 20}


def sgld_eta(i: int) -> float:
    return 0.18 * 0.8 ** (i - 1)


def sghmc_eta_alpha(i: int) -> tuple[float, float]:
    return 0.05 * 0.36 ** (i - 1), 0.05 * 0.6 ** (i - 1)


def sghmc_from_eta_alpha(eta: float, alpha: float) -> tuple[float, float]:
    """(η, α) form → recipe (ε, C) with M = 1: ε = √η, C = α/√η (SPEC §0 table)."""
    return float(np.sqrt(eta)), float(alpha / np.sqrt(eta))


# --- settings --------------------------------------------------------------------------------------
def _smoke_acceptance() -> list[str]:
    return ["run.n_chains=50", "run.n_steps=6", "run.burn_in=3", "run.eval_every=3"]


def acceptance_settings(smoke: bool) -> list[Setting]:
    out = []
    for seed in ACCEPTANCE_SEEDS[: 1 if smoke else None]:
        for method, (_, extra, _) in ACCEPTANCE_METHODS.items():
            overrides = ["+experiment=sghmc_slides_acceptance", *extra, f"seed={seed}", "run.figures=false"]
            overrides += _smoke_acceptance() if smoke else []
            out.append(setting(overrides, panel="acceptance", method=method, target="double_well", m=10,
                               C=1.0 if method == "sghmc_mh" else 0.0, seed=seed))
    steps = SWEEP_STEPS[::3] if smoke else SWEEP_STEPS
    for m in steps:
        overrides = ["+experiment=sghmc_slides_acceptance", "sampler=naive_sghmc", "sampler.metropolis=true",
                     f"sampler.n_leapfrog={m}", f"seed={SWEEP_SEED}", "run.figures=false"]
        out.append(setting(overrides + (_smoke_acceptance() if smoke else []), panel="acceptance_sweep",
                           method="naive_sghmc_mh", target="double_well", m=m, C=0.0, seed=SWEEP_SEED))
        for friction in SWEEP_FRICTIONS[: 1 if smoke else None]:
            overrides = ["+experiment=sghmc_slides_acceptance", "sampler=sghmc_mh", f"sampler.n_leapfrog={m}",
                         f"sampler.friction={friction}", f"seed={SWEEP_SEED}", "run.figures=false"]
            out.append(setting(overrides + (_smoke_acceptance() if smoke else []), panel="acceptance_sweep",
                               method="sghmc_mh", target="double_well", m=m, C=friction, seed=SWEEP_SEED))
    return out


MH_BIAS_METHODS = {  # method -> overrides: is the MH test on H a correct correction? (same slide settings)
    "sghmc_mh": ["sampler=sghmc_mh"],
    "sghmc_no_mh": ["sampler=sghmc_mh", "sampler.metropolis=false"],
    "naive_sghmc_mh": ["sampler=naive_sghmc", "sampler.metropolis=true"],
}


def mh_bias_settings(smoke: bool) -> list[Setting]:
    """Slide settings with 20 burn-in + 200 kept outer steps x 1000 chains (2·10⁵ samples), for the KL."""
    size = (["run.n_chains=50", "run.n_steps=6", "run.burn_in=3", "run.eval_every=3"] if smoke else
            ["run.n_steps=220", "run.burn_in=20", "run.eval_every=20"])
    return [setting(["+experiment=sghmc_slides_acceptance", *extra, "seed=0", "run.figures=false", *size],
                    panel="mh_bias", method=method, target="double_well", m=10, C=1.0 if "sghmc_" in method else 0.0,
                    seed=0)
            for method, extra in MH_BIAS_METHODS.items()]


def fig1_settings(smoke: bool) -> list[Setting]:
    out = []
    for target in FIG1_TARGETS:
        for method, (_, experiment, extra) in FIG1_METHODS.items():
            overrides = [f"+experiment={experiment}", *extra, f"target={target}", "target.noise_variance=4.0",
                         "seed=0", "run.figures=false"]
            if smoke:
                overrides += (["run.n_chains=50", "run.n_steps=300", "run.burn_in=50", "run.eval_every=300"]
                              if method == "sghmc" else
                              ["run.n_chains=50", "run.n_steps=10", "run.burn_in=5", "run.eval_every=10"])
            out.append(setting(overrides, panel="fig1", method=method, target=target))
    return out


def fig3a_settings(smoke: bool) -> list[Setting]:
    out = []
    small = ["run.n_chains=5", "run.n_steps=400", "run.burn_in=100", "run.eval_every=400"] if smoke else []
    for i in FIG3A_INDICES[: 2 if smoke else None]:
        eta = sgld_eta(i)
        overrides = ["+experiment=sghmc_slides_fig3a", "sampler=sgld", f"sampler.step_size={eta!r}", "seed=20",
                     "run.figures=false", *small]
        out.append(setting(overrides, panel="fig3a", method="sgld", index=i, eta=eta, alpha=float("nan"),
                           step_size=eta, friction=float("nan")))
        eta, alpha = sghmc_eta_alpha(i)
        step_size, friction = sghmc_from_eta_alpha(eta, alpha)
        overrides = ["+experiment=sghmc_slides_fig3a", "sampler=sghmc", f"sampler.step_size={step_size!r}",
                     f"sampler.friction={friction!r}", "seed=20", "run.figures=false", *small]
        out.append(setting(overrides, panel="fig3a", method="sghmc", index=i, eta=eta, alpha=alpha,
                           step_size=step_size, friction=friction))
    return out


def fig3b_settings() -> list[Setting]:
    step_size, friction = sghmc_from_eta_alpha(FIG3B["sghmc_eta"], FIG3B["sghmc_alpha"])
    seed = f"seed={FIG3B['seed']}"
    return [
        setting(["+experiment=sghmc_slides_fig3b", "sampler=sgld", f"sampler.step_size={FIG3B['sgld_eta']!r}", seed,
                 "run.figures=false"], panel="fig3b", method="sgld"),
        setting(["+experiment=sghmc_slides_fig3b", "sampler=sghmc", f"sampler.step_size={step_size!r}",
                 f"sampler.friction={friction!r}", seed, "run.figures=false"], panel="fig3b", method="sghmc"),
    ]


# --- helpers -------------------------------------------------------------------------------------
def _record(paper: PaperFolder, item: Setting) -> dict:
    return next(r for r in paper.runs if r["overrides"] == list(item.overrides))


def _run_config(paper: PaperFolder, item: Setting) -> dict:
    import yaml

    return yaml.safe_load((paper.path / _record(paper, item)["folder"] / "config.yaml").read_text())


def post_burn_in_acceptance(paper: PaperFolder, item: Setting) -> float:
    """Mean MH acceptance probability over the kept (post-burn-in) trajectories, from the cumulative
    acceptance rates that trace.csv records at step = burn_in and at the last step."""
    config = _run_config(paper, item)
    burn_in, n_steps = config["run"]["burn_in"], config["run"]["n_steps"]
    trace = pd.read_csv(paper.path / _record(paper, item)["folder"] / "trace.csv").set_index("step")
    if "acceptance_rate" not in trace:
        return float("nan")
    total = trace.loc[n_steps, "acceptance_rate"] * n_steps
    burnt = trace.loc[burn_in, "acceptance_rate"] * burn_in if burn_in else 0.0
    return float((total - burnt) / (n_steps - burn_in))


def independent_draw_acceptance(target, n_pairs: int, rng: np.random.Generator) -> float:
    """E min(1, exp(H₀ − H₁)) for two independent exact draws (θ, r) ~ exp(−U(θ) − r²/2): the acceptance
    of an MH test on H whose trajectory ends at a fresh, independent sample (1D target; θ by inverse CDF
    on a fine grid)."""
    grid = np.linspace(-4.0, 4.0, 400_001)
    cdf = np.cumsum(np.exp(target.log_density(grid[:, None])))
    cdf /= cdf[-1]

    def energy():
        theta = np.interp(rng.random(n_pairs), cdf, grid)[:, None]
        return target.potential(theta) + 0.5 * rng.standard_normal(n_pairs) ** 2

    return float(np.mean(np.exp(np.minimum(energy() - energy(), 0.0))))


def leapfrog(theta, momentum, step_size, n_steps, gradient):
    """The Hamiltonian path of Fig. 1's left panel (Ma et al. 2015, Eq. 10; Chen et al. 2014 Fig. 1), r carried from one
    trajectory to the next: half kick, (drift, kick) × m, the last kick a half; ``gradient`` maps θ → ∇U(θ) or a noisy
    estimate. The samplers' own leapfrog (r resampled, the MH test) is the engine's
    (:func:`sgmcmc.engine.integrators.trajectory`)."""
    momentum = momentum - 0.5 * step_size * gradient(theta)
    for index in range(n_steps):
        theta = theta + step_size * momentum
        momentum = momentum - (0.5 if index == n_steps - 1 else 1.0) * step_size * gradient(theta)
    return theta, momentum


def phase_space_traces(n_points: int, inner_steps: int) -> dict[str, np.ndarray]:
    """(θ, r) after every ``inner_steps`` steps, ``n_points`` points, from θ = 1 (SPEC E9, T6): the Hamiltonian paths
    (exact and noisy gradient, r carried over) by ``leapfrog`` from r = 0; naive SGHMC (r resampled before each
    trajectory of ``inner_steps`` steps) and SGHMC as one-chain runs (:func:`run_chains`) that a
    :class:`PathObserver` follows. All four share one random stream (seed 10), in that order."""
    target = make_target("gaussian_1d", noise_variance=PHASE["noise_variance"])
    eps, rng = PHASE["step_size"], np.random.default_rng(PHASE["seed"])
    theta0, r0 = np.array([[PHASE["start"][0]]]), np.array([[PHASE["start"][1]]])
    out = {}

    def follow(advance):
        theta, r, points = theta0, r0, []
        for _ in range(n_points):
            theta, r = advance(theta, r)
            points.append((theta[0, 0], r[0, 0]))
        return np.array(points)

    out["exact"] = follow(lambda th, r: leapfrog(th, r, eps, inner_steps, target.gradient))
    noisy = lambda x: target.stochastic_gradient(x, rng)  # noqa: E731
    out["noisy"] = follow(lambda th, r: leapfrog(th, r, eps, inner_steps, noisy))

    def run(sampler, n_steps: int, every: int) -> np.ndarray:
        """(θ, r) of the chain after steps every, 2·every, … of a run of ``n_steps`` steps from θ₀."""
        def points(block):
            at = np.flatnonzero(np.arange(block.start + 1, block.stop + 1) % every == 0)
            return np.stack([block.theta[0, at, 0], block.momentum[0, at, 0]], axis=1)

        observer = PathObserver(points)
        settings = RunOptions(n_steps=n_steps, n_chains=1, burn_in=n_steps, eval_every=n_steps, progress=False)
        outcome = run_chains(sampler, Constant(eps), settings, rng, theta0=theta0, observers=[observer])
        if outcome.status != "completed":
            raise RuntimeError(f"phase-space run of {sampler.name}: {outcome.error}")
        return np.concatenate(observer.values)

    # one sampler step = one trajectory of inner_steps leapfrog steps; its init sets r = 0, resampled every step
    out["noisy_resampled"] = run(make_sampler("naive_sghmc", target, n_leapfrog=inner_steps, metropolis=False),
                                 n_points, 1)
    # SGHMC's init draws r₀ ~ N(0, 1) instead of r₀ = 0: on U = θ²/2 its effect on the (linear) chain is 0.046·r₀ in
    # θ and −0.017·r₀ in r at the first point (50 steps), 0.007·r₀ at the second and 0.001·r₀ at the third
    out["sghmc"] = run(make_sampler("sghmc", target, friction=PHASE["friction"], noise_estimate="known"),
                       n_points * inner_steps, inner_steps)
    return out


def covariance_error(chains: np.ndarray, covariance: np.ndarray) -> tuple[float, float]:
    """Mean |Ĉov − Σ| over the 4 entries (pooled samples), and the Monte Carlo standard error of the
    Ĉov entries (sd of the per-chain covariances / √n_chains, averaged over the entries)."""
    pooled = np.cov(chains.reshape(-1, chains.shape[-1]).T)
    per_chain = np.array([np.cov(chain.T) for chain in chains])
    se = per_chain.std(axis=0, ddof=1) / np.sqrt(chains.shape[0]) if chains.shape[0] > 1 else np.full((2, 2), np.nan)
    return float(np.mean(np.abs(pooled - covariance))), float(np.mean(se))


def long_axis_summary(paths: np.ndarray) -> dict:
    """Exploration of the first steps from (0, 0), over all chains (n_chains, n_steps, 2): the spread of
    the coordinate along the long axis (1, 1)/√2 of Σ (exact sd √1.9 = 1.378) after 10 and 50 steps,
    the mean range of that coordinate over the steps, and the mean length of one step."""
    along = paths @ (np.array([1.0, 1.0]) / np.sqrt(2.0))
    steps = np.diff(np.concatenate([np.zeros((paths.shape[0], 1, 2)), paths], axis=1), axis=1)
    return {"long_axis_sd_step10": float(along[:, min(9, along.shape[1] - 1)].std()),
            "long_axis_sd_step50": float(along[:, -1].std()),
            "long_axis_range_mean": float((along.max(axis=1) - np.minimum(along.min(axis=1), 0.0)).mean()),
            "step_length_mean": float(np.linalg.norm(steps, axis=2).mean())}


# --- figures -------------------------------------------------------------------------------------
def draw_acceptance(table: pd.DataFrame, sweep: pd.DataFrame, independent: float, path) -> None:
    fig, ax = plt.subplots(figsize=(6.6, 4.4))
    naive = sweep[sweep.method == "naive_sghmc_mh"].sort_values("m")
    ax.plot(naive.m, naive.acceptance, "-o", color=COLORS["naive_sghmc_mh"], label="naive SGHMC + MH (leapfrog)")
    for friction, style in zip(SWEEP_FRICTIONS, ("-s", "--^")):
        rows = sweep[(sweep.method == "sghmc_mh") & (sweep.C == friction)].sort_values("m")
        if len(rows):
            ax.plot(rows.m, rows.acceptance, style, color=COLORS["sghmc_mh"], label=f"SGHMC + MH, C = {friction:g}")
    ax.axhline(independent, color="0.4", lw=0.9, ls=":", label=f"two independent exact draws: {independent:.3f}")
    for method, marker in (("naive_sghmc_mh", "*"), ("sghmc_mh", "P")):
        published = ACCEPTANCE_METHODS[method][2]
        ax.plot([10], [published], marker, ms=13, color=COLORS[method], mec="k",
                label=f"published (slides, m = 10, C = 1): {published}")
    ax.set_xlabel("m (inner steps per trajectory), ε = 0.1")
    ax.set_ylabel("mean MH acceptance probability")
    ax.set_title(f"Double well, ∇Ũ = ∇U + N(0, 4): acceptance against m\n"
                 f"({int(table.attrs['n_chains'])} chains x {int(table.attrs['n_kept'])} kept trajectories per point)",
                 fontsize=9)
    ax.set_ylim(0.4, 1.0)
    ax.legend(fontsize=7.5, loc="lower left")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def draw_fig1(samples: dict, kls: dict, path) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    edges = np.arange(-3.0, 3.0001, 0.1)
    centres = 0.5 * (edges[1:] + edges[:-1])
    for ax, target_name in zip(axes, FIG1_TARGETS):
        target = make_target(target_name)
        grid = np.linspace(-3, 3, 601)
        ax.plot(grid, np.exp(target.log_density(grid[:, None])), color="tab:red", lw=2.2, label="true density")
        for method, (label, _, _) in FIG1_METHODS.items():
            theta = samples[(target_name, method)].ravel()
            counts, _ = np.histogram(theta, bins=edges)
            density = counts / (theta.size * 0.1)  # all samples in the denominator: mass outside [−3, 3] shows
            ax.plot(centres, density, "-", marker=".", ms=4, lw=1.1, color=COLORS[method],
                    label=f"{label}: KL {kls[(target_name, method)]:.2g}")
        ax.set_title(TARGET_LABELS[target_name] + ", ∇Ũ = ∇U + N(0, 4)", fontsize=10)
        ax.set_xlabel("θ")
        ax.set_xlim(-3, 3)
        ax.legend(fontsize=7.5, loc="upper left" if target_name == "gaussian_1d" else "upper center")
    axes[0].set_ylabel("density (histogram, 0.1 bins)")
    axes[0].set_ylim(0, 0.85)
    axes[1].set_ylim(0, 0.7)
    fig.suptitle("SGHMC paper Fig. 1 with the code settings: ε = 0.1, m = 50, C = 3, B̂ = εV/2 = 0.2; "
                 "80,000 samples each; KL(p‖q) on 0.1 bins over [−3, 3]", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


PHASE_WINDOW = 20
PHASE_STYLE = {
    "noisy": ("rv", "noisy Hamiltonian dynamics"),
    "noisy_resampled": ("ko", "noisy Hamiltonian dynamics, r resampled every 50 steps"),
    "sghmc": ("gs", "noisy Hamiltonian dynamics with friction (SGHMC, C = 3)"),
    "exact": ("bx", "Hamiltonian dynamics, exact gradient"),
}


def draw_phase(traces: dict, path) -> None:
    fig, (ax, energy_ax) = plt.subplots(1, 2, figsize=(12.5, 6.2), gridspec_kw={"width_ratios": [1.15, 1]})
    for name, (style, label) in PHASE_STYLE.items():
        points = traces[name]
        ax.plot(points[:, 0], points[:, 1], style, ms=3, mfc="none" if name != "exact" else None, label=label, alpha=0.8)
        energy = 0.5 * (points**2).sum(axis=1)
        window = min(PHASE_WINDOW, len(energy))
        smooth = np.convolve(energy, np.ones(window) / window, mode="valid")
        energy_ax.plot(np.arange(window, len(energy) + 1), smooth, "-", color=style[0], lw=1.6, label=label)
    ax.set_xlabel("θ")
    ax.set_ylabel("r")
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.set_title(f"(θ, r) after every {PHASE['inner_steps']} steps, {len(traces['exact'])} points", fontsize=9)
    energy_ax.axhline(1.0, color="0.4", ls=":", lw=1, label="E H = 1 under the stationary N(0, I) in (θ, r)")
    energy_ax.set_xlabel("point (each after 50 steps)")
    energy_ax.set_ylabel("H = θ²/2 + r²/2")
    energy_ax.set_title(f"energy of the same points, moving average over {PHASE_WINDOW} points", fontsize=9)
    energy_ax.set_ylim(bottom=0)
    energy_ax.grid(alpha=0.3)
    energy_ax.legend(fontsize=7.5, loc="upper left")
    fig.suptitle(f"SGHMC paper Fig. 2: U = θ²/2, ∇Ũ = θ + N(0, 0.25), ε = 0.1, C = 3, start (θ, r) = (1, 0)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def draw_fig3(fig3a: pd.DataFrame, paths: dict, path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.9))
    for method, label in (("sgld", "SGLD, η = 0.18·0.8^(i−1)"), ("sghmc", "SGHMC, η = 0.05·0.36^(i−1), α = 0.05·0.6^(i−1)")):
        rows = fig3a[fig3a.method == method].sort_values("index")
        left.plot(rows.autocorrelation_time, rows.covariance_error, "-o", color=COLORS[method], label=label)
        left.plot(rows.autocorrelation_time, rows.covariance_se, ":", marker=".", color=COLORS[method], alpha=0.7,
                  label=f"{method.upper()}: Monte Carlo s.e. of the Ĉov entries")
        for _, row in rows.iterrows():
            left.annotate(f"i={int(row['index'])}", (row.autocorrelation_time, row.covariance_error), fontsize=7,
                          xytext=(3, 3), textcoords="offset points")
    left.set_yscale("log")
    left.set_xlabel("autocorrelation time (steps)")
    left.set_ylabel("mean |Ĉov − Σ| over the 4 entries (log scale)")
    left.set_title("Fig. 3a: covariance error against autocorrelation time", fontsize=9)
    left.legend(fontsize=7.5)
    left.grid(alpha=0.3, which="both")
    target = make_target("gaussian_2d_cov")
    x = np.linspace(-3, 3, 241)
    grid = np.stack(np.meshgrid(x, x, indexing="ij"), axis=-1).reshape(-1, 2)
    density = np.exp(target.log_density(grid)).reshape(len(x), len(x))
    right.contour(x, x, density.T, levels=8, colors="0.6", linewidths=0.8)
    for method, label in (("sgld", f"SGLD η = {FIG3B['sgld_eta']}"),
                          ("sghmc", f"SGHMC η = {FIG3B['sghmc_eta']}, α = {FIG3B['sghmc_alpha']}")):
        points = np.vstack([[0.0, 0.0], paths[method][0]])
        right.plot(points[:, 0], points[:, 1], "-o", ms=3, lw=1, color=COLORS[method], label=label)
    right.set_xlim(-3, 3)
    right.set_ylim(-3, 3)
    right.set_aspect("equal")
    right.set_xlabel("θ₁")
    right.set_ylabel("θ₂")
    right.set_title("Fig. 3b: first 50 steps from (0, 0) (chain 0), exact contours", fontsize=9)
    right.legend(fontsize=8, loc="upper left")
    fig.suptitle("SGHMC paper Fig. 3: bivariate Gaussian, Σ = [[1, .9], [.9, 1]], ∇Ũ = Σ⁻¹θ + N(0, I)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


# --- the panels ----------------------------------------------------------------------------------
class Summary:
    """The tidy summary table: one row per (panel, method, setting, quantity)."""

    def __init__(self):
        self.rows = []

    def add(self, panel, method, quantity, value, **extra):
        self.rows.append({"panel": panel, "method": method, "quantity": quantity, "value": value, **extra})

    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)


def acceptance_panel(paper, results, smoke, summary: Summary) -> str:
    rows, region_sentences = [], {}
    for item, metrics in results:
        labels = item.label_dict
        if labels["panel"] not in ("acceptance", "acceptance_sweep", "mh_bias"):
            continue
        config = _run_config(paper, item)
        per_chain = (region_ratios(load_samples(paper, _record(paper, item)), make_target("double_well"))
                     if labels["panel"] == "mh_bias" else {})
        if per_chain:
            region_sentences[labels["method"]] = region_sentence(BIAS_LABELS[labels["method"]], per_chain)
        ratios = {name: float(values.mean()) for name, values in per_chain.items()}
        rows.append({**labels, **ratios, "acceptance": post_burn_in_acceptance(paper, item),
                     "kl_pq": metrics["final"].get("kl_pq"), "status": metrics["status"],
                     "n_samples": metrics["n_samples"], "n_chains": config["run"]["n_chains"],
                     "burn_in": config["run"]["burn_in"], "n_kept": config["run"]["n_steps"] - config["run"]["burn_in"]})
    acceptance = pd.DataFrame(rows)
    main_runs = acceptance[acceptance.panel == "acceptance"]
    table = main_runs.groupby("method").agg(acceptance_mean=("acceptance", "mean"), acceptance_sd=("acceptance", "std"),
                                            kl_pq_mean=("kl_pq", "mean"), kl_pq_sd=("kl_pq", "std"),
                                            n_runs=("seed", "count"))
    table.attrs.update(n_chains=int(main_runs.n_chains.iloc[0]), n_kept=int(main_runs.n_kept.iloc[0]),
                       burn_in=int(main_runs.burn_in.iloc[0]), seeds=sorted(main_runs.seed.unique().tolist()))
    n_pairs = 20_000 if smoke else 2_000_000
    independent = independent_draw_acceptance(make_target("double_well"), n_pairs, np.random.default_rng(0))
    for method, (label, _, published) in ACCEPTANCE_METHODS.items():
        row = table.loc[method]
        no_test = method == "naive_sghmc"
        summary.add("acceptance", method, "acceptance_rate", 1.0 if no_test else row.acceptance_mean,
                    sd=np.nan if no_test else row.acceptance_sd, published=published, target="double_well", m=10,
                    C=1.0 if method == "sghmc_mh" else np.nan, n_runs=row.n_runs,
                    note="no MH test: 1 by definition, not measured" if no_test else "post-burn-in mean over seeds")
        summary.add("acceptance", method, "kl_pq", row.kl_pq_mean, sd=row.kl_pq_sd, target="double_well", m=10,
                    C=1.0 if method == "sghmc_mh" else np.nan, n_runs=row.n_runs)
    summary.add("acceptance", "independent_exact_draws", "acceptance_rate", independent, target="double_well",
                note=f"E min(1, exp(H0 - H1)) for two independent exact draws of (theta, r); Monte Carlo, {n_pairs} pairs")
    sweep = acceptance[acceptance.panel == "acceptance_sweep"].copy()
    sweep["label"] = np.where(sweep.method == "sghmc_mh", "SGHMC + MH, C = " + sweep.C.map("{:g}".format),
                              "naive SGHMC + MH")
    for _, row in sweep.iterrows():
        friction = row.C if row.method == "sghmc_mh" else np.nan
        summary.add("acceptance_sweep", row.method, "acceptance_rate", row.acceptance, target="double_well", m=row.m,
                    C=friction, seed=row.seed)
        summary.add("acceptance_sweep", row.method, "kl_pq", row.kl_pq, target="double_well", m=row.m, C=friction,
                    seed=row.seed)
    bias = acceptance[acceptance.panel == "mh_bias"].set_index("method")
    for method, row in bias.iterrows():
        friction = row.C if method.startswith("sghmc") else np.nan
        if method != "sghmc_no_mh":
            summary.add("mh_bias", method, "acceptance_rate", row.acceptance, target="double_well", m=10, C=friction,
                        n_samples=row.n_samples)
        summary.add("mh_bias", method, "kl_pq", row.kl_pq, target="double_well", m=10, C=friction, n_samples=row.n_samples)
        for region in REGIONS:
            summary.add("mh_bias", method, f"sample_over_exact_mass_{region}", row[region], target="double_well", m=10,
                        C=friction, n_samples=row.n_samples, note="fraction of samples in |theta| region / exact mass")
    draw_acceptance(table, sweep, independent, paper.path / "acceptance_vs_m.png")
    per_seed = {method: main_runs[main_runs.method == method].acceptance.to_numpy() for method in ACCEPTANCE_METHODS}
    return acceptance_markdown(table, per_seed, sweep, bias, independent, n_pairs, region_sentences)


VERSUS_PUBLISHED = {"tie": "tie with the published value", "above": "above the published value",
                    "below": "below the published value"}


def acceptance_markdown(table, per_seed, sweep, bias, independent, n_pairs, region_sentences) -> str:
    """The acceptance table and its notes; every verdict from the seed spread (SPEC §4.15): ours against the
    published value (no error bar of its own: the standard error of our seed mean), and naive against SGHMC + MH."""
    versus_published = {method: compare_to_value(per_seed[method], ACCEPTANCE_METHODS[method][2])
                        for method in ("naive_sghmc_mh", "sghmc_mh")}
    lines = ["| method | published (slides) | ours: acceptance, mean ± sd over seeds | ours: KL(p‖q) of the samples |",
             "|---|---|---|---|"]
    for method, (label, _, published) in ACCEPTANCE_METHODS.items():
        row = table.loc[method]
        ours = "1 (no test)" if method == "naive_sghmc" else f"{row.acceptance_mean:.3f} ± {row.acceptance_sd:.3f}"
        verdict = "" if method == "naive_sghmc" else f" ({VERSUS_PUBLISHED[versus_published[method].verdict]})"
        lines.append(f"| {label} | {published} | {ours}{verdict} | {row.kl_pq_mean:.4f} |")
    seeds = table.attrs["seeds"]
    text = "\n".join(lines) + (
        f"\n\nSettings (slides, SPEC §4.6): ε = 0.1, m = 10 inner steps per trajectory, C = 1, B̂ = εV/2 = 0.2 "
        f"(injected noise N(0, ε(2C − εV))), V = 4, r ~ N(0, 1) before every trajectory, exact U in the MH test. "
        f"{table.attrs['n_chains'] * table.attrs['n_kept']:,} samples per seed = {table.attrs['n_chains']} chains x "
        f"{table.attrs['n_kept']} kept trajectories after {table.attrs['burn_in']} burn-in trajectories (chains start at "
        f"θ ~ N(0, 1)); acceptance = mean MH acceptance probability over the kept trajectories; "
        f"{len(seeds)} seed{'s' if len(seeds) > 1 else ''} {seeds}.\n\n")
    wide = sweep.pivot_table(index="m", columns="label", values="acceptance").reset_index()
    text += ("### Acceptance against m (ε = 0.1, seed 10, same chain counts; `acceptance_vs_m.png`)\n\n"
             + wide.to_markdown(index=False, floatfmt=".3f"))
    naive = sweep[sweep.method == "naive_sghmc_mh"].set_index("m").acceptance
    published = {method: ACCEPTANCE_METHODS[method][2] for method in ("naive_sghmc_mh", "sghmc_mh")}
    text += ACCEPTANCE_NOTES.format(
        sghmc_published=versus_published["sghmc_mh"].sentence("SGHMC + MH", f"published {published['sghmc_mh']}"),
        naive_published=versus_published["naive_sghmc_mh"].sentence("naive SGHMC + MH",
                                                                    f"published {published['naive_sghmc_mh']}"),
        ordering10=compare(per_seed["naive_sghmc_mh"], per_seed["sghmc_mh"]).sentence("naive SGHMC + MH", "SGHMC + MH"),
        n_seeds=len(per_seed["sghmc_mh"]),
        naive10=_sweep_value(sweep, "naive_sghmc_mh", 10), naive50=_sweep_value(sweep, "naive_sghmc_mh", 50),
        sghmc10=_sweep_value(sweep, "sghmc_mh", 10, 1.0), sghmc50=_sweep_value(sweep, "sghmc_mh", 50, 1.0),
        sghmc50c3=_sweep_value(sweep, "sghmc_mh", 50, 3.0), independent=independent, n_pairs=n_pairs,
        naive_062=_where_crossing(naive, 0.62), bias_table=_bias_markdown(bias),
        regions="; ".join(region_sentences[method] for method in BIAS_LABELS if method in region_sentences),
        bias_samples=int(bias.n_samples.iloc[0]), bias_chains=int(bias.n_chains.iloc[0]), bias_kept=int(bias.n_kept.iloc[0]))
    return text


REGIONS = {"modes_0.8_to_1.2": (0.8, 1.2), "barrier_below_0.2": (0.0, 0.2), "tails_above_1.4": (1.4, 3.0)}


def region_ratios(samples: np.ndarray, target) -> dict:
    """Per region of :data:`REGIONS`: each chain's sample fraction in |θ| ∈ [a, b) over the exact mass (1 = exact),
    an array over chains (the chain dimension first); the mean over chains is the pooled ratio."""
    theta = np.abs(samples.reshape(samples.shape[0], -1))
    out = {}
    for name, (low, high) in REGIONS.items():
        mass = 2.0 * float(bin_masses_1d(target.log_density, np.array([low, high]))[0])
        out[name] = np.mean((theta >= low) & (theta < high), axis=1) / mass
    return out


def region_sentence(label: str, ratios: dict) -> str:
    """E.g. "SGHMC + MH: modes above 1 (1.041 ± 0.004), barrier below 1 (...)": each q/p against the exact 1 with
    the standard error over chains (SPEC §4.15, chains where one seed is run)."""
    words = {"above": "above 1", "below": "below 1", "tie": "a tie with 1"}
    parts = []
    for name, values in ratios.items():
        versus_exact = compare_to_value(values, 1.0)
        parts.append(f"{name.split('_')[0]} {words[versus_exact.verdict]} ({values.mean():.3f} ± "
                     f"{versus_exact.standard_error:.3f})")
    return f"{label}: " + ", ".join(parts)


def _where_crossing(series: pd.Series, level: float) -> str:
    """Between which two m the acceptance crosses ``level`` (series indexed by m, decreasing)."""
    ms = sorted(series.index)
    for low, high in zip(ms, ms[1:]):
        if (series[low] - level) * (series[high] - level) <= 0:
            return f"between m = {low} and m = {high}"
    return f"outside the measured m = {ms[0]}–{ms[-1]}"


BIAS_LABELS = {"sghmc_no_mh": "SGHMC trajectories, no test (C = 1)", "sghmc_mh": "SGHMC + MH (C = 1)",
               "naive_sghmc_mh": "naive SGHMC + MH"}


def _bias_markdown(bias: pd.DataFrame) -> str:
    frame = pd.DataFrame([{"method": BIAS_LABELS[m], "acceptance": "—" if m == "sghmc_no_mh" else f"{row.acceptance:.3f}",
                           "KL(p‖q)": f"{row.kl_pq:.2g}",
                           "q/p modes, 0.8 ≤ abs θ < 1.2": f"{row['modes_0.8_to_1.2']:.3f}",
                           "q/p barrier, abs θ < 0.2": f"{row['barrier_below_0.2']:.3f}",
                           "q/p tails, abs θ ≥ 1.4": f"{row['tails_above_1.4']:.3f}",
                           "samples": int(row.n_samples)} for m, row in bias.iterrows()])
    return frame.to_markdown(index=False)


def _sweep_value(sweep, method, m, friction=None) -> str:
    rows = sweep[(sweep.method == method) & (sweep.m == m)]
    if friction is not None:
        rows = rows[rows.C == friction]
    return f"{float(rows.acceptance.iloc[0]):.3f}" if len(rows) else "—"


def fig1_panel(paper, results, summary: Summary) -> str:
    samples, kls, rows = {}, {}, []
    for item, metrics in results:
        labels = item.label_dict
        if labels["panel"] != "fig1":
            continue
        key = (labels["target"], labels["method"])
        samples[key] = load_samples(paper, _record(paper, item))
        final = metrics["final"]
        kls[key] = final.get("kl_pq", np.nan)
        outside = float(np.mean(np.abs(samples[key]) > 3.0))
        rows.append({"target": labels["target"], "method": labels["method"], "kl_pq": final.get("kl_pq"),
                     "kl_qp": final.get("kl_qp"), "second_moment_error": final.get("second_moment_error"),
                     "fraction_outside_3": outside, "acceptance_all_steps": metrics["acceptance_rate"],
                     "n_samples": metrics["n_samples"], "status": metrics["status"]})
        for quantity in ("kl_pq", "kl_qp", "second_moment_error"):
            summary.add("fig1", labels["method"], quantity, final.get(quantity), target=labels["target"],
                        n_samples=metrics["n_samples"])
        summary.add("fig1", labels["method"], "fraction_outside_[-3,3]", outside, target=labels["target"])
        if metrics["acceptance_rate"] is not None:
            summary.add("fig1", labels["method"], "acceptance_rate_all_steps", metrics["acceptance_rate"],
                        target=labels["target"])
    draw_fig1(samples, kls, paper.path / "fig1_histograms.png")
    frame = pd.DataFrame(rows)
    verdicts = []
    for target in FIG1_TARGETS:
        part = frame[frame.target == target].set_index("method")
        others = part.drop(index="naive_sghmc")
        verdicts.append(f"{target}: naive SGHMC without MH KL {part.kl_pq['naive_sghmc']:.3g}, "
                        f"{part.kl_pq['naive_sghmc'] / others.kl_pq.max():.0f} times the largest of the other three "
                        f"({others.kl_pq.idxmax()}, {others.kl_pq.max():.2g}); E θ² error "
                        f"{part.second_moment_error['naive_sghmc']:.3f} against ≤ {others.second_moment_error.max():.3f}")
    return frame.drop(columns="status").to_markdown(index=False, floatfmt=".3g") + FIG1_NOTES.format(
        verdicts="; ".join(verdicts))


def phase_panel(paper, smoke, summary: Summary) -> str:
    traces = phase_space_traces(30 if smoke else PHASE["n_points"], PHASE["inner_steps"])
    draw_phase(traces, paper.path / "fig2_phase_space.png")
    rows = []
    for name, points in traces.items():
        energy = 0.5 * (points**2).sum(axis=1)
        third = max(1, len(energy) // 3)
        pd.DataFrame({"dynamics": name, "point": np.arange(1, len(points) + 1), "theta": points[:, 0],
                      "r": points[:, 1]}).to_csv(paper.path / f"fig2_trace_{name}.csv", index=False)
        values = {"H_mean": energy.mean(), "H_mean_first_third": energy[:third].mean(),
                  "H_mean_last_third": energy[-third:].mean(), "H_max": energy.max(), "H_min": energy.min()}
        rows.append({"dynamics": name, **values})
        for quantity, value in values.items():
            summary.add("fig2", name, quantity, float(value),
                        note="H = theta^2/2 + r^2/2 over the recorded points; start H = 0.5")
    frame = pd.DataFrame(rows).set_index("dynamics")
    return frame.reset_index().to_markdown(index=False, floatfmt=".3f") + PHASE_NOTES.format(
        exact_min=frame.H_min["exact"], exact_max=frame.H_max["exact"],
        noisy_first=frame.H_mean_first_third["noisy"], noisy_last=frame.H_mean_last_third["noisy"],
        resampled=frame.H_mean["noisy_resampled"], sghmc=frame.H_mean["sghmc"],
        sghmc_first=frame.H_mean_first_third["sghmc"], sghmc_last=frame.H_mean_last_third["sghmc"])


def fig3_panel(paper, results, summary: Summary) -> str:
    target = make_target("gaussian_2d_cov")
    rows, paths = [], {}
    for item, metrics in results:
        labels = item.label_dict
        if labels["panel"] == "fig3b":
            paths[labels["method"]] = load_samples(paper, _record(paper, item))
            for quantity, value in long_axis_summary(paths[labels["method"]]).items():
                summary.add("fig3b", labels["method"], quantity, value, target="gaussian_2d_cov",
                            n_chains=metrics["n_chains"], note="from (0, 0), first 50 steps; exact long-axis sd 1.378")
            continue
        if labels["panel"] != "fig3a":
            continue
        error, se = covariance_error(load_samples(paper, _record(paper, item)), target.covariance)
        tau = metrics["final"].get("autocorrelation_time", np.nan)
        setting_labels = {k: labels[k] for k in ("index", "eta", "alpha", "step_size", "friction")}
        rows.append({"method": labels["method"], **setting_labels, "autocorrelation_time": tau,
                     "covariance_error": error, "covariance_se": se, "n_samples": metrics["n_samples"]})
        summary.add("fig3a", labels["method"], "autocorrelation_time_steps", tau, target="gaussian_2d_cov", **setting_labels)
        summary.add("fig3a", labels["method"], "covariance_error", error, sd=se, target="gaussian_2d_cov",
                    **setting_labels, note="mean |Cov_hat - Sigma| over the 4 entries; sd = MC standard error of the entries")
    fig3a = pd.DataFrame(rows)
    draw_fig3(fig3a, paths, paper.path / "fig3_bivariate_gaussian.png")
    sgld = fig3a[fig3a.method == "sgld"].sort_values("autocorrelation_time")
    sghmc = fig3a[fig3a.method == "sghmc"]
    inside = sghmc[(sghmc.autocorrelation_time >= sgld.autocorrelation_time.min())
                   & (sghmc.autocorrelation_time <= sgld.autocorrelation_time.max())]
    sgld_at = np.interp(inside.autocorrelation_time, sgld.autocorrelation_time, sgld.covariance_error)
    ratios = sgld_at / inside.covariance_error.to_numpy()
    comparison = (f"at the {len(inside)} SGHMC settings whose autocorrelation time lies inside SGLD's range "
                  f"({sgld.autocorrelation_time.min():.1f}–{sgld.autocorrelation_time.max():.1f} steps), SGLD's error "
                  f"(interpolated at the same time) is {ratios.min():.1f} to {ratios.max():.0f} times SGHMC's"
                  if len(inside) else "the two autocorrelation-time ranges do not overlap")
    explore = {method: long_axis_summary(points) for method, points in paths.items()}
    table = fig3a.to_markdown(index=False, floatfmt=".4g")
    explore_table = pd.DataFrame(explore).T.reset_index(names="method").to_markdown(index=False, floatfmt=".3f")
    return table + FIG3_NOTES.format(
        comparison=comparison, sghmc_max_ratio=float((sghmc.covariance_error / sghmc.covariance_se).max()),
        sghmc_min_ratio=float((sghmc.covariance_error / sghmc.covariance_se).min()),
        sghmc_second_ratio=float(np.sort((sghmc.covariance_error / sghmc.covariance_se).to_numpy())[-2]),
        sghmc_max_index=int(sghmc.loc[(sghmc.covariance_error / sghmc.covariance_se).idxmax(), "index"]),
        sghmc_max_eta=float(sghmc.loc[(sghmc.covariance_error / sghmc.covariance_se).idxmax(), "eta"]),
        sgld_min_ratio=float((sgld.covariance_error / sgld.covariance_se).min()), explore_table=explore_table,
        n_chains_3b=paths["sgld"].shape[0], **{f"{m}_{k}": v for m, d in explore.items() for k, v in d.items()})


def main(argv=None) -> None:
    args = parse_args(__doc__.splitlines()[0], argv)
    started = time.perf_counter()
    paper = PaperFolder.create(FIGURE_ID, args.root)
    print(f"{FIGURE_ID}: writing {paper.path}", flush=True)
    settings = (acceptance_settings(args.smoke) + mh_bias_settings(args.smoke) + fig1_settings(args.smoke)
                + fig3a_settings(args.smoke) + fig3b_settings())
    results = run_settings(paper, settings, jobs=args.jobs)
    summary = Summary()
    parts = ["**Smoke run: tiny chains, the numbers and verdicts below mean nothing.**\n" if args.smoke else "",
             "## 1. Acceptance table (slides; SPEC E7)\n", acceptance_panel(paper, results, args.smoke, summary),
             "\n## 2. Paper Fig. 1 with the code settings (`fig1_histograms.png`)\n", fig1_panel(paper, results, summary),
             "\n## 3. Paper Fig. 2: phase space (`fig2_phase_space.png`, `fig2_trace_*.csv`)\n",
             phase_panel(paper, args.smoke, summary),
             "\n## 4. Paper Fig. 3a/3b: bivariate Gaussian (`fig3_bivariate_gaussian.png`)\n",
             fig3_panel(paper, results, summary)]
    paper.write_summary(summary.frame(), "SGHMC slides (Chen, Fox & Guestrin 2014): ours beside the published", "",
                        body="\n".join(parts))
    wall = time.perf_counter() - started
    paper.finish({"smoke": args.smoke, "jobs": args.jobs, "wall_time_s": wall, "acceptance_seeds": list(ACCEPTANCE_SEEDS),
                  "sweep": {"m": list(SWEEP_STEPS), "C": list(SWEEP_FRICTIONS), "seed": SWEEP_SEED},
                  "phase_space": {**PHASE, "B_hat_code_notation": 0.5 * PHASE["noise_variance"] * PHASE["step_size"],
                                  "note": "samplers called from Python, no run folders"},
                  "fig3b": FIG3B}, sys.argv)
    print(f"done in {wall:.1f} s")
    print(paper.path)


ACCEPTANCE_NOTES = """

**SGHMC + MH** (sampler `sghmc_mh`: per outer step r ~ N(0, 1), m steps of Chen et al. Alg. 2,
θ ← θ + εr; r ← r − ε∇Ũ(θ) − εCr + N(0, 2(C − B̂)ε), then the test min(1, exp(H_old − H_new)) with the
exact U) at the slide settings, over {n_seeds} seeds (the published values carry no error bar; the standard
error is that of our seed mean): {sghmc_published}. **Naive SGHMC + MH** (`naive_sghmc`: leapfrog with the
noisy gradient, one noise draw per kick, the test on the exact H): {naive_published}. At the slides' m = 10,
{ordering10}. In the sweep over m (one seed per point, so no verdict): naive SGHMC + MH accepts {naive10} at
m = 10 and {naive50} at m = 50 (the code's setting), and the published 0.62 lies {naive_062}; the gradient
noise random-walks the energy along the trajectory. SGHMC + MH accepts {sghmc10} at m = 10 and {sghmc50} at
m = 50 with C = 1, and {sghmc50c3} with C = 3, m = 50: with friction the end of a trajectory is close to a
fresh draw, and the acceptance of the H test between two *independent exact* draws of (θ, r) is
{independent:.3f} (Monte Carlo, {n_pairs:,} pairs). The slides do not say how naive SGHMC was integrated;
the authors' code (`hmc.m`) draws fresh noise for each half kick, which halves the per-step energy noise.

**The MH test on a friction trajectory is not an exact correction.** That trajectory is neither
volume preserving nor reversible, so min(1, exp(H_old − H_new)) is not its Metropolis–Hastings ratio.
Measured at the slide settings with {bias_chains} chains x {bias_kept} kept trajectories
({bias_samples:,} samples, seed 0):

{bias_table}

(q/p = fraction of the samples in the region over its exact probability; 1 is exact.) Each q/p against 1,
mean ± standard error over the chains (one seed): {regions}. Naive SGHMC + MH is a valid Metropolis–Hastings
chain: its leapfrog proposal is volume preserving and reversible for every draw of the gradient noise.
"""

FIG1_NOTES = """

Published (SGHMC paper Fig. 1; code `figure1.m` / `hmccmp.m`; the figure is described, not re-read
here): HMC with MH, naive SGHMC with MH and SGHMC follow the true density; naive SGHMC without MH is
visibly too wide. Ours (KL(p‖q) from each run's metrics.json, one seed): {verdicts}. Settings: ε = 0.1, V = 4; HMC / naive SGHMC use
m = 50 leapfrog steps per sample, r resampled before every trajectory, exact U in the MH test,
1000 chains x 80 kept trajectories after 20; SGHMC uses C = 3, B̂ = εV/2 = 0.2 (noise_estimate known) and
the code's order (r then θ: our splitting integrator), 1000 chains x (1000 burn-in + 4000) steps keeping
every 50th step = 80,000 samples (the code resamples r every 50 steps; ours never does, which leaves the
stationary law unchanged). Chains start at θ ~ N(0, 1) (the code starts at θ = 0). KL on the SPEC §3 grid
(0.1 bins on [−3, 3]).
"""

PHASE_NOTES = """

Published (SGHMC paper Fig. 2, code `figure2.m`; described from the code's legend and the paper as
recalled, SPEC quotes no text for it): exact Hamiltonian dynamics stays on a circle; noisy
Hamiltonian dynamics spirals outwards; resampling r every 50 steps keeps the points bounded but
spread out; with friction and noise correction (SGHMC) the points stay near the origin. Ours:
H = θ²/2 + r²/2 of the exact leapfrog stays in [{exact_min:.3f}, {exact_max:.3f}] (start 0.5);
the noisy dynamics' mean H grows from {noisy_first:.2f} (first third of the points) to {noisy_last:.2f}
(last third); with resampling the mean H is {resampled:.2f} and with SGHMC {sghmc:.2f} (first/last third
{sghmc_first:.2f}/{sghmc_last:.2f}); the stationary N(0, I) in (θ, r) has E H = 1. Settings:
U = θ²/2, ∇Ũ = θ + N(0, 0.25), ε = 0.1, C = 3, B̂ = ½(0.5)²ε = 0.0125 (noise_estimate known),
start (θ, r) = (1, 0) (SGHMC: θ = 1 and r₀ ~ N(0, 1) from the sampler's init, which moves its first point by about
0.05·r₀ and its third by 0.001·r₀), 300 points each after 50 inner steps, one random stream (seed 10).
`leapfrog` (experiments/sghmc_slides.py) with the exact or noisy gradient and r carried over (exact, noisy); the samplers
as one-chain runs (`sgmcmc.runner.run_chains`, no run folders) followed by a `PathObserver`: `naive_sghmc`
without MH (r ~ N(0, 1) before each trajectory); `sghmc` with the splitting integrator (the code's r-then-θ order). Our noisy leapfrog
draws one gradient noise per kick, the code one per half kick, so our per-step energy noise is twice
the code's and our spiral grows faster.
"""

FIG3_NOTES = """

Published (SGHMC paper Fig. 3a, code `figure3a.m`; described from the paper as recalled, SPEC quotes no
text for it): at equal autocorrelation time SGHMC estimates the
covariance with a lower error than SGLD. Ours: {comparison}. SGLD's error is its O(η)
discretisation bias (at least {sgld_min_ratio:.0f} times its Monte Carlo standard error) and falls as η
shrinks. SGHMC's errors are {sghmc_min_ratio:.1f} to {sghmc_max_ratio:.1f} times its Monte Carlo standard
error (dotted lines in the figure); the largest is at i = {sghmc_max_index} (η = {sghmc_max_eta:.3g}), the others
are at most {sghmc_second_ratio:.1f} standard errors: at our sample size the SGHMC errors are mostly
Monte Carlo noise, not SGHMC's own bias.

Fig. 3b, published: in the first 50 steps from (0, 0) SGHMC travels along the long axis of the
distribution, SGLD random-walks. Ours: the figure shows chain 0 of each; over {n_chains_3b} chains from
(0, 0) (coordinate along the long axis (1, 1)/√2; its exact sd is 1.378):

{explore_table}

SGHMC's spread along the long axis after 10 steps is {sghmc_long_axis_sd_step10:.2f} against SGLD's
{sgld_long_axis_sd_step10:.2f}, and it covers a longer stretch of that axis in 50 steps
({sghmc_long_axis_range_mean:.2f} against {sgld_long_axis_range_mean:.2f}) with shorter steps
({sghmc_step_length_mean:.2f} against {sgld_step_length_mean:.2f}); one seed.

Settings: target `gaussian_2d_cov` (Σ = [[1, .9], [.9, 1]], V = I). SGLD: step_size ε = η, noise
N(0, 2η − η²) (noise_estimate known). SGHMC: the (η, α) form mapped to ε = √η, C = α/√η, M = 1, noise
N(0, ε(2C − ε)) (= the code's N(0, 2η(α − β̂)) on v = εr with β̂ = η/2), r₀ ~ N(0, 1), splitting integrator
(the code's order). Fig. 3a: the code runs one chain of 10⁷ steps per setting; we run 100 chains x 20,000
steps (1000 burn-in): 1.9·10⁶ kept samples per setting, unthinned, so the autocorrelation time (SPEC §3
estimator, averaged over the two coordinates, each run's metrics.json) is in steps; Ĉov of the pooled
samples; Monte Carlo standard error = sd of the per-chain covariances / √100. Seed 20 (the code's).
"""


if __name__ == "__main__":
    main()
