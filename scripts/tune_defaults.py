#!/usr/bin/env python
"""Choose each sampler's default step size on each toy target with an exact density, and write the result as
``configs/by_target/<target>/<sampler>.yaml`` (issue 18: defaults that work for every sampler × target).

    python scripts/tune_defaults.py                      # every toy target × every sampler config
    python scripts/tune_defaults.py --target lecture_quartic --sampler sgld [--dry-run]

For one (target, sampler config) pair the run is composed as ``python run.py target=T sampler=S ~by_target``
composes it: the target's run settings (chains, steps, burn-in) and the sampler's own values, without the pair's
file that this script writes, and scored like ``run.py`` scores it: KL(p‖q)
on the target's SPEC §3 grid and the largest error of E θ² over the pooled kept samples. A trajectory sampler
(``n_leapfrog`` steps per run step) first tries configs/config.yaml's shorter run where the target lengthens it
(:func:`run_overrides`), then the target's.

The rule: try the sampler config's own step size, then the values of :data:`GRID`, largest first; keep the first
that completes without divergence and passes the check (:func:`check_of`) at both seeds :data:`SEEDS`, KL(p‖q)
with a margin (:data:`KL_MARGIN`); a step size too small to mix in the target's steps fails it as a too large one
does. The test of the defaults (tests/test_defaults.py) applies the check itself at the default seed.
When the sampler config's own values (step size, noise estimate, run) already qualify, no file is written (and an
old one is removed). Every other pair gets a file whose comment records the scores that chose it. A pair that no
grid value qualifies is reported, and gets a file with the largest step size that completes at seed 0 (its comment
says so): its defaults need another look (steps, friction). Pair files that this script did not write
(:data:`WRITTEN_BY`) are left alone: their comments say how they were chosen.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CONFIG_DIR = ROOT / "configs"
BY_TARGET = CONFIG_DIR / "by_target"
sys.path.insert(0, str(ROOT))

# KL(p‖q) must be below this fraction of the check at both seeds. The E θ² error is recorded, not checked: its
# absolute bound of the accuracy tests suits unit-scale targets, not gaussian_2d_prec's variance of 5.3.
KL_MARGIN = 0.75
GRID = (0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 0.0005, 0.0002, 0.0001)
SEEDS = (0, 1)
# Samplers that are wrong on purpose (SPEC §0): no step size makes them pass the check; theirs is the largest that
# completes without divergence (and without refusal) at both seeds.
INCORRECT = ("naive_sghmc", "naive_sgrhmc", "psgld_no_gamma")
# the mark of a pair file this script wrote (others are kept as they are)
WRITTEN_BY = "written by `python scripts/tune_defaults.py"


def check_of(dim: int) -> tuple[float, float]:
    """(KL(p‖q) bound, E θ² error bound) of the sampling-accuracy tests (tests/samplers/test_sampling_accuracy.py):
    0.005 and 0.05 in 1D, 0.01 and 0.05 in 2D (finer grid, fewer samples per bin). The defaults are held to the KL
    bound (a factor 2 in the injected noise, i.e. twice the temperature, gives KL ≈ 0.1 on a unit Gaussian)."""
    return (0.005, 0.05) if dim == 1 else (0.01, 0.05)


def toy_targets() -> list[str]:
    """The targets that read no data folder and have an exact density on a KL grid (1D or 2D)."""
    from sgmcmc.evaluation import Evaluator

    names = sorted(path.stem for path in (CONFIG_DIR / "target").glob("*.yaml") if path.stem != "custom")  # custom: no model of its own
    return [name for name in names if "data_dir" not in compose([f"target={name}"])["target"]
            and Evaluator(build_target(name)).enabled]


def build_target(name: str):
    """The target of ``python run.py target=<name>`` (data drawn from seed 0 where the config leaves it to the seed)."""
    from sgmcmc.targets import make_target

    params = {key: value for key, value in compose([f"target={name}"])["target"].items() if key != "name"}
    if params.get("data_seed", 0) is None:
        params["data_seed"] = 0
    return make_target(name, **params)


def sampler_configs() -> list[str]:
    """The registered samplers' own configs (``configs/sampler/<name>.yaml``); a paper's
    variant (e.g. ``sghmc_shang2015``) keeps that paper's settings. Not the optimisers (no samples to score)."""
    from sgmcmc.samplers import SAMPLERS

    return [name for name in sorted(SAMPLERS)
            if (CONFIG_DIR / "sampler" / f"{name}.yaml").exists() and SAMPLERS[name].kind == "sampler"]


