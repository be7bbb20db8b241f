#!/usr/bin/env python
"""What tuning would choose on the papers' own experiments, beside the papers' settings (issue 34; information only:
the experiments keep their settings).

    python scripts/tuning_on_paper_settings.py [--experiments recipe_fig2_left ...]

For each ``configs/experiment/<name>.yaml``, and each sampler of the two figures that have none (make sghmc-bnn and
make sghmc-bpmf-synthetic: :data:`FIGURE_RUNS`), the config of ``python run.py +experiment=<name> tune=auto`` is built
(:func:`sgmcmc.experiment.build`: the tuning runs, nothing is sampled) and its chosen ``sampler.step_size`` (and
friction or diffusion) is set beside the experiment's, with the tuning's cost; a target tuning cannot take (no exact
gradient, Gibbs-sampled hyperparameters) gets its one-line refusal. Writes results/tuning/paper-settings-<commit>.json
and .md next to it.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from hydra import compose, initialize_config_dir  # noqa: E402
from omegaconf import OmegaConf  # noqa: E402

from experiments.sghmc_bpmf import synthetic_file  # noqa: E402
from sgmcmc.config import ConfigError  # noqa: E402
from sgmcmc.data.folder import resolve_cache_dir  # noqa: E402
from sgmcmc.experiment import build  # noqa: E402
from sgmcmc.results import provenance  # noqa: E402
from sgmcmc.tuning import FRICTION_KEYS  # noqa: E402
from scripts.user_models_at_defaults import write_report  # noqa: E402

CONFIG_DIR = ROOT / "configs"
# the figures run by experiments/ scripts without an experiment config: their samplers at the pair's defaults (BPMF on
# the synthetic set its make target samples, written to the cache folder if absent)
FIGURE_RUNS = {f"sghmc_bnn_{sampler}": ["target=bnn_mnist", f"sampler={sampler}"] for sampler in ("sgld", "sghmc")}
FIGURE_RUNS.update({f"sghmc_bpmf_{sampler}": ["target=bpmf_movielens", f"sampler={sampler}"]
                    for sampler in ("sgld", "sghmc")})


def composed(overrides: list[str]) -> dict:
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base="1.3"):
        config = OmegaConf.to_container(compose(config_name="config", overrides=overrides), resolve=True)
    config.pop("hydra", None)
    return config


def overrides(name: str) -> list[str]:
    """The experiment's overrides: its config, or its figure's target and sampler (BPMF's ratings the synthetic set)."""
    if name not in FIGURE_RUNS:
        return [f"+experiment={name}"]
    if not name.startswith("sghmc_bpmf"):
        return FIGURE_RUNS[name]
    cache = resolve_cache_dir(composed(FIGURE_RUNS[name]).get("cache_dir"))
    return [*FIGURE_RUNS[name], f"target.ratings_file={synthetic_file('full', cache)}"]


def tuned(name: str, results: Path) -> dict:
    config = composed([*overrides(name), "tune=auto", f"run.results_dir={results}", "run.progress=false"])
    paper = {key: config["sampler"][key] for key in ("step_size", *FRICTION_KEYS) if key in config["sampler"]}
    record = {"experiment": name, "sampler": config["sampler"]["name"], "target": config["target"]["name"],
              "paper": paper, "schedule": config["schedule"]["name"]}
    try:
        built = build(config)
    except ConfigError as error:
        return {**record, "refused": str(error)}
    return {**record, "tuned": built.tuned.values, "bounds": built.tuned.bounds, "cost": built.tuned.record()["cost"]}


def header(records: list[dict], names: list[str]) -> str:
    commit = provenance(0)["git_commit"] or "unknown"
    done = len(records) == len(names)
    state = "" if done else f"; stopped before {names[len(records)]} (the report is rewritten after each experiment)"
    return ("What tuning (`tune=auto`) chooses on each paper experiment's config, beside the experiment's own setting "
            "(information only: the experiments keep theirs). `python scripts/tuning_on_paper_settings.py` at "
            f"{commit[:8]}{state}.\n\n")


def table(records: list[dict]) -> str:
    lines = ["| experiment | sampler | target | paper's setting | tuning's choice | tuning's cost |", "|---|---|---|---|---|---|"]
    for r in records:
        paper = ", ".join(f"{k}={v:.3g}" for k, v in r["paper"].items())
        if "refused" in r:
            chose, cost = f"refused: {r['refused']}", ""
        else:
            chose = ", ".join(f"{k}={v:.3g}" for k, v in r["tuned"].items())
            cost = f"{r['cost']['seconds']:.1f} s, {r['cost']['pilot_chain_steps']:,} pilot chain-steps"
        lines.append(f"| {r['experiment']} | {r['sampler']} | {r['target']} | {paper} | {chose} | {cost} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = sorted(path.stem for path in (CONFIG_DIR / "experiment").glob("*.yaml")) + list(FIGURE_RUNS)
    parser.add_argument("--experiments", nargs="*", default=names)
    parser.add_argument("--output", type=Path, default=ROOT / "results" / "tuning")
    args = parser.parse_args()
    records = []
    with tempfile.TemporaryDirectory() as folder:
        for name in args.experiments:  # the report is rewritten after each: a stopped run keeps what it measured
            records.append(tuned(name, Path(folder)))
            print(json.dumps(records[-1]), flush=True)
            path = write_report(records, args.output / "paper-settings", header(records, args.experiments) + table(records))
    print(path)


if __name__ == "__main__":
    main()
