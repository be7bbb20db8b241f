#!/usr/bin/env python
"""Stationarity check of a sampler's continuous dynamics (Ma et al. 2015, Eq. 3 and Theorem 1;
SPEC §0 K1): the Fokker–Planck residual of p ∝ exp(−H) on a grid over z, see
:mod:`sgmcmc.stationarity`.

    python check.py sampler=sghmc target=double_well [sampler.step_size=0.1 target.noise_variance=4 ...]
    python check.py --all [target=double_well] [target.KEY=V] [sampler.KEY=V]   # every registered sampler
    python check.py --all --no-ksd ...                                           # without the KSD table
    options: --grid N (points on every axis of z) or N1,N2,... (one per axis); --order 2|4

The config is composed from ``configs/`` exactly as ``run.py`` does (the same overrides and the same
validation); the check uses the sampler's ``step_size`` (ε₀ of a schedule). It reports the relative
residual on the grid and on the same box at half the resolution, and a verdict:
"stationary" (the residual shrinks under refinement and is below the threshold,
``sgmcmc.stationarity.STATIONARY_THRESHOLD`` = 1e-2), "NOT stationary" (it does not shrink: a defect
of the dynamics) or "unresolved" (still shrinking, above the threshold: give a finer ``--grid``).

A bad config value, group name or option prints one line ``error: ...`` on stderr and exits 2.
A completed check exits 0 whatever the verdict; a sampler whose D or Q violates the recipe exits 1.
With ``--all`` a sampler that cannot be built or checked shows the reason in its row; exit 0.

``--all`` then prints a second table (``--no-ksd`` leaves it out): the IMQ kernel Stein discrepancy
(:mod:`sgmcmc.diagnostics.stein`; Gorham & Mackey 2017) of every sampler's run on ``KSD_TARGET`` (the 2-D Gaussian
``gaussian_2d_cov``, whatever the stationarity table's target) at its default step size and run length (composed as
``python run.py sampler=S target=gaussian_2d_cov``, with the command line's ``sampler.*`` values), from the last state
of each of ``KSD_CHAINS`` chains (independent points), beside the KSD of as many exact draws and the level
sqrt(E_p k0(X, X)/n) = sqrt((tr Σ⁻¹ + d)/n) that an exact sample's KSD has on average (about 10 s in all).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
CONFIG_DIR = ROOT / "configs"
DEFAULT_ALL_TARGET = "double_well"
KSD_TARGET = "gaussian_2d_cov"  # the KSD table's target: exact draws from its covariance
KSD_CHAINS = 1000  # the KSD table's chains: one point each (the last state), as many exact draws


def fail(message: str, code: int = 2) -> None:
    """One line on stderr, no traceback."""
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):  # argparse's default prints the usage too (several lines)
        fail(f"{message} (usage: python check.py [--all] [--grid N] [--order 2|4] [key=value ...])")


def parse_arguments(argv: list[str]):
    parser = OneLineParser(prog="check.py", add_help=True, description="Fokker–Planck stationarity residual of a sampler's continuous dynamics (Ma et al. 2015, Eq. 3 and Theorem 1). Overrides compose configs/ as for run.py.")
    parser.add_argument("--all", action="store_true", help=f"check every registered sampler (target default: {DEFAULT_ALL_TARGET})")
    parser.add_argument("--grid", default=None, help="points per axis of z: N, or N1,N2,... one per axis")
    parser.add_argument("--order", type=int, choices=(2, 4), default=None, help="order of the finite differences (default 4)")
    parser.add_argument("--no-ksd", action="store_true", help=f"--all: leave out the kernel Stein discrepancy table "
                                                               f"(every sampler's run on {KSD_TARGET})")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides as for run.py (sampler=..., target=..., key=value)")
    args = parser.parse_args(argv)
    for override in args.overrides:
        if override.startswith("-"):
            fail(f"unknown option {override!r}")
    if args.grid is not None:
        try:
            points = [int(part) for part in args.grid.split(",")]
        except ValueError:
            fail(f"--grid={args.grid!r} is invalid: expected N or N1,N2,... (integers >= 3)")
        if any(n < 3 for n in points):
            fail(f"--grid={args.grid!r} is invalid: every axis needs at least 3 points")
        args.grid = points[0] if len(points) == 1 else points
    return args


# -- composing configs (as run.py does) ------------------------------------------------------------
def parse_overrides(overrides: list[str]):
    """Hydra's parser on the overrides; unknown group choices fail with one line (:mod:`sgmcmc_cli.overrides`)."""
    from sgmcmc.config import ConfigError
    from sgmcmc_cli.overrides import check_group_choices
    from sgmcmc_cli.sweep import overrides_parser

    try:
        parsed = overrides_parser().parse_overrides(overrides)
    except Exception as error:  # Hydra's grammar errors: keep the first line only
        fail(f"cannot parse the command line: {str(error).strip().splitlines()[0]}")
    for override in parsed:
        if override.is_sweep_override():
            fail(f"{override.input_line!r}: sweeps are not supported by check.py (use --all for every sampler)")
    try:
        check_group_choices(parsed, CONFIG_DIR)
    except ConfigError as error:
        fail(str(error))
    return parsed


