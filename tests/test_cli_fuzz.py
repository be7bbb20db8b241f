"""Malformed command lines and config values made by a fuzzer (hypothesis): each exits 2 with exactly one
line on stderr starting ``error:``, no traceback, and no result folder.

The cases run ``run.main()`` in this process (as ``python run.py`` does, less the interpreter start, ~1 s
each); a few fixed ones also run as real processes. Deterministic (derandomize): the same 56 cases in CI."""

import contextlib
import importlib.util
import io
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is in the dev extra: pip install -e '.[dev]'")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sgmcmc.keys import RUN_FIELDS, SAMPLER_FIELDS, TARGET_FIELDS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BASE = ["run.n_steps=120", "run.n_chains=4", "run.burn_in=60", "run.progress=false", "run.figures=false"]
GROUPS = {group: sorted(path.stem for path in (ROOT / "configs" / group).glob("*.yaml"))
          for group in ("sampler", "target", "schedule")}
TOP_LEVEL = {"seed", "data_dir", "run", "sampler", "target", "schedule", "hydra", "defaults", "experiment"}
KNOWN_SUBKEYS = {"run": set(RUN_FIELDS), "target": set(TARGET_FIELDS["double_well"]) | {"name"},
                 "sampler": {key for fields in SAMPLER_FIELDS.values() for key in fields} | {"name"}, "schedule": {"name"}}
INTEGERS = {"run.n_steps": 1, "run.n_chains": 1, "run.burn_in": 0, "run.thin": 1, "run.eval_every": 1, "seed": 0}
NUMBERS = ("sampler.step_size", "target.noise_variance")  # step_size > 0, noise_variance >= 0
BOOLEANS = ("run.progress", "run.figures")

identifier = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True)
word = st.from_regex(r"[A-Za-z][A-Za-z_]{0,9}", fullmatch=True)
odd_text = st.text(st.characters(blacklist_characters="'\"\\\x00$", blacklist_categories=("Cs",)), min_size=1, max_size=12)


def multirun_or_not(tail):
    """A malformed command line is malformed with -m too (these errors are not a single job's)."""
    return st.tuples(st.booleans(), tail).map(lambda pair: (["-m"] if pair[0] else [], pair[1]))


def single(tail):
    return tail.map(lambda items: ([], items))


bad_group = multirun_or_not(st.tuples(st.sampled_from(sorted(GROUPS)), identifier, st.booleans()).filter(
    lambda t: t[1] not in GROUPS[t[0]]).map(lambda t: [f"{t[0]}={GROUPS[t[0]][0]},{t[1]}" if t[2] else f"{t[0]}={t[1]}"]))

unknown_key = multirun_or_not(st.one_of(
    identifier.filter(lambda k: k not in TOP_LEVEL).map(lambda k: [f"{k}=1"]),
    st.tuples(st.sampled_from(sorted(KNOWN_SUBKEYS)), identifier).filter(lambda t: t[1] not in KNOWN_SUBKEYS[t[0]])
    .map(lambda t: [f"{t[0]}.{t[1]}=1"]),
))

wrong_type = single(st.one_of(
    st.tuples(st.sampled_from(sorted(INTEGERS) + list(NUMBERS)), word).map(lambda t: [f"{t[0]}={t[1]}"]),
    st.tuples(st.sampled_from(BOOLEANS), word.filter(lambda w: w.lower() not in {"true", "false"}))
    .map(lambda t: [f"{t[0]}={t[1]}"]),
    st.tuples(st.sampled_from(sorted(INTEGERS)), st.floats(0.5, 1e4).filter(lambda x: x != int(x)))
    .map(lambda t: [f"{t[0]}={t[1]!r}"]),
    st.tuples(st.sampled_from(sorted(INTEGERS) + list(NUMBERS)), odd_text).map(lambda t: [f"{t[0]}='{t[1]}'"]),
))

negative_count = single(st.tuples(st.sampled_from(sorted(INTEGERS)), st.integers(1, 10**6), st.booleans()).map(
    lambda t: [f"{t[0]}={0 if t[2] and INTEGERS[t[0]] == 1 else -t[1]}"]))

out_of_range = single(st.one_of(
    st.tuples(st.just("sampler.step_size"), st.floats(-1e3, 0.0)).map(lambda t: [f"{t[0]}={t[1]!r}"]),
    st.tuples(st.just("target.noise_variance"), st.floats(-1e3, -1e-9)).map(lambda t: [f"{t[0]}={t[1]!r}"]),
    st.integers(120, 10**6).map(lambda n: [f"run.burn_in={n}"]),  # burn-in must be < run.n_steps=120
    st.sampled_from(["inf", "-inf", "nan"]).map(lambda v: [f"sampler.step_size={v}"]),
))

