"""The same sweep on Hydra's basic launcher, joblib, submitit (local) and a local Ray gives the same samples
and metrics (timings aside); Ray listens on 127.0.0.1 only and leaves no process or session folder behind.

A launcher whose plugin is not importable is skipped with the reason (pip install -e ".[distributed]")."""

import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from sgmcmc.experiment import without_timings
from sgmcmc_cli import sweep

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ["sampler=sgld,sghmc,sgrhmc", "seed=1,2", "target=double_well", "run.n_steps=60", "run.n_chains=8",
         "run.burn_in=30", "run.eval_every=30", "run.progress=false", "run.figures=false"]
THREADS = {key: "1" for key in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")}
# every variable Ray reads to stay on the loopback, set here too, so that no test ever listens elsewhere
# (test_ray_environment_callback checks that the launcher config alone sets them)
RAY_LOOPBACK_ENV = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
# One worker takes the whole module (make's --dist loadgroup), so that its module fixture `basic_results` is built
# once a run: the basic launcher's six jobs, 2.3 s.
# configs/hydra/launcher/ray.yaml replaces the plugin's "ray" config on purpose (run.py silences this too).
pytestmark = [pytest.mark.xdist_group("test_launchers"),
              pytest.mark.filterwarnings(r"ignore:\s*'hydra/launcher/ray' is validated against ConfigStore schema")]
PLUGINS = {"joblib": ["hydra_plugins.hydra_joblib_launcher"],
           "submitit_local": ["hydra_plugins.hydra_submitit_launcher", "submitit"],
           "ray": ["hydra_plugins.hydra_ray_launcher", "ray"]}
LAUNCHER_ARGS = {"joblib": ["hydra/launcher=joblib", "hydra.launcher.n_jobs=2"],
                 "submitit_local": ["hydra/launcher=submitit_local"]}


def require_plugin(launcher):
    for module in PLUGINS.get(launcher, []):
        if importlib.util.find_spec(module.split(".")[0]) is None or importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not importable: the {launcher} launcher needs pip install -e \".[distributed]\"")


def command(folder: Path, *launcher_args):
    return [sys.executable, str(ROOT / "run.py"), "-m", *SWEEP, *launcher_args, f"run.results_dir={folder / 'runs'}",
            f"hydra.sweep.dir={folder / 'sweep'}"]


def environment():
    return dict(os.environ, PYTHONPATH=str(ROOT), **THREADS, **RAY_LOOPBACK_ENV)


def sweep_results(folder: Path) -> dict:
    """(sampler, seed) -> (samples.npz arrays, metrics.json without timings), from the sweep's manifest."""
    manifest = sweep.read(folder / "sweep")
    assert manifest["counts"] == {"completed": 6}, manifest
    results = {}
    for job in manifest["jobs"]:
        overrides = dict(item.split("=", 1) for item in job["overrides"])
        run = Path(job["run_folder"])
        assert run.parent == (folder / "runs").resolve()
        with np.load(run / "samples.npz") as data:
            arrays = {name: data[name] for name in data.files}
        metrics = json.loads((run / "metrics.json").read_text())
        results[overrides["sampler"], overrides["seed"]] = (arrays, without_timings(metrics))
    assert len(results) == 6 and len({job["run_folder"] for job in manifest["jobs"]}) == 6
    return results


@pytest.fixture(scope="module")
def basic_results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("basic")
    result = subprocess.run(command(folder), capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=600)
    assert result.returncode == 0, result.stderr
    return sweep_results(folder)


def assert_same(results, reference):
    assert results.keys() == reference.keys()
    for key, (arrays, metrics) in reference.items():
        other_arrays, other_metrics = results[key]
        assert arrays.keys() == other_arrays.keys()
        for name in arrays:
            assert np.array_equal(arrays[name], other_arrays[name]), (key, name)
        assert other_metrics == metrics, key


def test_basic_launcher_runs_the_six_jobs(basic_results):
    assert sorted(basic_results) == sorted((s, seed) for s in ("sgld", "sghmc", "sgrhmc") for seed in ("1", "2"))
    assert not np.array_equal(basic_results["sgld", "1"][0]["theta"], basic_results["sgld", "2"][0]["theta"])


@pytest.mark.validate  # a sweep of six runs per launcher (11 s each): the long tier, with the ray one below
@pytest.mark.parametrize("launcher", ["joblib", "submitit_local"])
def test_launcher_gives_the_same_samples_and_metrics_as_the_basic_one(launcher, basic_results, tmp_path):
    require_plugin(launcher)
    result = subprocess.run(command(tmp_path, *LAUNCHER_ARGS[launcher]), capture_output=True, text=True, cwd=ROOT,
                            env=environment(), timeout=600)
    assert result.returncode == 0, result.stderr
    assert_same(sweep_results(tmp_path), basic_results)