def check_keys(parsed) -> None:
    """The keys the overrides set are declared (as run.py checks them before composing): one line if not."""
    from sgmcmc.config import ConfigError
    from sgmcmc_cli.overrides import check_keys as check_declared

    try:
        check_declared(parsed, CONFIG_DIR)
    except ConfigError as error:
        fail(str(error))


def compose(overrides: list[str]) -> dict:
    """The resolved config dict for ``overrides`` (raises Hydra's errors)."""
    from hydra import compose as hydra_compose
    from omegaconf import OmegaConf

    config = hydra_compose(config_name="config", overrides=overrides)
    container = OmegaConf.to_container(config, resolve=True)
    container.pop("hydra", None)
    return container


def build(container: dict):
    """(sampler, target, step size) from a config dict; raises ConfigError."""
    from sgmcmc.experiment import build as build_experiment

    built = build_experiment(container)
    return built.sampler, built.target, float(container["sampler"]["step_size"])


# -- the checks ------------------------------------------------------------------------------------
def measure(sampler, step_size: float, grid_points, order):
    """Residuals on the grid and on the same box at half the resolution, and the verdict."""
    from sgmcmc.stationarity import DEFAULT_ORDER, default_grid, sampler_stationarity, verdict

    order = DEFAULT_ORDER if order is None else order
    grid = default_grid(sampler, grid_points)
    fine = sampler_stationarity(sampler, step_size, grid=grid, order=order)
    coarse = sampler_stationarity(sampler, step_size, grid=grid.coarsened(), order=order)
    return coarse, fine, verdict(coarse, fine)


def z_label(sampler) -> str:
    from sgmcmc.stationarity import state_blocks

    d, m, xi = state_blocks(sampler)
    return ",".join(["θ"] + (["r"] if m else []) + (["ξ"] if xi is not None else [])) + f" ({d + m + (xi is not None)}D)"


def describe_sampler(sampler, target, step_size: float) -> str:
    import numpy as np

    stochastic = getattr(sampler, "uses_stochastic_gradient", True)
    parts = [f"step_size={step_size:g}"]
    variance = target.noise_covariance(np.zeros((1, target.dim)))
    if variance is not None:
        diagonal = sorted(set(np.round(np.diag(np.atleast_2d(np.asarray(variance).reshape(-1, target.dim, target.dim)[0])), 6)))
        parts.append("V=" + "/".join(f"{v:g}" for v in diagonal) + ("" if stochastic else " (unused: exact gradient)"))
    parts.append(f"noise_estimate={noise_handling(sampler, step_size)}")
    return ", ".join(parts)


def noise_handling(sampler, step_size: float = 0.0) -> str:
    """How the sampler treats the gradient noise: its noise_estimate when it subtracts B̂, else why not."""
    if not getattr(sampler, "uses_stochastic_gradient", True):
        return "exact gradient"
    try:
        subtracts = sampler.recipe_at(step_size).noise_covariance is not None
    except Exception:
        return "-"
    return getattr(sampler, "noise_estimate", "-") if subtracts else "none (B=0)"


