"""Which runs the engine's blocks take and which still fall to the numpy steps: every registered sampler, with each of
its integrators (the generic recipe step aside) and noise estimates, on every registered target that builds here
(the data sets from ``SGMCMC_DATA``; a target that does not build is listed as such). What the runner would run
(:func:`sgmcmc.engine.blocks.kernel_of`), asked of the engine's Python backend so that nothing is compiled.

    python scripts/engine_coverage.py [--targets NAME ...] [--model PATH:CLASS ...]

``--model`` adds a user's own model (``target=custom``, its ``target.batch_size`` 32), e.g.
``examples/breast_cancer_logistic.py:BreastCancerLogistic`` (the vectorised form). A data target is tried under each
gradient estimator (minibatch, control_variates, svrg).

Prints, per target, the count of engine / numpy-step combinations and the numpy ones; issue 33's
"the numpy steps deleted" needs that last list empty.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sgmcmc.engine.driver import PYTHON  # noqa: E402
from sgmcmc.gradient_estimators import ESTIMATOR_KEYS, make_estimator  # noqa: E402
from sgmcmc.samplers import SAMPLERS, make_sampler  # noqa: E402
from sgmcmc.targets import TARGETS, make_target  # noqa: E402
from sgmcmc.targets.data import DataTarget  # noqa: E402
from sgmcmc.targets.user import make_user_target  # noqa: E402

# small settings for the data targets, so that building them is quick
SMALL = {"drbm": {"dataset": "letter"}, "bnn_mnist": {"n_hidden": 10}}


def combinations(sampler_class, target):
    """(integrator, noise estimate) pairs the sampler accepts on ``target``."""
    keys = sampler_class.config_keys()
    estimates = ["known", "zero"] + (["running"] if isinstance(target, DataTarget) else [])
    for integrator in sampler_class.integrators:
        if integrator == "generic":
            continue
        for estimate in (estimates if "noise_estimate" in keys else [None]):
            yield integrator, estimate


def path_of(name: str, target, integrator: str, estimate) -> str:
    params = {"integrator": integrator, **({} if estimate is None else {"noise_estimate": estimate})}
    try:
        sampler = make_sampler(name, target, **params)
    except (ValueError, TypeError):
        return "refused"
    if sampler.engine_blocks(PYTHON) is not None:
        return "engine"
    return "numpy"


def build(target_name: str):
    """The target ``target_name`` (or a user's model, PATH:CLASS), or the one line saying why it does not build."""
    try:
        if ":" in target_name:
            return make_user_target(target_name, batch_size=32)
        return make_target(target_name, **SMALL.get(target_name, {}))
    except Exception as error:  # a data set that is not here, a user model without its file
        return f"{target_name}: not built ({type(error).__name__}: {str(error).splitlines()[0][:100]})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", nargs="+", default=None)
    parser.add_argument("--model", nargs="+", default=[])
    arguments = parser.parse_args()
    for target_name in (arguments.targets or list(TARGETS)) + arguments.model:
        base = build(target_name)
        if isinstance(base, str):
            print(base)
            continue
        counts, numpy = {}, []
        for estimator in ESTIMATOR_KEYS if isinstance(base, DataTarget) and not base.gibbs_every else ["minibatch"]:
            target = make_estimator(estimator, base)
            for name, sampler_class in SAMPLERS.items():
                for integrator, estimate in combinations(sampler_class, target):
                    path = path_of(name, target, integrator, estimate)
                    counts[path] = counts.get(path, 0) + 1
                    if path == "numpy":
                        numpy.append(f"{name}/{integrator}/{estimate}/{estimator}")
        summary = ", ".join(f"{path} {count}" for path, count in sorted(counts.items()))
        print(f"{target_name}: {summary}" + (f"\n  numpy: {' '.join(numpy)}" if numpy else ""))


if __name__ == "__main__":
    main()
