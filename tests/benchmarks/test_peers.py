"""benchmarks.peers (``make bench-peers``): the parts without jax always; the blackjax side when jax and blackjax
are installed (``pip install -e ".[peers]"``; ``make test`` does not install them, so those tests skip there).
No timing assertions: speeds are the benchmark's business."""

from __future__ import annotations

import json
import math
import time

import numpy as np
import pytest

from benchmarks import peers
from sgmcmc.evaluation import Evaluator
from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target

KL_MAX = 0.02  # KL(p‖q) on the double well's grid: 0.001-0.005 for every side at the quick settings
# The Euler schemes' first-order bias of E θ² at the benchmark's step sizes (measured −0.016 for SGLD at ε = 0.02
# on both sides): allowed against the exact value, never between the two sides (the same dynamics, the same bias).
SECOND_MOMENT_ALLOWANCE = 0.025
Z_MAX = 4.0
N_CHAINS, N_STEPS, BURN_IN = 1000, 1000, 200


@pytest.fixture(scope="module")
def double_well():
    target = make_target("double_well", **peers.TARGETS["double_well"])
    return target, Evaluator(target), target.initial_position(N_CHAINS, np.random.default_rng(0))


@pytest.fixture(scope="module")
def our_cells(double_well):
    """Our cell of each sampler on the double well at the quick settings, run once for the module."""
    target, evaluator, theta0 = double_well
    cells = {}

    def cell(sampler_name):
        if sampler_name not in cells:
            cells[sampler_name] = peers.ours_cell(target, sampler_name, theta0, N_STEPS, BURN_IN, 0, 0.0, evaluator,
                                                  keep_samples=True)
        return cells[sampler_name]

    return cell


@pytest.fixture(scope="module")
def jax_installed():
    pytest.importorskip("jax")
    pytest.importorskip("blackjax")
    return peers.load_jax()


def exact_failures(cell: dict) -> list[str]:
    """Where a cell's samples disagree with the exact density: KL(p‖q) ≥ KL_MAX, or E θ / E θ² further from the
    exact value than Z_MAX standard errors (batch means over the chains) plus the discretisation allowance."""
    scores = cell["scores"]
    if not scores["finite"]:
        return ["non-finite samples"]
    failures = [f"KL(p‖q) {scores['kl_pq']:.4f}"] if scores["kl_pq"] >= KL_MAX else []
    for name, allowance in (("mean", 0.0), ("second_moment", SECOND_MOMENT_ALLOWANCE)):
        moment = scores["moments"][name]
        for estimate, exact, se in zip(moment["estimate"], moment["exact"], moment["standard_error"]):
            if abs(estimate - exact) > Z_MAX * se + allowance:
                failures.append(f"{name} {estimate:.4f} against {exact:.4f} (se {se:.4f})")
    return failures


def agreement_failures(a: dict, b: dict) -> list[str]:
    """Where two cells' E θ and E θ² differ by more than Z_MAX combined standard errors (:func:`peers.agreement_z`)."""
    agreement = peers.agreement_z(a["scores"], b["scores"])
    return [f"{name}[{i}] z = {z:.1f}" for name, values in agreement.items() for i, z in enumerate(values) if abs(z) > Z_MAX]


# -- without jax -----------------------------------------------------------------------------------------------
def test_timed_repeats_returns_the_first_result_and_repeats_until_min_seconds():
    calls = []

    def call(repeat):
        calls.append(repeat)
        time.sleep(0.02)
        return f"run {repeat}"

    first, seconds, count = peers.timed_repeats(call, min_seconds=0.05)
    assert first == "run 0"
    assert calls == list(range(count)) and 1 <= count <= 3  # a sleep is never shorter than asked: 3 reach 0.05 s
    assert seconds > 0
    first, _, count = peers.timed_repeats(lambda repeat: repeat, min_seconds=0.0)
    assert (first, count) == (0, 1)


def test_ratio_and_rng_bound_fraction():
    assert peers.speed_ratio(3e6, 2e6) == pytest.approx(1.5)
    assert peers.speed_ratio(None, 2e6) is None and peers.speed_ratio(3e6, None) is None
    # 1e8 normals/s and 2 normals per chain-step bound a sampler at 5e7 chain-steps/s; 1e7 is a fifth of that
    assert peers.rng_bound_fraction(1e7, 1e8, 2.0) == pytest.approx(0.2)
    assert peers.rng_bound_fraction(None, 1e8, 2.0) is None


def test_normals_per_second_is_a_finite_rate():
    rate = peers.normals_per_second(size=2**12, repeats=1)  # benchmarks.engine's measure, used here
    assert math.isfinite(rate) and rate > 0


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
@pytest.mark.parametrize("target_name", list(peers.TARGETS))
@pytest.mark.parametrize("sampler_name", list(peers.OUR_SAMPLERS))
def test_every_step_draws_two_normals_per_coordinate(target_name, sampler_name):
    target = make_target(target_name, **peers.TARGETS[target_name])
    sampler = make_sampler(sampler_name, target, **peers.OUR_SAMPLERS[sampler_name])
    assert peers.normals_per_chain_step(sampler) == 2 * target.dim  # gradient noise + injected noise