def check_one(args) -> None:
    from hydra import initialize_config_dir

    from sgmcmc.config import ConfigError
    from sgmcmc.recipe import RecipeError
    from sgmcmc_cli.overrides import compose_error_line
    from sgmcmc.stationarity import STATIONARY_THRESHOLD

    check_keys(parse_overrides(args.overrides))
    try:
        with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
            container = compose(args.overrides)
    except Exception as error:
        fail(compose_error_line(error))
    try:
        sampler, target, step_size = build(container)
    except ConfigError as error:
        fail(str(error))
    try:
        start = time.perf_counter()
        coarse, fine, outcome = measure(sampler, step_size, args.grid, args.order)
        elapsed = time.perf_counter() - start
    except RecipeError as error:
        fail(f"sampler {sampler.name}: {error}", code=1)
    except (ValueError, TypeError) as error:
        fail(f"sampler {sampler.name} on {target.name}: {error}")
    shape = " x ".join(map(str, fine.grid_shape))
    box = " x ".join(f"[{lo:g}, {hi:g}]" for lo, hi in fine.bounds)
    ratio = coarse.relative_residual / fine.relative_residual if fine.relative_residual > 0 else float("inf")
    print(f"sampler {sampler.name} on {target.name}: {describe_sampler(sampler, target, step_size)}")
    note = getattr(sampler, "recipe_note", lambda: None)()
    if note:
        print(f"note: {note}")
    print(f"z = {z_label(sampler)}: grid {shape} over {box}, central differences of order {fine.order}")
    print(f"relative residual    {fine.relative_residual:.3e}   (half resolution: {coarse.relative_residual:.3e}, ratio {ratio:.1f})")
    print(f"max |L*p| / max term {fine.max_relative_residual:.3e}   (max |L*p| = {fine.max_abs_residual:.3e} with max p = 1)")
    print(f"verdict: {outcome}   (threshold {STATIONARY_THRESHOLD:g}; {elapsed:.1f} s)")
    if outcome.startswith("NOT") and (target.has_exact_density or target.has_exact_moments):
        print(measured_bias(sampler, target, step_size))


BIAS_CHAINS, BIAS_STEPS = 1000, 4000  # the measured bias of a NOT stationary sampler: chains (one mean each) x steps


def measured_bias(sampler, target, step_size: float) -> str:
    """The bias a NOT stationary verdict means, measured: E θ_j² over ``BIAS_CHAINS`` chains of ``BIAS_STEPS`` steps
    at ``step_size`` (a quarter burn-in, each chain's time average one independent value) against the exact E θ_j²,
    for the coordinate furthest off in standard errors (a few seconds on a toy target)."""
    import numpy as np

    from sgmcmc.config import RunOptions
    from sgmcmc.runner import run_chains
    from sgmcmc.schedules import Constant

    settings = RunOptions(n_steps=BIAS_STEPS, n_chains=BIAS_CHAINS, burn_in=BIAS_STEPS // 4, eval_every=BIAS_STEPS,
                          progress=False)
    outcome = run_chains(sampler, Constant(step_size), settings, np.random.default_rng(0))
    if outcome.status != "completed":
        return f"measured: the run at step_size={step_size:g} did not complete ({outcome.status}: {outcome.error})"
    per_chain = np.mean(outcome.samples**2, axis=1)  # (chains, d)
    mean, error = per_chain.mean(axis=0), per_chain.std(axis=0, ddof=1) / np.sqrt(per_chain.shape[0])
    exact = np.asarray(target.exact_moments()[1], dtype=float)
    worst = int(np.argmax(np.abs(mean - exact) / np.maximum(error, 1e-300)))
    return (f"measured: E θ{worst + 1}² = {mean[worst]:.4f} ± {error[worst]:.4f} against the exact {exact[worst]:.4f} "
            f"({(mean[worst] - exact[worst]) / error[worst]:+.1f} standard errors; {BIAS_CHAINS} chains x "
            f"{BIAS_STEPS} steps at step_size={step_size:g}, seed 0)")


def composed_and_built(overrides: list[str], make):
    """(config, make(config), None) of the composed ``overrides`` (inside ``initialize_config_dir``), or (None, None,
    the one-line reason why not: a config error, or a config that does not compose) for a row of ``--all``'s tables."""
    from sgmcmc.config import ConfigError
    from sgmcmc_cli.overrides import compose_error_line

    try:
        container = compose(overrides)
        return container, make(container), None
    except ConfigError as error:
        return None, None, f"config error: {error}"
    except Exception as error:
        return None, None, f"no config: {compose_error_line(error)}"


def sampler_keys(name: str) -> set:
    import yaml

    path = CONFIG_DIR / "sampler" / f"{name}.yaml"
    return set((yaml.safe_load(path.read_text()) or {}).keys()) if path.is_file() else set()


