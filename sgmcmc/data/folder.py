"""Where data sets live: the data folder and the error every data problem raises.

The folder is, in order: the path the caller configured, the environment variable ``SGMCMC_DATA``,
else ``<project root>/data_cache`` (files missing there are downloaded into it).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional, Union

ENV_VAR = "SGMCMC_DATA"
PROJECT_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DATA_DIR = PROJECT_ROOT / "data_cache"


class DataError(Exception):
    """A data file is missing, unreadable or corrupt; the message is one line saying what to do."""

    def __init__(self, message: object) -> None:
        super().__init__(re.sub(r"\s*[\r\n]+\s*", " ", str(message)).strip())


def resolve_data_dir(configured: Optional[Union[str, os.PathLike]] = None) -> Path:
    """The data folder: ``configured`` if given, else ``$SGMCMC_DATA``, else ``<project>/data_cache``."""
    if configured is not None and str(configured) != "":
        return Path(configured).expanduser()
    from_env = os.environ.get(ENV_VAR, "")
    if from_env:
        return Path(from_env).expanduser()
    return DEFAULT_DATA_DIR