def test_moment_check_standard_errors_from_batch_means():
    rng = np.random.default_rng(3)
    iid = rng.standard_normal((1, 20_000, 2))
    check = peers.moment_check(iid, np.zeros(2), np.ones(2))
    assert check["batches"] == 20
    assert np.all(np.abs(check["mean"]["z"]) < Z_MAX) and np.all(np.abs(check["second_moment"]["z"]) < Z_MAX)
    assert np.allclose(check["mean"]["tau"], 1.0, atol=0.8)  # independent draws: τ ≈ 1
    assert np.allclose(check["mean"]["standard_error"], 1 / math.sqrt(20_000), rtol=0.5)
    many = peers.moment_check(rng.standard_normal((500, 40, 1)) + 0.1, [0.0], [1.01])
    assert many["batches"] == 500  # one batch per chain
    assert many["mean"]["z"][0] > 10  # a shift of 0.1 at se ≈ 0.007
    # a chain that stays put (autocorrelated) gets a larger standard error than its sample size suggests
    sticky = np.repeat(rng.standard_normal((1, 200, 1)), 50, axis=1)
    assert peers.moment_check(sticky, [0.0], [1.0])["mean"]["tau"][0] > 10


@pytest.mark.validate  # in make validate: make test took 687 s on a cold clone with it (budget 600 s)
def test_our_cell_samples_the_double_well(our_cells):
    for sampler_name in peers.OUR_SAMPLERS:
        cell = our_cells(sampler_name)
        assert cell["status"] == "completed" and cell["runs_timed"] == 1
        assert cell["samples"].shape == (N_CHAINS, N_STEPS - BURN_IN, 1)
        assert cell["chain_steps_per_second"] > 0 and cell["normals_per_chain_step"] == 2
        assert exact_failures(cell) == [], sampler_name


def test_row_table_and_report(tmp_path):
    def moments(mean, second):  # moment_check's fields that agreement_z reads
        return {"mean": {"estimate": [mean], "standard_error": [0.01]},
                "second_moment": {"estimate": [second], "standard_error": [0.03]}}

    ours = {"chain_steps_per_second": 4e6, "normals_per_chain_step": 2.0, "status": "completed",
            "scores": {"finite": True, "kl_pq": 0.0045, "moments": moments(0.0, 0.8)}, "samples": np.zeros(3)}
    f64 = {"chain_steps_per_second": 8e6, "dtype": "float64",
           "scores": {"finite": True, "kl_pq": 0.0043, "moments": moments(0.02, 0.83)}}
    f32 = {"chain_steps_per_second": 1e7, "dtype": "float32", "scores": {"finite": False, "nonfinite_chains": 2}}
    row = peers.assemble_row("double_well", "sgld", 1000, 5000, 1000, ours,
                             {"blackjax_float64": f64, "blackjax_float32": f32}, 1e8, {"float64": 4e7, "float32": 8e7})
    assert row["ratio_ours_to_blackjax_float64"] == pytest.approx(0.5)
    assert row["ours_fraction_of_rng_bound"] == pytest.approx(4e6 / (1e8 / 2))
    assert row["blackjax_float64"]["fraction_of_jax_rng_bound"] == pytest.approx(8e6 / (4e7 / 2))
    assert "samples" not in row["ours"]
    z = row["agreement_z_ours_blackjax_float64"]
    assert z["mean"] == pytest.approx([-0.02 / math.hypot(0.01, 0.01)])
    assert z["second_moment"] == pytest.approx([-0.03 / math.hypot(0.03, 0.03)])
    table = peers.markdown_table([row], 1e8, {"float64": 4e7})
    assert "| double_well | sgld | 1000 | 5000 | 0.02 | 4e6 | 8e6 | 1e7 | 0.5 | 0.0045 | 0.0043 | non-finite in 2 chains | 1.41 | 0.08 |" in table
    assert table.startswith("numpy standard normals 1e8/s")
    missing = peers.assemble_row("double_well", "sgld", 1, 10, 2, ours, {}, 1e8)
    assert missing["ratio_ours_to_blackjax_float64"] is None and missing["agreement_z_ours_blackjax_float64"] is None
    assert "| 4e6 | – | – | – | 0.0045 | – | – | – | 0.08 |" in peers.markdown_table([missing], 1e8)

    path = peers.write_report({"results": [row]}, table, tmp_path / "bench")
    assert path.name.startswith("peers-") and path.suffix == ".json"
    assert json.loads(path.read_text())["results"][0]["sampler"] == "sgld"
    assert path.with_suffix(".md").read_text() == table
    assert (tmp_path / "bench" / "LATEST-peers").read_text().strip() == path.name


def test_main_without_jax_stops_with_the_install_command(monkeypatch):
    def missing(**options):
        raise ImportError("No module named 'jax'")

    monkeypatch.setattr(peers, "load_jax", missing)
    with pytest.raises(SystemExit, match=r'pip install -e "\.\[peers\]"'):
        peers.main(["--quick"])


