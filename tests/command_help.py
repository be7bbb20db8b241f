"""Every command's ``--help`` in one Python process (tests/test_cli.py): ``python tests/command_help.py COMMAND...``,
each COMMAND a script's path or ``-m`` and a module joined by a space, prints one JSON object mapping each command to
its exit code, standard output and standard error. Each command runs as ``python COMMAND --help`` would run it
(``runpy``, as ``__main__``, with that ``sys.argv``); the imports they share are paid once, not once a command."""

import contextlib
import io
import os
import json
import runpy
import sys
import traceback


def help_of(command: str) -> dict:
    """``command --help`` run in this process: its exit code (SystemExit's, 0 where it returns, 1 where it raises),
    standard output and standard error (with the traceback where it raised)."""
    out, err = io.StringIO(), io.StringIO()
    module = command[3:] if command.startswith("-m ") else None
    sys.argv = [module or command, "--help"]
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if module:
                runpy.run_module(module, run_name="__main__", alter_sys=True)
            else:
                runpy.run_path(command, run_name="__main__")
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        except BaseException:  # noqa: BLE001 - reported to the test, which fails on it
            traceback.print_exc(file=err)
            code = 1
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # as `python -m` and a script of the repository's root have it (not tests/)
    results = {command: help_of(command) for command in sys.argv[1:]}
    sys.stdout.write(json.dumps(results))