def noise_estimate_override(target: str, base: dict) -> list[str]:
    """The noise settings of the sampler on ``target``: on a data target (Normal-Gamma) the minibatches' running
    estimate (:func:`data_noise_overrides`); elsewhere ``noise_estimate=running``, which needs data, becomes ``known``
    where the toy's gradient noise V is known and ``zero`` where it is not (Welling–Teh's mixture)."""
    from sgmcmc.targets.data import DataTarget

    built = build_target(target)
    if isinstance(built, DataTarget):
        return data_noise_overrides(base)
    if base["sampler"].get("noise_estimate") != "running":
        return []
    theta = built.initial_position(1, np.random.default_rng(0))
    return ["sampler.noise_estimate=" + ("zero" if built.noise_covariance(theta) is None else "known")]


def preconditioner_override(target: str, base: dict) -> list[str]:
    """pSGLD's preconditioner on ``target``: Li et al.'s running RMSProp average where the stationary one would need a
    full-data pass per step (a data target's minibatch covariance, or, where the toy does not tell V, its exact
    minibatch covariance over the data: Welling–Teh's mixture), else the sampler's own (stationary)."""
    from sgmcmc.targets.data import DataTarget

    if "preconditioner" not in base["sampler"]:
        return []
    built = build_target(target)
    theta = built.initial_position(1, np.random.default_rng(0))
    if isinstance(built, DataTarget) or built.noise_covariance(theta) is None:
        return ["sampler.preconditioner=running"]
    return []


def noise_comment(settings: dict, data_target: bool = False) -> list[str]:
    estimate = settings.get("sampler.noise_estimate")
    if estimate == "zero" and data_target:
        return ["# noise_estimate: zero, since the sampler takes known or zero only, and with known the minibatch noise makes",
                "# every step size of the grid refused at the start or stop mid-run (on drbm the full covariance is slow besides)."]
    if estimate == "known":
        return ["# noise_estimate: known, since the target's gradient noise V is known and it has no data for a running estimate."]
    if estimate == "zero":
        return ["# noise_estimate: zero, since the target has no data for a running estimate and its gradient noise is unknown."]
    if estimate == "running":
        form = f", {settings['sampler.running_form']} form" if "sampler.running_form" in settings else ""
        return [f"# The gradient noise is estimated from the minibatches (noise_estimate: running{form})"
                + ("; the injected noise clipped to stay PSD (noise_clip)." if "sampler.noise_clip" in settings else ".")]
    return []


def preconditioner_comment(settings: dict) -> list[str]:
    if settings.get("sampler.preconditioner") != "running":
        return []
    return ["# preconditioner: running (Li et al.'s RMSProp average), since the stationary one's V(theta) here needs a pass",
            "# over the data at every step."]


