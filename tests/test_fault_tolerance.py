"""Fault tolerance of ``run.py`` as a user meets it: a run killed with SIGKILL, or stopped by SIGINT/SIGTERM, and
continued with ``run.resume=<folder>`` ends with samples.npz, moments.npz, trace.csv and metrics.json (timings
aside) equal to an uninterrupted run's; a corrupt newest checkpoint falls back to the previous one; no usable
checkpoint, another config or a finished run is one line and exit 2; a damaged data file is a checksum error.

The kill is deterministic: the test seam ``tests/seams/run_paused.py n`` runs ``run.py`` and stops it (SIGSTOP)
right after its n-th checkpoint, and the test then kills or signals it. A signal sent while the run is stopped
must stop it before its next step: only the main thread takes SIGINT/SIGTERM (:mod:`sgmcmc.signals`).
(The data loader's own checksum tests are tests/data/test_folder.py and tests/data/test_libsvm.py.)
"""

import bz2
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from sgmcmc.checkpoint import CHECKPOINT, PREVIOUS
from sgmcmc.experiment import without_timings
from tests.targets.test_lda import N_TOPICS, _write_corpus
from tests.test_checkpoint import _flip_byte

# One worker takes the whole module (make's --dist loadgroup), so that its module fixture `double_well` is built
# once a run: the uninterrupted reference run, 2.6 s.
pytestmark = pytest.mark.xdist_group("test_fault_tolerance")

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"
QUIET = ["run.progress=false"]
DOUBLE_WELL = ["sampler=sgrhmc", "target=double_well", "run.n_steps=300", "run.n_chains=200", "run.burn_in=100",
               "run.thin=2", "run.eval_every=50", "run.checkpoint_every_steps=40", *QUIET]
CCADL = ["sampler=ccadl", "target=normal_gamma", "sampler.noise_estimate=running", "run.n_steps=400", "run.n_chains=20", "run.thin=1",
         "run.burn_in=100", "run.eval_every=50", "run.checkpoint_every_steps=60", "run.figures=false", *QUIET]


def _lda(folder: Path) -> list[str]:
    """Online LDA on tests/targets/test_lda.py's tiny corpus (260 training documents): 40 minibatches of 10,
    so the run is in its second pass over the stream when it is killed after 5 checkpoints (step 30)."""
    source, vocabulary = _write_corpus(folder)
    return ["sampler=sgrld", "target=lda", f"target.source={source}", f"target.vocabulary={vocabulary}",
            "target.source_format=lines", f"target.n_topics={N_TOPICS}", "target.alpha=0.1", "target.beta=0.01",
            "target.batch_size=10", "target.n_sweeps=20", "target.corpus_size=260", "target.n_held_out=40",
            "target.buffer_size=64", "run.n_steps=40", "run.thin=5", "run.eval_every=10", "run.checkpoint_every_steps=6",
            "run.figures=false", *QUIET]


def _command(args):
    return [sys.executable, str(ROOT / "run.py"), *args]


def _env(extra=None):
    return dict(os.environ, PYTHONPATH=str(ROOT), http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9",
                **(extra or {}))


def run_cli(*args):
    return subprocess.run(_command(args), capture_output=True, text=True, cwd=ROOT, env=_env(), timeout=600)


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a child of a background job would inherit an ignored SIGINT


def start_and_pause(args, stop_after: int) -> subprocess.Popen:
    """Start ``run.py args`` and wait until it has stopped itself after its ``stop_after``-th checkpoint: the wait is
    ``waitpid(WUNTRACED)``, which returns when the kernel reports the child stopped (or ended), not a poll on the clock."""
    command = [sys.executable, str(ROOT / "tests" / "seams" / "run_paused.py"), str(stop_after), *args]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=_env(),
                               preexec_fn=_default_sigint)
    status = []
    waiter = threading.Thread(target=lambda: status.append(os.waitpid(process.pid, os.WUNTRACED)[1]), daemon=True)
    waiter.start()
    waiter.join(timeout=300)
    if not status:
        process.kill()
        waiter.join()  # it reaps the killed run: its exit code is known here only
        process.returncode = os.waitstatus_to_exitcode(status[0])
        out, err = process.communicate()
        pytest.fail(f"run.py did not reach its checkpoint {stop_after} in 300 s:\n{out}\n{err}")
    if not os.WIFSTOPPED(status[0]):  # it ended: waitpid has reaped it, so its exit code is known here only
        process.returncode = os.waitstatus_to_exitcode(status[0])
        out, err = process.communicate()
        pytest.fail(f"run.py ended ({process.returncode}) before its checkpoint {stop_after}:\n{out}\n{err}")
    return process


