"""Where the config goes: ``python run.py`` run in this process with a tracer that records every call, in the
repository's code, that receives the config in one of its forms as an argument (Hydra's composed ``DictConfig``, a
plain dict of it, the validated :class:`~sgmcmc.config.RunDescription`). Prints the stops (distinct functions), the
files they are in, and the calls that climb back up: a call into a module that imports, directly or round others,
the module the call comes from (tests/test_import_layers.py's import graph).

    python scripts/config_walk.py [overrides ...]     (default: a short SGLD run on the double well, no figures)

Issue 33's "the config, followed from run.py's entry, stops in at most 25 places".
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from omegaconf import DictConfig

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import run  # noqa: E402  (run.py, the command line under test)
from sgmcmc.config import RunDescription  # noqa: E402
from tests.test_import_layers import imports, module_files  # noqa: E402

DEFAULT = ["sampler=sgld", "sampler.step_size=0.01", "run.n_steps=20", "run.n_chains=2", "run.burn_in=10",
           "run.eval_every=10", "run.figures=false", "run.progress=false"]


def is_config(value) -> bool:
    """The config in one of its forms: the validated description, or a mapping with the run, sampler and target."""
    if isinstance(value, RunDescription):
        return True
    if isinstance(value, (dict, DictConfig)):
        try:
            return all(key in value for key in ("run", "sampler", "target"))
        except Exception:  # a DictConfig whose interpolations do not resolve yet
            return False
    return False


def module_of(filename: str, files: dict[str, Path]) -> str | None:
    path = Path(filename).resolve()
    for name, module_path in files.items():
        if module_path.resolve() == path:
            return name
    return "run" if path == ROOT / "run.py" else None


def walk(overrides: list[str]) -> list[tuple[str, str, str | None]]:
    """(module, function, calling module) of every call that received the config, in order."""
    files = module_files()
    modules: dict[str, str | None] = {}
    stops = []

    def module(code) -> str | None:
        if code.co_filename not in modules:
            modules[code.co_filename] = module_of(code.co_filename, files)
        return modules[code.co_filename]

    def tracer(frame, event, argument):
        if event != "call":
            return None
        here = module(frame.f_code)
        if here is None:
            return None
        code = frame.f_code
        arguments = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
        if any(is_config(frame.f_locals.get(name)) for name in arguments):
            caller = frame.f_back
            while caller is not None and module(caller.f_code) is None:
                caller = caller.f_back
            stops.append((here, code.co_qualname, module(caller.f_code) if caller is not None else None))
        return None

    with tempfile.TemporaryDirectory() as folder:
        sys.argv = ["run.py", *overrides, f"run.results_dir={folder}"]
        sys.settrace(tracer)
        try:
            run.main()
        except SystemExit:
            pass
        finally:
            sys.settrace(None)
    return stops


def above(graph: dict[str, set[str]], module: str, other: str) -> bool:
    """Whether ``module`` imports ``other``, directly or round others."""
    seen, todo = set(), [module]
    while todo:
        for imported in graph.get(todo.pop(), ()):
            if imported == other:
                return True
            if imported not in seen:
                seen.add(imported)
                todo.append(imported)
    return False


def main() -> None:
    stops = walk(sys.argv[1:] or DEFAULT)
    graph = imports(module_files())
    graph["run"] = set().union(*(graph.get(name, set()) for name in ("sgmcmc_cli",))) | {
        name for name in graph if name.startswith(("sgmcmc.experiment", "sgmcmc_cli", "sgmcmc.config"))}
    distinct = list(dict.fromkeys((module, function) for module, function, _ in stops))
    climbs = [(caller, module, function) for module, function, caller in dict.fromkeys(stops)
              if caller is not None and caller != module and above(graph, module, caller)]
    for module, function in distinct:
        print(f"{module}.{function}")
    print(f"\n{len(distinct)} stops in {len({module for module, _ in distinct})} files; "
          f"{len(climbs)} calls climb back up" + "".join(f"\n  {c} -> {m}.{f}" for c, m, f in climbs))


if __name__ == "__main__":
    main()