def compose(overrides: list[str]) -> dict:
    """The resolved config of ``python run.py <overrides>`` (without the hydra node)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from omegaconf import OmegaConf

    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        config = OmegaConf.to_container(hydra_compose(config_name="config", overrides=overrides), resolve=True)
    config.pop("hydra", None)
    return config


def run(config: dict):
    """Run ``config`` as run.py does, without a folder: (built objects, evaluator, outcome), or a refusal's record."""
    from sgmcmc.config import ConfigError
    from sgmcmc.evaluation import Evaluator
    from sgmcmc.experiment import build
    from sgmcmc.runner import run_chains

    try:
        built = build(config)
    except ConfigError as error:
        return {"status": "refused", "error": str(error)}
    evaluator = Evaluator(built.target)
    outcome = run_chains(built.sampler, built.schedule, built.settings, np.random.default_rng(config["seed"]), evaluator)
    if outcome.status != "completed":
        return {"status": outcome.status, "error": outcome.error}
    return built, evaluator, outcome


def score(config: dict) -> dict:
    """KL(p‖q) and the E θ² error of the run's pooled kept samples against the exact density."""
    ran = run(config)
    if isinstance(ran, dict):
        return ran
    built, evaluator, outcome = ran
    scores = evaluator.score(outcome.samples.reshape(-1, built.target.dim))
    return {"status": "completed", "kl_pq": scores["kl_pq"], "second_moment_error": scores["second_moment_error"],
            "dim": built.target.dim}


def qualifies(results: list[dict], margin: float = KL_MARGIN, completes_only: bool = False) -> bool:
    for result in results:
        if result["status"] != "completed":
            return False
        if completes_only:
            continue
        kl_max = check_of(result["dim"])[0]
        if not result["kl_pq"] < margin * kl_max:
            return False
    return True


def tune(target: str, sampler: str, log=print) -> tuple[float | None, float, list[dict], bool, list[str]]:
    """(chosen step size or None, the sampler config's own step size, the scores at the chosen one, whether it passes
    the check, the run overrides it was chosen with). A trajectory sampler tries configs/config.yaml's run first
    (:func:`run_overrides`) and, when no step size passes there, the target's longer one. When no step size passes,
    the chosen one is the largest that completes at seed 0 (the pair runs at its defaults; the check's failure is
    listed in README and tests/test_defaults.py)."""
    base = compose([f"target={target}", f"sampler={sampler}", "~by_target"])
    short = run_overrides(base)
    first = None
    for run_length in ([short, []] if short else [[]]):
        chosen = tune_step_size(target, sampler, base, run_length, log) + (run_length,)
        if chosen[3]:
            return chosen
        first = first or chosen
    return first  # no step size passes at either length: the shorter run's fallback (the longer costs more, gains nothing)


def tune_step_size(target: str, sampler: str, base: dict, run_length: list[str], log=print) -> tuple[float | None, float, list[dict], bool]:
    """:func:`tune`'s search over the step sizes for one run length."""
    pair = ([f"target={target}", f"sampler={sampler}", "~by_target"] + noise_estimate_override(target, base)
            + preconditioner_override(target, base) + run_length)
    own = float(base["sampler"]["step_size"])
    completes = None
    for step_size in (own,) + tuple(h for h in GRID if h != own):
        results = []
        for seed in SEEDS:
            config = compose(pair + [f"sampler.step_size={step_size}", f"seed={seed}", "run.progress=false"])
            results.append(score(config))
            if not qualifies(results[-1:], completes_only=sampler in INCORRECT):
                break
        line = ", ".join(f"{r['status']}" + (f" KL {r['kl_pq']:.4f} E2 {r['second_moment_error']:.4f}"
                                            if r["status"] == "completed" else f" ({r.get('error')})") for r in results)
        log(f"  {target} {sampler} eps={step_size:g}: {line}")
        if results[0]["status"] == "refused" and "step_size=" not in results[0]["error"]:
            return None, own, results, False  # refused whatever the step size
        if qualifies(results, completes_only=sampler in INCORRECT):
            return step_size, own, results, True
        if completes is None and results[0]["status"] == "completed" and (step_size == own or step_size < own):
            completes = (step_size, results[:1])
    return (None, own, [], False) if completes is None else (completes[0], own, completes[1], False)