SYNTAX = ["{key}=[{w}", "{key}={{{w}", "{key}='{w}", "{key}=({w}", "{key}=={w}", "{key}", "{key}={w}={w}", "{key}=${{{w}",
          "~zz{w}", "+{key}=1", "..{w}=1", "{w} {key}=1", "--zz{w}", "-zz{w}", "--cfg=zz{w}", "{key}={w}]"]
# malformed for a single run only: in a sweep these are jobs with bad values, which fail alone (test_sweeps.py)
SINGLE_RUN_SYNTAX = ["{key}=${{zz{w}}}", "{key}=1,{w}", "{key}=choice(1,{w})", "{key}=range(1,3)"]
KEYS = ["run.n_steps", "sampler.step_size", "seed"]


def formatted(templates):
    return st.tuples(st.sampled_from(templates), st.sampled_from(KEYS), word).map(lambda t: [t[0].format(key=t[1], w=t[2])])


# malformed with -m only: a second mode beside --multirun
MULTIRUN_ONLY = ["--cfg=job", "--cfg=hydra", "--run", "--info", "--shell-completion"]
malformed = st.one_of(multirun_or_not(formatted(SYNTAX)), single(formatted(SINGLE_RUN_SYNTAX)),
                      st.sampled_from(MULTIRUN_ONLY).map(lambda option: (["-m"], [option])))

option_after_overrides = single(st.tuples(st.sampled_from(["-m", "--multirun", "--run"]), identifier).map(
    lambda t: [t[0], f"seed={len(t[1])}"]))

CATEGORIES = {"bad_group": bad_group, "unknown_key": unknown_key, "wrong_type": wrong_type, "negative_count": negative_count,
              "out_of_range": out_of_range, "malformed": malformed, "option_after_overrides": option_after_overrides}


def load_run_module():
    spec = importlib.util.spec_from_file_location("sgmcmc_run_cli", ROOT / "run.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RUN = load_run_module()


def run_in_process(argv):
    """``python run.py <argv>`` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv
    sys.argv = [str(ROOT / "run.py"), *argv]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            RUN.main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else 1
    except BaseException as error:  # noqa: BLE001 - a traceback in a real process
        code = f"raised {type(error).__name__}: {error}"
    finally:
        sys.argv = saved
    return code, out.getvalue(), err.getvalue()


def check_one_line_exit_2(code, stdout, stderr, argv, results_dir):
    lines = stderr.strip().splitlines()
    assert code == 2, f"{argv}: exit {code}, stderr {stderr!r}"
    assert len(lines) == 1 and lines[0].startswith("error: "), f"{argv}: stderr {stderr!r}"
    assert "Traceback" not in stdout + stderr, argv
    assert not (results_dir.exists() and any(results_dir.iterdir())), f"{argv}: a result folder was made"


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_malformed_command_line_exits_2_with_one_error_line(category):
    @settings(max_examples=8, deadline=None, derandomize=True, database=None)
    @given(CATEGORIES[category])
    def case(options_and_tail):
        options, tail = options_and_tail
        folder = Path(tempfile.mkdtemp(prefix="sgmcmc-fuzz-"))
        try:
            results_dir = folder / "runs"
            argv = [*options, *BASE, f"run.results_dir={results_dir}", *tail]
            check_one_line_exit_2(*run_in_process(argv), argv, results_dir)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    case()


@pytest.mark.parametrize("args", [
    ["seed=1", "-m", "seed=2"],                                   # an option after the overrides
    ["-m", "sampler=sgld,sghmc", "sampler.friction=1"],           # a key that one job's sampler lacks
    ["-m", "hydra/launcher=nope", "seed=1,2"],                     # a launcher that does not exist
    ["--cfg=nope"],                                                # an option's bad value
    ["run.n_steps='1\n2'"],                                        # a line break inside a value
])
def test_malformed_command_line_in_a_real_process(args, tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(ROOT / "run.py"), *args, f"run.results_dir={tmp_path / 'runs'}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=120)
    check_one_line_exit_2(result.returncode, result.stdout, result.stderr, args, tmp_path / "runs")



def test_an_unknown_key_of_a_variant_sampler_file_lists_its_sampler_s_keys(tmp_path):
    """sampler/ccadl_shang2015.yaml configures ccadl: the allowed keys are CCAdL's declared ones."""
    argv = [*BASE, f"run.results_dir={tmp_path / 'runs'}", "sampler=ccadl_shang2015", "sampler.bogus=1"]
    code, stdout, stderr = run_in_process(argv)
    check_one_line_exit_2(code, stdout, stderr, argv, tmp_path / "runs")
    allowed = ", ".join(sorted({"name", *SAMPLER_FIELDS["ccadl"]}))
    assert stderr.strip() == (f"error: sampler.bogus is not a known key of sampler 'ccadl_shang2015'; "
                              f"allowed keys are {allowed}"), stderr