# --- Ray: a local Ray on 127.0.0.1, watched while it runs ------------------------------------------------

def processes() -> dict:
    """pid -> (parent pid, command line, start time) of every live process (a zombie holds nothing and is not
    listed: where pid 1 does not reap the orphans, a stopped Ray process can stay one). The start time (clock
    ticks since boot, field 22 of /proc/<pid>/stat) tells a process from a later one that reuses its id."""
    table = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except (OSError, ValueError):
                continue
            state, parent, start = fields[0], int(fields[1]), int(fields[19])  # fields 3, 4 and 22 of stat
            if state != "Z":
                table[int(entry.name)] = (parent, cmdline, start)
    return table


def ray_processes(root_pid: int, temp_dir: str) -> dict:
    """pid -> start time of the sweep's process tree and of every process started for its Ray session (named by
    its temp dir)."""
    table = processes()
    found = {pid for pid, (_, cmdline, _) in table.items() if temp_dir in cmdline} | ({root_pid} & table.keys())
    grew = True
    while grew:
        children = {pid for pid, (parent, _, _) in table.items() if parent in found} - found
        found |= children
        grew = bool(children)
    return {pid: table[pid][2] for pid in found}


def still_running(started: dict) -> dict:
    """The processes of ``started`` (pid -> start time) still alive: same id *and* same start time, so that an id
    reused by a stranger is not taken for one of ours."""
    table = processes()
    return {pid: table[pid][1] for pid, start in started.items() if pid in table and table[pid][2] == start}


def listeners() -> list[tuple[str, set]]:
    """(local address, pids) of every listening TCP socket, from ss -ltnpH."""
    output = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True).stdout
    rows = []
    for line in output.splitlines():
        fields = line.split()
        if len(fields) >= 4:
            rows.append((fields[3], {int(pid) for pid in re.findall(r"pid=(\d+)", line)}))
    return rows


def is_loopback(address: str) -> bool:
    host = address.rsplit(":", 1)[0].strip("[]")
    return host == "::1" or host.removeprefix("::ffff:").startswith("127.")


def stop(started: dict) -> None:
    """SIGKILL the processes of ``started`` (pid -> start time) that are still the ones this test saw start."""
    for pid in still_running(started):
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def test_only_the_processes_seen_start_are_stopped():
    """A process id seen earlier but now held by another process (another start time) is not ours: it is neither
    reported as left behind nor killed."""
    child = subprocess.Popen(["sleep", "60"])
    try:
        start = processes()[child.pid][2]
        stranger = {child.pid: start - 1}  # the same id, started at another time
        assert still_running(stranger) == {}
        stop(stranger)
        with pytest.raises(subprocess.TimeoutExpired):  # a SIGKILL sent would end it within this wait for its end
            child.wait(timeout=0.2)
        assert child.pid in still_running({child.pid: start})
        stop({child.pid: start})
        assert child.wait(timeout=10) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