# the run settings that set a run's length (configs/config.yaml's run node)
RUN_LENGTH_KEYS = ("n_steps", "burn_in", "thin", "eval_every")


def run_overrides(base: dict) -> list[str]:
    """A trajectory sampler (one with ``n_leapfrog``: hmc, sghmc_mh, naive_sghmc) makes a trajectory of n_leapfrog
    steps per run step, so on a target whose config lengthens the run for the one-step samplers it first tries
    configs/config.yaml's run (2,000 trajectories; the same length costs it n_leapfrog times the gradients): these
    overrides, empty for the other samplers and where the target keeps that run."""
    from omegaconf import OmegaConf

    default = OmegaConf.load(CONFIG_DIR / "config.yaml").run
    if "n_leapfrog" not in base["sampler"] or base["run"]["n_steps"] <= default["n_steps"]:
        return []
    return [f"run.{key}={default[key]}" for key in RUN_LENGTH_KEYS if base["run"][key] != default[key]]


def write_pair(target: str, sampler: str, step_size: float, own: float, results: list[dict], passes: bool = True,
               run_length: list[str] = ()) -> Path | None:
    from sgmcmc.targets.data import DataTarget

    path = BY_TARGET / target / f"{sampler}.yaml"
    base = compose([f"target={target}", f"sampler={sampler}", "~by_target"])
    noise = noise_estimate_override(target, base) + preconditioner_override(target, base)
    if step_size == own and not noise and not run_length:
        if path.exists():
            path.unlink()
        return None
    kl_max = check_of(results[0]["dim"])[0]
    scores = "; ".join(f"seed {seed}: KL(p||q) {r['kl_pq']:.4f}, E theta^2 error {r['second_moment_error']:.4f}"
                       for seed, r in zip(SEEDS, results))
    seeds = ", ".join(map(str, SEEDS))
    if sampler in INCORRECT:
        chosen = ("the sampler config's own" if step_size == own else
                  f"the largest of the grid (the sampler config's {own:g} diverges or is refused) that")
        rule = f"{chosen} completes at seeds {seeds} (wrong on purpose, so no KL check)"
    else:
        chosen = ("the sampler config's own, which" if step_size == own else
                  f"the largest of the grid (the sampler config's {own:g} fails the default run's check,\n"
                  f"# KL(p||q) < {kl_max:g}) that")
        if step_size == own:
            chosen = f"the sampler config's own, which (check: KL(p||q) < {kl_max:g})"
        rule = f"{chosen} passes it at seeds {seeds}, KL(p||q) below {KL_MARGIN:g} of its bound"
        if not passes:
            scores = scores.split(";")[0]
            rule = (f"no value of the grid passes the default run's check (KL(p||q) < {kl_max:g}); this is the sampler\n"
                    f"# config's own or the largest below it that completes at seed 0, so that the pair runs (README lists it)")
    lines = ["# @package _global_",
             f"# sampler={sampler} on target={target}, {WRITTEN_BY} --target {target} --sampler {sampler}`.",
             f"# Step size: {rule}", f"# ({scores})."]
    settings = dict(override.lstrip("+").split("=", 1) for override in noise)
    lines += noise_comment(settings, data_target=isinstance(build_target(target), DataTarget))
    lines += preconditioner_comment(settings)
    lines += ["sampler:", f"  step_size: {step_size:g}"] + [f"  {key.split('.', 1)[1]}: {value}" for key, value in settings.items()]
    if run_overrides(base) and not run_length:
        lines += ["# The target's run: at configs/config.yaml's shorter one no step size of the grid passes."]
    if run_length:
        lines += ["# The run of configs/config.yaml, not the target's longer one: each step is a trajectory of n_leapfrog steps.",
                  "run:"] + [f"  {override.split('=', 1)[0].split('.', 1)[1]}: {override.split('=', 1)[1]}" for override in run_length]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