def only_folder(results_dir: Path) -> Path:
    (folder,) = [p for p in results_dir.iterdir() if p.is_dir()]
    return folder


def killed_run(args, results_dir: Path, stop_after: int) -> Path:
    """The folder of a run killed with SIGKILL right after its ``stop_after``-th checkpoint."""
    process = start_and_pause([*args, f"run.results_dir={results_dir}"], stop_after)
    process.kill()
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    folder = only_folder(results_dir)
    assert (folder / CHECKPOINT).is_file() and not (folder / "metrics.json").exists()
    return folder


def completed_run(args, results_dir: Path) -> Path:
    result = run_cli(*args, f"run.results_dir={results_dir}")
    assert result.returncode == 0, result.stderr
    return Path(result.stdout.strip().splitlines()[-1])


def resume(args, folder: Path):
    return run_cli(*args, f"run.resume={folder}")


def metrics(folder: Path) -> dict:
    return json.loads((folder / "metrics.json").read_text())


def assert_same_results(reference: Path, resumed: Path) -> None:
    """Bit-identical samples, moments, trace, config, artifacts; metrics equal but for the timings."""
    with np.load(reference / "samples.npz") as a, np.load(resumed / "samples.npz") as b:
        assert a["theta"].size and np.array_equal(a["theta"], b["theta"])
    with np.load(reference / "moments.npz") as a, np.load(resumed / "moments.npz") as b:
        assert sorted(a.files) == sorted(b.files)
        for name in a.files:
            assert np.array_equal(a[name], b[name]), name
    for name in ("trace.csv", "topics.txt"):
        if (reference / name).exists():
            assert (reference / name).read_bytes() == (resumed / name).read_bytes(), name
    configs = [yaml.safe_load((folder / "config.yaml").read_text()) for folder in (reference, resumed)]
    for config in configs:
        assert config["run"].pop("results_dir") and config["run"]["resume"] is None
    assert configs[0] == configs[1]
    expected, got = without_timings(metrics(reference)), without_timings(metrics(resumed))
    assert got == expected and got["status"] == "completed"
    assert not (resumed / CHECKPOINT).exists() and not (resumed / PREVIOUS).exists()  # a finished run keeps none


def assert_one_line_error(result, *needles) -> str:
    assert result.returncode == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr + result.stdout, result.stderr
    assert lines[0].startswith("error: ") and all(needle in lines[0] for needle in needles), lines[0]
    return lines[0]


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="module")
def double_well(tmp_path_factory):
    """(uninterrupted folder, pristine copy of a run killed after checkpoint 3 = step 120)."""
    root = tmp_path_factory.mktemp("double_well")
    reference = completed_run(DOUBLE_WELL, root / "reference")
    killed = killed_run(DOUBLE_WELL, root / "killed", stop_after=3)
    return reference, killed


def fresh_copy(folder: Path, tmp_path: Path) -> Path:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    return copy


# ------------------------------------------------------------------------------------------- kill -9 + resume


def test_killed_double_well_run_resumes_bit_identically(double_well, tmp_path):
    reference, killed = double_well
    folder = fresh_copy(killed, tmp_path)
    log_before = (folder / "run.log").read_text()
    result = resume(DOUBLE_WELL, folder)
    assert result.returncode == 0, result.stderr
    assert Path(result.stdout.strip().splitlines()[-1]) == folder and len(list(tmp_path.iterdir())) == 1
    assert_same_results(reference, folder)
    assert metrics(folder)["figures"] == ["figures/histogram.png", "figures/trace.png", "figures/metrics.png"]
    assert all((folder / figure).stat().st_size > 1000 for figure in metrics(folder)["figures"])
    log = (folder / "run.log").read_text()
    assert log.startswith(log_before) and "resuming" in log[len(log_before):]
    record = json.loads((folder / "provenance.json").read_text())
    assert [r["from_step"] for r in record["resumes"]] == [120] and record["resumes"][0]["checkpoint"] == CHECKPOINT
    assert "run.resume=" in " ".join(record["resumes"][0]["command_line"])


