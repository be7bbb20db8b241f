"""Hydra stays at the edge (issue 18): every module of the core package imports with Hydra and OmegaConf missing."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# a meta-path finder ahead of all others: `import hydra` / `import omegaconf` (and their submodules) fail, as they
# would where they are not installed; then every module below sgmcmc/ is imported
WITHOUT_HYDRA = r"""
import importlib, pkgutil, sys

class NoHydra:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("hydra", "omegaconf"):
            raise ImportError(f"{name} is made unimportable by this test")
        return None

sys.meta_path.insert(0, NoHydra())
import sgmcmc

names = ["sgmcmc"] + [info.name for info in pkgutil.walk_packages(sgmcmc.__path__, "sgmcmc.")]
for name in names:
    importlib.import_module(name)
assert not [name for name in sys.modules if name.split(".")[0] in ("hydra", "omegaconf")]
print(len(names))
"""


def test_every_core_module_imports_without_hydra():
    result = subprocess.run([sys.executable, "-c", WITHOUT_HYDRA], capture_output=True, text=True, cwd=ROOT,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.strip().splitlines()[-1]) > 30  # the walk found the package's modules


def test_the_finder_does_hide_hydra():
    code = WITHOUT_HYDRA.replace("import sgmcmc\n", "import sgmcmc\nimport sgmcmc_cli.hydra_callbacks\n", 1)
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert result.returncode != 0 and "made unimportable by this test" in result.stderr