# -- with jax and blackjax -------------------------------------------------------------------------------------
@pytest.mark.parametrize("target_name", list(peers.TARGETS))
def test_jax_gradients_are_the_targets(jax_installed, target_name):
    jax, _ = jax_installed
    target = make_target(target_name, **peers.TARGETS[target_name])
    theta = np.random.default_rng(1).normal(scale=2.0, size=(50, target.dim))
    with jax.enable_x64(True):
        ours = np.asarray(jax.vmap(peers.jax_gradient(target_name))(jax.numpy.asarray(theta)))
    np.testing.assert_allclose(ours, target.gradient(theta), rtol=1e-12, atol=1e-12)


def test_sghmc_side_scans_the_step_of_blackjax_sghmc(jax_installed):
    """Our blackjax SGHMC scans ``diffusions.sghmc`` with the momentum carried over; blackjax.sghmc's kernel is
    the same scan from a momentum it draws: both from the same key and momentum give the same position."""
    jax, blackjax = jax_installed
    from blackjax.sgmcmc import diffusions
    from blackjax.util import generate_gaussian_noise

    gradient = peers.jax_gradient("double_well")
    exact = lambda position, batch: -gradient(position)  # noqa: E731  (a fixed minibatch: no noise)
    key, position, steps = jax.random.PRNGKey(4), jax.numpy.asarray([0.3]), 25
    with jax.enable_x64(True):
        kernel = blackjax.sghmc(exact, num_integration_steps=steps, alpha=peers.FRICTION)
        theirs = kernel.step(key, position, None, 0.01)
        integrator = diffusions.sghmc(alpha=peers.FRICTION, beta=0.0)
        state = (position, generate_gaussian_noise(key, position))
        for step_key in jax.random.split(key, steps):
            state = integrator(step_key, *state, exact(state[0], None), 0.01)
    np.testing.assert_allclose(np.asarray(state[0]), np.asarray(theirs), rtol=1e-12)


@pytest.mark.parametrize("sampler_name", list(peers.OUR_SAMPLERS))
def test_both_sides_sample_the_double_well(jax_installed, double_well, our_cells, sampler_name):
    _, evaluator, theta0 = double_well
    ours = our_cells(sampler_name)
    theirs = peers.blackjax_cell("double_well", sampler_name, theta0, N_STEPS, BURN_IN, 0, 0.0, "float64", evaluator,
                                 keep_samples=True)
    assert theirs["samples"].shape == (N_CHAINS, N_STEPS - BURN_IN, 1)
    assert exact_failures(ours) == []
    assert exact_failures(theirs) == []
    assert agreement_failures(ours, theirs) == []


@pytest.mark.parametrize("temperature", [0.5, 2.0])
def test_a_factor_two_in_the_injected_noise_is_caught(jax_installed, double_well, our_cells, temperature):
    """blackjax's temperature scales the injected noise's variance: at 0.5 or 2 the checks above must fail."""
    _, evaluator, theta0 = double_well
    ours = our_cells("sgld")
    wrong = peers.blackjax_cell("double_well", "sgld", theta0, N_STEPS, BURN_IN, 0, 0.0, "float64", evaluator,
                                temperature=temperature)
    assert exact_failures(wrong) != []
    assert agreement_failures(ours, wrong) != []


@pytest.mark.parametrize("sampler_name", ["sgld", "sghmc"])  # sgnht's float32 column: the next test
def test_float32_column_runs_in_float32(jax_installed, double_well, sampler_name):
    _, evaluator, theta0 = double_well
    cell = peers.blackjax_cell("double_well", sampler_name, theta0[:50], 100, 20, 0, 0.0, "float32", evaluator)
    assert cell["dtype"] == "float32" and cell["scores"]["finite"]  # blackjax_cell checks the samples' dtype


def test_quick_main_writes_the_report(jax_installed, tmp_path, capsys):
    import numba

    threads = numba.get_num_threads()
    try:
        path = peers.main(["--quick", "--targets", "double_well", "--samplers", "sgnht", "--chains", "20",
                           "--steps-many", "300", "--output", str(tmp_path)])
    finally:
        numba.set_num_threads(threads)  # main sets one thread for the whole process
    report = json.loads(path.read_text())
    (row,) = report["results"]
    assert (row["target"], row["sampler"], row["n_chains"], row["n_steps"], row["burn_in"]) == ("double_well", "sgnht", 20, 300, 60)
    assert {"ours", "blackjax_float64", "blackjax_float32", "ratio_ours_to_blackjax_float64"} <= set(row)
    assert row["blackjax_float32"]["dtype"] == "float32" and row["ours"]["status"] == "completed"
    assert report["numpy_normals_per_second"] > 0 and report["provenance"]["git_commit"]
    assert report["threads"]["numba"] == 1
    assert (tmp_path / "LATEST-peers").read_text().strip() == path.name
    assert "| double_well | sgnht | 20 | 300 |" in capsys.readouterr().out