@pytest.mark.validate  # a local Ray cluster and six runs (14 s): the long tier
def test_ray_launcher_gives_the_same_results_on_the_loopback_only(basic_results, tmp_path):
    require_plugin("ray")
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) is needed to check that Ray listens on 127.0.0.1 only")
    sessions_before = set(Path("/tmp/ray").glob("session_*"))
    # Ray's socket paths must stay under 107 characters: a short temporary folder, not tmp_path
    temp_dir = tempfile.mkdtemp(prefix="sgray", dir="/tmp")
    args = ["hydra/launcher=ray", f"++hydra.launcher.ray.init._temp_dir={temp_dir}", "hydra.launcher.ray.init.num_cpus=2"]
    seen_pids, seen_listeners = {}, {}  # pid -> start time of every Ray process seen; address -> owners
    process = subprocess.Popen(command(tmp_path, *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT, env=environment())
    try:
        deadline = time.monotonic() + 600
        while process.poll() is None and time.monotonic() < deadline:
            pids = ray_processes(process.pid, temp_dir)
            seen_pids.update({pid: start for pid, start in pids.items() if pid != process.pid and pid not in seen_pids})
            for address, owners in listeners():
                if owners & pids.keys():
                    seen_listeners[address] = owners & pids.keys()
            outside = [address for address in seen_listeners if not is_loopback(address)]
            if outside:
                stop(seen_pids)
                process.kill()
                pytest.fail(f"Ray listened outside the loopback: {outside}")
            time.sleep(0.2)
        if process.poll() is None:
            process.kill()
        stdout, stderr = process.communicate(timeout=60)
        assert process.returncode == 0, stderr
        # Ray's processes end with the sweep
        deadline = time.monotonic() + 30
        while still_running(seen_pids) and time.monotonic() < deadline:
            time.sleep(0.5)
        left = still_running(seen_pids)
        if left:
            stop(seen_pids)
            pytest.fail(f"Ray processes left behind (stopped now): {left}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert seen_listeners, "no Ray listener seen: the check would not have caught one on another address"
    assert all(is_loopback(address) for address in seen_listeners)
    assert set(Path("/tmp/ray").glob("session_*")) == sessions_before
    assert not Path(temp_dir).exists()
    assert "RayLauncher" in sweep.read(tmp_path / "sweep")["launcher"]
    assert_same(sweep_results(tmp_path), basic_results)


# --- launcher configs ------------------------------------------------------------------------------------

def compose_full(*overrides):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=str(ROOT / "configs"), version_base="1.3"):
        return compose(config_name="config", overrides=list(overrides), return_hydra_config=True)


def compose_hydra(*overrides):
    return compose_full(*overrides).hydra


def test_hydra_launcher_ray_is_the_repository_config_on_the_loopback():
    for name in ("ray", "ray_local"):
        launcher = compose_hydra(f"hydra/launcher={name}").launcher
        assert launcher._target_ == "hydra_plugins.hydra_ray_launcher.ray_launcher.RayLauncher"
        assert launcher.ray.init.address == "local" and launcher.ray.init._node_ip_address == "127.0.0.1"
        assert launcher.ray.init.include_dashboard is False
    cluster = compose_hydra("hydra/launcher=ray_cluster").launcher
    assert cluster.ray.init.address == "auto" and cluster.ray.init.object_store_memory is None


def test_slurm_config_extends_the_plugins_schema():
    require_plugin("submitit_local")
    launcher = compose_hydra("hydra/launcher=slurm", "hydra.launcher.partition=short").launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert launcher.partition == "short" and launcher.timeout_min == 60 and launcher.cpus_per_task == 2


def test_ray_environment_callback_keeps_a_local_ray_on_the_loopback(monkeypatch):
    from sgmcmc_cli.hydra_callbacks import RayEnvironment

    for name in RAY_LOOPBACK_ENV:
        monkeypatch.delenv(name, raising=False)
    RayEnvironment().on_multirun_start(compose_full("hydra/launcher=joblib"))
    assert not set(RAY_LOOPBACK_ENV) & set(os.environ)
    RayEnvironment().on_multirun_start(compose_full("hydra/launcher=ray"))
    assert {name: os.environ.get(name) for name in RAY_LOOPBACK_ENV} == RAY_LOOPBACK_ENV
    monkeypatch.delenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER")
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    RayEnvironment().on_multirun_start(compose_full("hydra/launcher=ray_cluster"))  # a cluster's nodes talk over the network
    assert "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER" not in os.environ and os.environ["RAY_AUTH_MODE"] == "token"
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    RayEnvironment().on_multirun_start(compose_full("hydra/launcher=ray_cluster"))
    assert os.environ["RAY_AUTH_MODE"] == "disabled"


@pytest.mark.parametrize("launcher", ["ray", "slurm", "submitit_local"])
def test_missing_launcher_plugin_is_one_line_naming_the_extra(launcher, tmp_path):
    """Without the plugins installed (simulated: hydra_plugins hidden), such a launcher exits 2 before running."""
    shadow = tmp_path / "shadow" / "hydra_plugins"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    code = ("import sys, runpy; import hydra_plugins; hydra_plugins.__path__ = [sys.argv.pop(1)]; "
            f"sys.argv[0] = {str(ROOT / 'run.py')!r}; runpy.run_path(sys.argv[0], run_name='__main__')")
    result = subprocess.run([sys.executable, "-c", code, str(shadow), "-m", f"hydra/launcher={launcher}", "seed=1,2",
                             f"run.results_dir={tmp_path / 'runs'}"], capture_output=True, text=True, cwd=ROOT,
                            env=environment(), timeout=120)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and launcher in lines[0] and 'pip install -e ".[distributed]"' in lines[0], lines
    assert not (tmp_path / "runs").exists()


def test_slurm_without_sbatch_is_one_line(tmp_path):
    require_plugin("submitit_local")
    if shutil.which("sbatch"):
        pytest.skip("sbatch is installed here: a SLURM sweep would be submitted")
    command = [sys.executable, str(ROOT / "run.py"), "-m", "hydra/launcher=slurm", "seed=1,2",
               f"run.results_dir={tmp_path / 'runs'}"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=environment(), timeout=120)
    assert result.returncode == 2 and result.stderr.strip() == (
        "error: hydra/launcher=slurm: sbatch is not on PATH: run the sweep on a SLURM login node"), result.stderr
    assert not (tmp_path / "runs").exists()