@pytest.mark.parametrize("case", ["ccadl-normal_gamma", "sgrld-lda"])
def test_killed_run_resumes_bit_identically(case, tmp_path):
    args = CCADL if case == "ccadl-normal_gamma" else _lda(tmp_path / "corpus")
    stop_after = 3 if case == "ccadl-normal_gamma" else 5  # steps 180 / 30 (LDA: second pass over the stream)
    reference = completed_run(args, tmp_path / "reference")
    folder = killed_run(args, tmp_path / "killed", stop_after)
    result = resume(args, folder)
    assert result.returncode == 0, result.stderr
    assert_same_results(reference, folder)
    from_step = json.loads((folder / "provenance.json").read_text())["resumes"][0]["from_step"]
    assert from_step == (180 if case == "ccadl-normal_gamma" else 30)


# ----------------------------------------------------------------------------------------- SIGINT / SIGTERM


@pytest.mark.parametrize("signal_number", [signal.SIGINT, signal.SIGTERM])
def test_signal_flushes_an_interrupted_run_that_resumes_bit_identically(signal_number, double_well, tmp_path):
    reference, _ = double_well
    process = start_and_pause([*DOUBLE_WELL, f"run.results_dir={tmp_path / 'runs'}"], stop_after=4)  # step 160
    process.send_signal(signal_number)  # handled when the run continues: it stops before step 161
    process.send_signal(signal.SIGCONT)
    out, err = process.communicate(timeout=300)
    assert process.returncode == 130, err
    folder = Path(out.strip().splitlines()[-1])
    status = metrics(folder)
    assert status["status"] == "interrupted" and status["steps_done"] == 160
    with np.load(folder / "samples.npz") as samples:
        assert samples["theta"].shape == (200, 30, 1)  # steps 102, 104, ..., 160
    assert (folder / CHECKPOINT).is_file() and (folder / "trace.csv").is_file()
    result = resume(DOUBLE_WELL, folder)
    assert result.returncode == 0, result.stderr
    assert_same_results(reference, folder)


def _blocked_signals(task: Path) -> int:
    """The SigBlk mask of one thread (/proc/<pid>/task/<tid>/status): bit n-1 set when signal n is blocked."""
    (line,) = [line for line in (task / "status").read_text().splitlines() if line.startswith("SigBlk:")]
    return int(line.split()[1], 16)


@pytest.mark.parametrize("case", ["double_well", "sgrld-lda"])
def test_only_the_main_thread_takes_the_stop_signals(case, tmp_path):
    """The deterministic half of the signal tests above: a signal sent to a stopped run is taken, when it continues,
    by whichever thread wakes first, so every thread but the main one (OpenBLAS's, tqdm's monitor, numba's pool on
    LDA) must block SIGINT and SIGTERM. The race this closes is rare (it passed 10 of 10 runs without the block);
    this check fails at once on it."""
    if case == "double_well":
        args = [*DOUBLE_WELL[:-1], "run.progress=true"]  # the progress bar starts tqdm's monitor thread
    else:
        args = _lda(tmp_path / "corpus")
    process = start_and_pause([*args, f"run.results_dir={tmp_path / 'runs'}"], stop_after=1)
    try:
        workers = [task for task in Path(f"/proc/{process.pid}/task").iterdir() if int(task.name) != process.pid]
        assert workers, "the run started no thread besides the main one: nothing to check"
        both = (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGTERM - 1))
        takers = [(task.name, (task / "comm").read_text().strip()) for task in workers
                  if _blocked_signals(task) & both != both]
        assert not takers, f"threads that may take SIGINT/SIGTERM: {takers}"
        assert _blocked_signals(Path(f"/proc/{process.pid}/task/{process.pid}")) & both == 0  # the main one takes them
    finally:
        process.kill()
        process.communicate()


# --------------------------------------------------------------------------------------- damaged checkpoints


