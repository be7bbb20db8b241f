"""The import arrows of the repository run one way: no module imports another that imports it back (directly or
round a circle, imports inside functions included), and the layers the code is built on stay below what uses them
(the config keys below the samplers and targets, the targets below the metrics)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sgmcmc", "sgmcmc_cli", "benchmarks", "experiments", "scripts")
# a circle inside the engine, whose modules are other work's (each imports the other inside functions)
KNOWN_CIRCLES: list = []


def module_files() -> dict[str, Path]:
    files = {}
    for path in (path for package in PACKAGES for path in (ROOT / package).rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        files[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return files


def imports(files: dict[str, Path]) -> dict[str, set[str]]:
    """module -> the repository's modules it imports (anywhere in it), a package's ``from p import m`` as ``p.m``."""

    def known(name: str):
        while name and name not in files:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                found |= {known(alias.name) for alias in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                modules = {known(f"{base}.{alias.name}") for alias in node.names}
                found |= {module for module in modules if module != known(base)} or {known(base)}
        graph[name] = {module for module in found if module and module != name and not name.startswith(module + ".")}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_circle_finder_finds_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle():
    graph = imports(module_files())
    assert len(graph) > 100 and graph["benchmarks.run"]
    assert circles(graph) == KNOWN_CIRCLES


def test_the_config_sits_below_the_samplers_and_targets_and_the_targets_below_the_metrics():
    graph = imports(module_files())
    assert graph["sgmcmc.config"] <= {"sgmcmc.schema"}
    assert {"sgmcmc.samplers", "sgmcmc.targets", "sgmcmc.config"} <= graph["sgmcmc.keys"]
    above_targets = {"sgmcmc.evaluation", "sgmcmc.experiment", "sgmcmc.runner", "sgmcmc.keys"}
    for name, imported in graph.items():
        if name.startswith(("sgmcmc.targets", "sgmcmc.samplers")):
            assert not imported & above_targets, (name, imported & above_targets)
