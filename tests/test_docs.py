"""docs/user-guide.md runs as written: every ```bash block (with the project's Python first on PATH) and every ```python
block (in one namespace, in document order) in a scratch folder that holds run.py, configs/ and examples/, so its
results land there and not in the repository."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "user-guide.md"
THREADS = {key: "1" for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, code) of every fenced block, in order."""
    return [(language, code) for language, code in re.findall(r"^```(\w*)\n(.*?)^```$", text, flags=re.M | re.S)]


def test_the_guide_has_the_three_worked_paths():
    text = GUIDE.read_text()
    for heading in ("Your own model", "A sweep and its table", "Results in ArviZ and pandas"):
        assert re.search(rf"^## .*{heading}", text, flags=re.M), heading
    languages = [language for language, _ in code_blocks(text)]
    assert languages.count("bash") >= 2 and languages.count("python") >= 3
    assert set(languages) <= {"bash", "python", "text"}  # text: output shown, not run


@pytest.mark.validate  # runs the guide's three commands, one compiling a block in its own process: 43-67 s of make test
def test_every_block_of_the_guide_runs(tmp_path, monkeypatch):
    for name in ("run.py", "configs", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    monkeypatch.chdir(tmp_path)
    matplotlib.use("Agg")
    environment = dict(os.environ, **THREADS, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    environment.pop("HYDRA_FULL_ERROR", None)
    namespace: dict = {"__name__": "user_guide"}
    ran = 0
    for number, (language, code) in enumerate(code_blocks(GUIDE.read_text()), start=1):
        if "jax" in code and importlib.util.find_spec("jax") is None:  # the jax extra's blocks, without it
            continue
        if language == "bash":
            result = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path, env=environment,
                                    capture_output=True, text=True)
            assert result.returncode == 0, f"block {number} failed:\n{code}\n{result.stderr[-2000:]}"
        elif language == "python":
            try:
                exec(compile(code, f"docs/user-guide.md block {number}", "exec"), namespace)
            except Exception as error:
                pytest.fail(f"block {number} raised {type(error).__name__}: {error}\n{code}")
        else:
            continue
        ran += 1
    assert ran >= 5
