"""Every command's ``--help`` from one Python process (tests/test_cli.py): ``python tests/command_help.py OUTPUT
COMMAND...``, each COMMAND a script's path or ``-m`` and a module joined by a space, writes to the file OUTPUT one JSON
object mapping each command to its exit code, standard output and standard error.

The libraries the commands share are imported once, here; each command then runs in a process forked from this one
(``runpy``, as ``__main__``, with the ``sys.argv`` of ``python COMMAND --help``), so no command sees what another
imported, put on ``sys.path`` or configured, and one that takes more than :data:`SECONDS` is stopped and reported.
"""

import contextlib
import importlib
import io
import json
import os
import runpy
import signal
import sys
import traceback

SECONDS = 120  # a command's --help that takes longer is reported as failed, by name

# what most commands import, paid once before the forks
SHARED = ("numpy", "scipy.stats", "numba", "matplotlib.pyplot", "hydra", "sgmcmc.experiment")


def help_of(command: str) -> dict:
    """``command --help`` run in this process: its exit code (SystemExit's, 0 where it returns, 1 where it raises or
    takes more than :data:`SECONDS`), standard output and standard error (with the traceback where it raised)."""
    out, err = io.StringIO(), io.StringIO()
    module = command[3:] if command.startswith("-m ") else None
    sys.argv = [module or command, "--help"]
    code = 0

    def too_long(signum, frame):
        raise TimeoutError(f"{command} --help took more than {SECONDS} s")

    signal.signal(signal.SIGALRM, too_long)
    signal.alarm(SECONDS)
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
    signal.alarm(0)
    return {"returncode": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def in_a_fork(command: str) -> dict:
    """:func:`help_of` in a child process forked from this one, its result read back through a pipe."""
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        try:
            result = help_of(command)
        except BaseException:  # noqa: BLE001 - anything is the child's result, never the parent's loop
            result = {"returncode": 1, "stdout": "", "stderr": traceback.format_exc()}
        with os.fdopen(write, "w") as pipe:
            json.dump(result, pipe)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(child, 0)
    if not text:
        return {"returncode": 1, "stdout": "", "stderr": f"{command}: its process ended (status {status}) with no result"}
    return json.loads(text)


if __name__ == "__main__":
    sys.path[0] = os.getcwd()  # as `python -m` and a script of the repository's root have it (not tests/)
    output, commands = sys.argv[1], sys.argv[2:]
    for name in SHARED:
        importlib.import_module(name)
    results = {command: in_a_fork(command) for command in commands}
    with open(output, "w") as file:
        json.dump(results, file)