def check_all(args) -> None:
    import pandas as pd
    from hydra import initialize_config_dir

    from sgmcmc.samplers import SAMPLERS
    from sgmcmc.stationarity import CONVERGING_RATIO, DEFAULT_ORDER, STATIONARY_THRESHOLD
    from sgmcmc_cli.overrides import compose_error_line

    parsed = parse_overrides(args.overrides)
    for override in parsed:
        if override.key_or_group == "sampler":
            fail("--all checks every sampler: drop the sampler=... override")
    if not any(override.key_or_group == "target" for override in parsed):
        args.overrides = [f"target={DEFAULT_ALL_TARGET}", *args.overrides]
    sampler_overrides = {o.input_line: o.key_or_group.split(".", 1)[1] for o in parsed if o.key_or_group.startswith("sampler.")}
    names = list(SAMPLERS)
    for line, key in sampler_overrides.items():
        if not any(key in sampler_keys(name) for name in names):
            fail(f"{line!r}: no sampler has the key {key!r}")

    rows, target_name, start = [], None, time.perf_counter()
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        check_keys([o for o in parsed if not o.key_or_group.startswith("sampler.")])  # sampler.*: checked above
        try:  # the common part (target, run, ...) once, so a bad target stops here with one line
            compose([o for o in args.overrides if not o.startswith("sampler.")])
        except Exception as error:
            fail(compose_error_line(error))
        for name in names:
            keys = sampler_keys(name)
            own = [line for line, key in sampler_overrides.items() if key in keys]
            common = [o for o in args.overrides if not o.startswith("sampler.")]
            row = {"sampler": name}
            if SAMPLERS[name].kind == "optimiser":
                rows.append({**row, "verdict": "optimiser: no stationary distribution to check"})
                continue
            container, built, reason = composed_and_built([f"sampler={name}", *common, *own], build)
            if reason is not None:
                rows.append({**row, "verdict": reason})
                continue
            sampler, target, step_size = built
            target_name = target.name
            row.update({"z": z_label(sampler), "step_size": step_size, "noise_estimate": noise_handling(sampler)})
            try:
                coarse, fine, outcome = measure(sampler, step_size, args.grid, args.order)
            except Exception as error:  # RecipeError, missing energy, unknown V: report, keep going
                rows.append({**row, "verdict": f"cannot check: {str(error).splitlines()[0]}"})
                continue
            row.update({
                "grid": "x".join(map(str, fine.grid_shape)),
                "residual (half grid)": f"{coarse.relative_residual:.2e}",
                "residual": f"{fine.relative_residual:.2e}",
                "ratio": f"{coarse.relative_residual / fine.relative_residual:.1f}" if fine.relative_residual > 0 else "inf",
                "verdict": outcome,
            })
            rows.append(row)
    table = pd.DataFrame(rows).fillna("")
    columns = ["sampler", "z", "grid", "step_size", "noise_estimate", "residual (half grid)", "residual", "ratio", "verdict"]
    table = table[[c for c in columns if c in table.columns]]
    order = DEFAULT_ORDER if args.order is None else args.order
    print(f"Fokker–Planck stationarity residual on {target_name or '?'} (Ma et al. 2015, Eq. 3 / Theorem 1), "
          f"central differences of order {order}")
    print(table.to_string(index=False))
    print(f"stationary: residual shrinks >= {CONVERGING_RATIO:g}x when h halves and is < {STATIONARY_THRESHOLD:g}; "
          f"NOT stationary: it does not shrink; unresolved: shrinking but >= {STATIONARY_THRESHOLD:g} (use a finer --grid). "
          f"HMC / MH samplers are checked as their continuous dynamics (the MH test is not modelled). "
          f"{time.perf_counter() - start:.1f} s")
    if not args.no_ksd:
        print()
        print_ksd_table(names, sampler_overrides)


def exact_draws_ksd(target, n_points: int, seeds: int = 20) -> tuple[float, float, float]:
    """The KSD of ``n_points`` exact draws of a Gaussian target: (its mean and standard deviation over ``seeds`` seeds,
    the level sqrt(E_p k0(X, X)/n) = sqrt((tr Σ⁻¹ + d)/n) whose square is E[KSD²] of an exact sample, c = 1, β = −1/2:
    :mod:`sgmcmc.diagnostics.stein`)."""
    import numpy as np

    from sgmcmc.diagnostics.stein import imq_ksd

    factor = np.linalg.cholesky(target.covariance)
    values = []
    for seed in range(seeds):
        draws = np.random.default_rng(seed).standard_normal((n_points, target.dim)) @ factor.T
        values.append(imq_ksd(draws, -target.gradient(draws)))
    level = np.sqrt((np.trace(target.precision) + target.dim) / n_points)
    return float(np.mean(values)), float(np.std(values, ddof=1)), float(level)