# --- data targets (no exact density): the step size with the best test log-likelihood ---------------------------
DATA_GRID = (1e-2, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 3e-6, 1e-6)
# paper settings of their own (ccadl-fig2 / ccadl-fig3 / recipe-fig3 pick theirs); LDA's step sizes are recipe-fig3's
DATA_TARGETS = ("logistic_mnist79", "drbm")
# the running estimate's form per data target: the DRBM's 4,326 parameters take the diagonal one (SPEC §4.10)
RUNNING_FORM = {"drbm": "diagonal"}


def data_noise_overrides(base: dict, target: str | None = None) -> list[str]:
    """On a data target the gradient noise is estimated from the minibatch as the run goes (``running``); the samplers
    that subtract the estimate from their injected noise clip it to keep that noise PSD (as Shang et al.'s SGHMC). CCAdL
    uses the estimate in its friction, not its noise, so it keeps ``noise_clip: false``."""
    sampler = base["sampler"]
    if "noise_estimate" not in sampler:
        return []
    if sampler["name"] == "sghmc_mh":  # known or zero only; on logistic_mnist79 and drbm the minibatch noise makes known
        return ["sampler.noise_estimate=zero"] if target in DATA_TARGETS else []  # refused or stop at every grid step
    overrides = ["++sampler.noise_estimate=running"]  # ++: set whether or not the sampler's file has the key
    if target in RUNNING_FORM:
        overrides.append(f"++sampler.running_form={RUNNING_FORM[target]}")
    if sampler["name"] != "ccadl":
        overrides.append("++sampler.noise_clip=true")
    return overrides


def score_data(config: dict) -> dict:
    """The last trace row's test log-likelihood of the running posterior mean."""
    ran = run(config)
    if isinstance(ran, dict):
        return ran
    return {"status": "completed", "test_log_likelihood": ran[2].trace[-1]["test_log_likelihood"]}


def tune_data(target: str, sampler: str, log=print) -> tuple[float | None, list[str], dict]:
    """(the grid's step size with the best final test log-likelihood at seed 0, the noise overrides, its scores)."""
    pair = [f"target={target}", f"sampler={sampler}", "~by_target"]
    noise = data_noise_overrides(compose(pair), target)
    best = None
    for step_size in DATA_GRID:
        result = score_data(compose(pair + noise + [f"sampler.step_size={step_size}", "seed=0", "run.progress=false"]))
        log(f"  {target} {sampler} eps={step_size:g}: {result['status']} "
            + (f"test log-likelihood {result['test_log_likelihood']:.4f}" if result["status"] == "completed" else str(result.get("error"))))
        if result["status"] == "refused" and "step_size" not in result["error"]:
            return None, noise, result
        if result["status"] == "completed" and (best is None or result["test_log_likelihood"] > best[1]["test_log_likelihood"]):
            best = (step_size, result)
    return (None, noise, {}) if best is None else (best[0], noise, best[1])


def write_data_pair(target: str, sampler: str, step_size: float, noise: list[str], result: dict) -> Path:
    path = BY_TARGET / target / f"{sampler}.yaml"
    settings = dict(override.lstrip("+").split("=", 1) for override in noise)
    lines = ["# @package _global_",
             f"# sampler={sampler} on target={target}, {WRITTEN_BY} --target {target} --sampler {sampler}`.",
             f"# Step size: of the grid {', '.join(f'{h:g}' for h in DATA_GRID)}, the one whose default run (seed 0) ends with the",
             f"# best test log-likelihood of the running posterior mean ({result['test_log_likelihood']:.4f}); the others diverged or ended lower."]
    lines += noise_comment(settings, data_target=True)
    lines += ["sampler:", f"  step_size: {step_size:g}"] + [f"  {key.split('.', 1)[1]}: {value}" for key, value in settings.items()]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def hand_written(target: str, sampler: str) -> bool:
    """Whether the pair's file exists and was not written by this script (e.g. HMC's leapfrog step from the reference
    run's pilot, recipe-fig3's LDA table, a shorter run for HMC): the script leaves such a file alone."""
    path = BY_TARGET / target / f"{sampler}.yaml"
    return path.exists() and WRITTEN_BY not in path.read_text()


