"""The size of the core (issue 33: ``samplers/``, ``engine/``, ``gradient_estimators.py``, ``recipe.py``, ``noise.py``,
``state.py`` and ``geometry.py`` of the ``sgmcmc`` package): its lines, as ``wc -l`` counts them, and of them the
docstrings (the first statement of a module, class or function, by Python's ``ast``), the comment lines (a first
non-blank character ``#``), the blank lines, and the rest, the code.

    python scripts/core_size.py
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sgmcmc"
CORE = ("samplers", "engine", "gradient_estimators.py", "recipe.py", "noise.py", "state.py", "geometry.py")


def core_files() -> list[Path]:
    files = []
    for name in CORE:
        path = PACKAGE / name
        files += sorted(path.glob("*.py")) if path.is_dir() else [path]
    return files


def line_kinds(path: Path) -> dict[str, int]:
    """{total, docstring, comment, blank, code} lines of one file."""
    source = path.read_text()
    lines = source.splitlines()
    docstring = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value,
                                                                                                     str):
                docstring.update(range(first.lineno, first.end_lineno + 1))
    comment = sum(1 for number, line in enumerate(lines, 1) if number not in docstring and line.strip().startswith("#"))
    blank = sum(1 for number, line in enumerate(lines, 1) if number not in docstring and not line.strip())
    return {"total": len(lines), "docstring": len(docstring), "comment": comment, "blank": blank,
            "code": len(lines) - len(docstring) - comment - blank}


def main(argv=None) -> dict[str, int]:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    total = dict.fromkeys(("total", "docstring", "comment", "blank", "code"), 0)
    for path in core_files():
        kinds = line_kinds(path)
        print(f"{path.relative_to(PACKAGE.parent)}: " + ", ".join(f"{key} {value}" for key, value in kinds.items()))
        total = {key: total[key] + kinds[key] for key in total}
    print("core: " + ", ".join(f"{key} {value}" for key, value in total.items()))
    return total


if __name__ == "__main__":
    main()