def test_corrupt_newest_checkpoint_falls_back_to_the_previous_one(double_well, tmp_path):
    reference, killed = double_well
    folder = fresh_copy(killed, tmp_path)
    _flip_byte(folder / CHECKPOINT)
    result = resume(DOUBLE_WELL, folder)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in (folder / "run.log").read_text().splitlines() if "WARNING" in line and PREVIOUS in line]
    assert len(warnings) == 1 and CHECKPOINT in warnings[0] and "step 80" in warnings[0], warnings
    assert json.loads((folder / "provenance.json").read_text())["resumes"][0]["checkpoint"] == PREVIOUS
    assert_same_results(reference, folder)


def test_no_usable_checkpoint_is_one_line_and_no_result(double_well, tmp_path):
    _, killed = double_well
    folder = fresh_copy(killed, tmp_path)
    _flip_byte(folder / CHECKPOINT)
    _flip_byte(folder / PREVIOUS, 0.3)
    line = assert_one_line_error(resume(DOUBLE_WELL, folder), "run.resume: no usable checkpoint", CHECKPOINT, PREVIOUS)
    assert str(folder) in line
    assert not (folder / "metrics.json").exists() and not (folder / "samples.npz").exists()


def test_resume_with_another_config_is_refused_naming_the_keys(double_well, tmp_path):
    _, killed = double_well
    folder = fresh_copy(killed, tmp_path)
    changed = [arg for arg in DOUBLE_WELL if not arg.startswith("run.n_chains")] + ["run.n_chains=100", "sampler.step_size=0.2"]
    assert_one_line_error(resume(changed, folder), "run.resume: the config differs", "run.n_chains=100 (run: 200)",
                          "sampler.step_size=0.2 (run: 0.1)")
    # the keys that change nothing may differ
    other = [arg for arg in DOUBLE_WELL if not arg.startswith("run.checkpoint_every_steps")] + ["run.checkpoint_every_steps=7"]
    assert resume(other, folder).returncode == 0


def test_a_finished_or_unknown_folder_cannot_be_resumed(double_well, tmp_path):
    reference, _ = double_well
    assert_one_line_error(resume(DOUBLE_WELL, reference), "run.resume:", "already ended (status completed)")
    assert_one_line_error(resume(DOUBLE_WELL, tmp_path), "run.resume:", "is not a run folder")


def test_second_signal_stops_at_once():
    """In process: the first SIGINT only asks the run to stop after its step; the second raises KeyboardInterrupt.
    ``signal.raise_signal`` returns only after the handler has run (CPython checks for signals before it returns), so
    nothing waits on the clock."""
    from sgmcmc.experiment import _signals_stop_the_run

    previous = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with _signals_stop_the_run() as stop_requested:
            assert not stop_requested()
            signal.raise_signal(signal.SIGINT)
            assert stop_requested()
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)


# ----------------------------------------------------------------------------------------- damaged data file


@pytest.mark.skipif(not (SHARED_DATA / "libsvm/letter/letter.scale.tr.bz2").is_file(), reason="no shared letter files")
@pytest.mark.parametrize("damage", ["truncated", "changed"])
def test_damaged_data_file_is_a_one_line_checksum_error(damage, tmp_path):
    """A copy of the letter data set in a temporary data folder, its training file truncated (a broken bzip2
    stream) or recompressed with one line less (a valid stream with the wrong content)."""
    data = tmp_path / "data"
    (data / "libsvm/letter").mkdir(parents=True)
    for name in ("letter.scale.tr.bz2", "letter.scale.t.bz2"):
        shutil.copyfile(SHARED_DATA / "libsvm/letter" / name, data / "libsvm/letter" / name)
    damaged = data / "libsvm/letter/letter.scale.tr.bz2"
    if damage == "truncated":
        damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
        needles = ("corrupt compressed file", "truncated")
    else:
        lines = bz2.decompress(damaged.read_bytes()).splitlines(keepends=True)
        damaged.write_bytes(bz2.compress(b"".join(lines[:-1])))
        needles = ("checksum mismatch",)
    result = run_cli("sampler=sgld", "target=drbm", "target.dataset=letter", f"data_dir={data}", "run.n_steps=5",
                     "run.burn_in=0", "run.n_chains=1", f"run.results_dir={tmp_path / 'runs'}", *QUIET)
    line = assert_one_line_error(result, "data_dir:", str(damaged), *needles)
    assert "delete it to download again" in line
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