def refused_pairs() -> list[tuple[str, str, str]]:
    """(target, sampler config, the one line) of every pair that ``python run.py target=T sampler=S`` refuses at its
    defaults (10 steps, no folder kept): README's table of refused pairs, which tests/test_defaults.py checks."""
    import tempfile

    from sgmcmc.config import ConfigError
    from sgmcmc.experiment import run_experiment

    targets = sorted(path.stem for path in (CONFIG_DIR / "target").glob("*.yaml") if path.stem != "custom")  # custom: no model of its own
    samplers = sorted(path.stem for path in (CONFIG_DIR / "sampler").glob("*.yaml"))
    out = []
    with tempfile.TemporaryDirectory() as folder:
        for target in targets:
            for sampler in samplers:
                config = compose([f"target={target}", f"sampler={sampler}", "run.n_steps=10", "run.burn_in=0",
                                  "run.progress=false", "run.figures=false", f"run.results_dir={folder}"])
                try:
                    run_experiment(config)
                except ConfigError as error:
                    out.append((target, sampler, str(error)))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", action="append", help="a toy target (repeatable; default: every one)")
    parser.add_argument("--sampler", action="append", help="a sampler config (repeatable; default: every one)")
    parser.add_argument("--dry-run", action="store_true", help="print the choices, write no file")
    parser.add_argument("--refused", action="store_true",
                        help="run every target x sampler config for 10 steps and print README's table of refused pairs")
    args = parser.parse_args(argv)
    if args.refused:
        print("| target | sampler | the command line's line |\n|---|---|---|")
        for target, sampler, line in refused_pairs():
            print(f"| `{target}` | `{sampler}` | `error: {line.replace('|', chr(92) + '|')}` |")
        return 0
    targets = args.target or toy_targets() + list(DATA_TARGETS)
    samplers = args.sampler or sampler_configs()
    unresolved = []
    for target in targets:
        for sampler in samplers:
            if hand_written(target, sampler):
                print(f"{target} {sampler}: kept configs/by_target/{target}/{sampler}.yaml (written by hand; its comment says why)")
                continue
            if target in DATA_TARGETS:
                step_size, noise, result = tune_data(target, sampler)
                if step_size is None:
                    print(f"{target} {sampler}: " + (f"refused ({result['error']})" if result else "no step size of the grid completes"))
                    unresolved += [] if result else [(target, sampler)]
                    continue
                path = None if args.dry_run else write_data_pair(target, sampler, step_size, noise, result)
                print(f"{target} {sampler}: step size {step_size:g}" + (f" -> {path.relative_to(ROOT)}" if path else ""))
                continue
            step_size, own, results, passes, run_length = tune(target, sampler)
            if not passes and step_size is not None:
                unresolved.append((target, sampler))
                path = None if args.dry_run else write_pair(target, sampler, step_size, own, results, passes=False, run_length=run_length)
                print(f"{target} {sampler}: no step size of the grid qualifies; {step_size:g} completes"
                      + (f" -> {path.relative_to(ROOT)}" if path else ""))
                continue
            if step_size is None:
                if results and results[0]["status"] == "refused":
                    print(f"{target} {sampler}: refused ({results[0]['error']})")
                else:
                    print(f"{target} {sampler}: no step size of the grid qualifies")
                    unresolved.append((target, sampler))
                continue
            path = None if args.dry_run else write_pair(target, sampler, step_size, own, results, run_length=run_length)
            print(f"{target} {sampler}: step size {step_size:g} (own {own:g})" + (f" -> {path.relative_to(ROOT)}" if path else ""))
    return 1 if unresolved else 0


if __name__ == "__main__":
    sys.exit(main())
