"""Where data sets live: the data folder, the cache folder and the error every data problem raises.

The data folder is, in order: the path the caller configured, the environment variable ``SGMCMC_DATA``,
else ``<project root>/data_cache`` (files missing there are downloaded into it). What is derived from the data
(the projected features of ``logistic_mnist79``) goes to the cache folder instead, never to the data folder, which
may be shared or read-only: the configured path, else ``SGMCMC_CACHE``, else ``<project root>/.cache``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Union

ENV_VAR = "SGMCMC_DATA"
CACHE_ENV_VAR = "SGMCMC_CACHE"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = PROJECT_ROOT / "data_cache"
DEFAULT_CACHE_DIR = PROJECT_ROOT / ".cache"


class DataError(Exception):
    """A data file is missing, unreadable or corrupt; the message is one line saying what to do."""

    def __init__(self, message: object) -> None:
        super().__init__(re.sub(r"\s*[\r\n]+\s*", " ", str(message)).strip())


def resolve_data_dir(configured: Optional[Union[str, os.PathLike]] = None) -> Path:
    """The data folder: ``configured`` if given, else ``$SGMCMC_DATA``, else ``<project>/data_cache``."""
    return _resolve(configured, ENV_VAR, DEFAULT_DATA_DIR)


def resolve_cache_dir(configured: Optional[Union[str, os.PathLike]] = None) -> Path:
    """The cache folder: ``configured`` if given, else ``$SGMCMC_CACHE``, else ``<project>/.cache``."""
    return _resolve(configured, CACHE_ENV_VAR, DEFAULT_CACHE_DIR)


def _resolve(configured: Optional[Union[str, os.PathLike]], env_var: str, default: Path) -> Path:
    if configured is not None and str(configured) != "":
        return Path(configured).expanduser()
    from_env = os.environ.get(env_var, "")
    if from_env:
        return Path(from_env).expanduser()
    return default
