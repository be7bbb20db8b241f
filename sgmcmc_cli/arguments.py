"""The flags of ``python run.py``: the ones ``hydra.main`` reads (its ``--hydra-help`` lists them), declared here so
that the command line is checked before Hydra runs anything, each error one line (argparse would print the usage
too). Hydra's own parser is private (``hydra._internal``); ``tests/test_hydra_api.py`` checks that this one knows
every flag ``--hydra-help`` lists, and no other.
"""

from __future__ import annotations

import argparse

CFG_CHOICES = ("job", "hydra", "all")
INFO_CHOICES = ("all", "config", "defaults", "defaults-tree", "plugins", "searchpath")


class CommandLineError(Exception):
    """A command line that argparse rejects: its message, one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse's own: usage and exit 2
        raise CommandLineError(message)


def command_line_parser() -> argparse.ArgumentParser:
    """A parser of hydra.main's command line (``--help``, ``-m``, ``--cfg``, ..., then the overrides); a bad one raises
    :class:`CommandLineError`. ``--version`` is a plain flag here: hydra.main prints it."""
    parser = _Parser(add_help=False, prog="run.py")
    parser.add_argument("--help", "-h", action="store_true")
    parser.add_argument("--hydra-help", action="store_true")
    parser.add_argument("--version", action="store_true")
    parser.add_argument("overrides", nargs="*")
    parser.add_argument("--cfg", "-c", choices=CFG_CHOICES)
    parser.add_argument("--resolve", action="store_true")
    parser.add_argument("--package", "-p")
    parser.add_argument("--run", "-r", action="store_true")
    parser.add_argument("--multirun", "-m", action="store_true")
    parser.add_argument("--shell-completion", "-sc", action="store_true")
    parser.add_argument("--config-path", "-cp")
    parser.add_argument("--config-name", "-cn")
    parser.add_argument("--config-dir", "-cd")
    parser.add_argument("--experimental-rerun")
    parser.add_argument("--info", "-i", const="all", nargs="?", choices=INFO_CHOICES)
    return parser