def ksd_verdict(value: float, baseline: tuple[float, float, float]) -> str:
    """'above exact draws' when ``value`` exceeds the exact draws' mean KSD by more than two of their standard
    deviations (one run against the spread of exact samples of the same size), else 'as exact draws'."""
    mean, sd, _ = baseline
    return "above exact draws" if value > mean + 2 * sd else "as exact draws"


def print_ksd_table(names, sampler_overrides: dict) -> None:
    """The IMQ KSD of every sampler's run on :data:`KSD_TARGET` (module docstring): the last state of
    :data:`KSD_CHAINS` chains after the composed config's ``run.n_steps`` (seed 0), beside the exact draws' KSD."""
    import numpy as np
    import pandas as pd
    from hydra import initialize_config_dir

    from sgmcmc.diagnostics.stein import target_ksd
    from sgmcmc.experiment import build as build_experiment
    from sgmcmc.config import RunOptions
    from sgmcmc.runner import run_chains
    from sgmcmc.samplers import SAMPLERS

    rows, start, baseline = [], time.perf_counter(), None
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        for name in names:
            row = {"sampler": name}
            if SAMPLERS[name].kind == "optimiser":
                rows.append({**row, "ksd": "optimiser: no samples"})
                continue
            own = [line for line, key in sampler_overrides.items() if key in sampler_keys(name)]
            container, built, reason = composed_and_built([f"sampler={name}", f"target={KSD_TARGET}", *own],
                                                          build_experiment)
            if reason is not None:
                rows.append({**row, "ksd": reason})
                continue
            target, step_size = built.target, float(container["sampler"]["step_size"])
            if baseline is None:
                baseline = exact_draws_ksd(target, KSD_CHAINS)
            run = container["run"]
            # thin = n_steps − burn_in: the last step is the only one kept
            settings = RunOptions(n_steps=run["n_steps"], n_chains=KSD_CHAINS, burn_in=run["burn_in"],
                                   thin=run["n_steps"] - run["burn_in"], eval_every=run["n_steps"], progress=False)
            try:
                outcome = run_chains(built.sampler, built.schedule, settings, np.random.default_rng(0))
                result = target_ksd(target, outcome.samples, KSD_CHAINS) if outcome.status == "completed" else None
            except Exception as error:
                rows.append({**row, "step_size": step_size, "ksd": f"cannot run: {str(error).splitlines()[0]}"})
                continue
            rows.append({**row, "step_size": f"{step_size:g}", "steps": str(run["n_steps"]), "points": str(KSD_CHAINS),
                         "ksd": f"{result.value:.3f}" if result is not None else outcome.status,
                         "ksd (exact draws)": f"{baseline[0]:.3f}",
                         "ratio": f"{result.value / baseline[0]:.1f}" if result is not None else "",
                         "verdict": "" if result is None else ksd_verdict(result.value, baseline)})
    table = pd.DataFrame(rows, dtype=object).fillna("")
    columns = ["sampler", "step_size", "steps", "points", "ksd", "ksd (exact draws)", "ratio", "verdict"]
    print(f"Kernel Stein discrepancy on {KSD_TARGET} (IMQ kernel c = 1, β = −1/2; Gorham & Mackey 2017): the last state "
          f"of {KSD_CHAINS} chains at each sampler's default step size, beside {KSD_CHAINS} exact draws")
    print(table[[c for c in columns if c in table.columns]].to_string(index=False))
    spread = f"{baseline[1]:.3f}" if baseline is not None else "?"
    level = f"{baseline[2]:.3f}" if baseline is not None else "?"
    print(f"exact draws: the mean KSD of {KSD_CHAINS} exact draws over 20 seeds (sd {spread}; E[KSD²]^½ = "
          f"sqrt(E k0(X, X)/n) = {level}); ratio = ksd / exact draws'; verdict: 'above exact draws' when the ksd "
          f"exceeds their mean by more than 2 sd, else 'as exact draws'; the runs use seed 0. "
          f"{time.perf_counter() - start:.1f} s")


def main(argv: list[str] | None = None) -> None:
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    if args.all:
        check_all(args)
    else:
        check_one(args)


if __name__ == "__main__":
    main()
