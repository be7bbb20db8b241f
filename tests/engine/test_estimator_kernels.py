"""The gradient estimators on the compiled data kernels (sgmcmc.engine.data_kernels with ``estimator``) against the
numpy steps (sgmcmc/gradient_estimators.py, the reference): for control variates and SVRG (renewals inside the
block and across two blocks), with SGLD, SGHMC (running estimate, clipped), SGNHT and CCAdL on logistic
regression, the θ, r, ξ paths agree to rounding (1e-12), and so do the estimator's state and cost afterwards. Each
path has its own estimator from the same start, so a kernel that renews at another step, reads the centre of another
chain is off by far more (the last test breaks the kernel's inputs so, and the comparison fails)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.blocks import numpy_block
from sgmcmc.engine.data_blocks import DataKernel
from sgmcmc.gradient_estimators import make_estimator
from sgmcmc.samplers import make_sampler
from tests.engine.test_data_blocks import _assert_close, _assert_same_block, logistic

TARGETS = {"logistic": (logistic, 0.002)}  # Normal-Gamma runs on the engine's blocks (no data kernel)
SAMPLERS = {"sgld": dict(noise_estimate="zero"),
            "sghmc": dict(friction=1.0, noise_estimate="running", noise_clip=True, integrator="theta_first"),
            "sgnht": dict(noise_estimate="zero", integrator="splitting"),
            "ccadl": dict(noise_estimate="running", integrator="theta_first")}
ESTIMATORS = {"control_variates": {}, "svrg": {"update_every": 7}}


def both_paths(target, sampler_name, estimator, step_size, n_steps=50, blocks=1, n_chains=4, seed=5):
    """(numpy blocks, compiled blocks, numpy estimator, compiled estimator), each path with its own estimator."""
    made = []
    for _ in range(2):
        wrapped = make_estimator(estimator, TARGETS[target][0](), seed=0, **ESTIMATORS[estimator])
        made.append(make_sampler(sampler_name, wrapped, **SAMPLERS[sampler_name]))
    numpy_sampler, compiled_sampler = made
    kernel = compiled_sampler.compiled_kernel()
    assert isinstance(kernel, DataKernel) and kernel.data.centred is compiled_sampler.target
    rng = np.random.default_rng(seed)
    state = numpy_sampler.init(numpy_sampler.target.initial_position(n_chains, rng), rng)
    runs = []
    for advance in (lambda rng, state, sizes, start: numpy_block(numpy_sampler, rng, state, sizes, start=start), kernel):
        rng, current, out = np.random.default_rng(seed + 1), state, []
        for block in range(blocks):
            out.append(advance(rng, current, np.full(n_steps, step_size), block * n_steps))
            current = out[-1].state
        runs.append(out)
    return runs[0], runs[1], numpy_sampler.target, compiled_sampler.target


@pytest.mark.parametrize("estimator", sorted(ESTIMATORS))
@pytest.mark.parametrize("sampler", sorted(SAMPLERS))
@pytest.mark.parametrize("target", sorted(TARGETS))
def test_the_kernel_equals_the_numpy_steps(target, sampler, estimator):
    reference, compiled, numpy_estimator, compiled_estimator = both_paths(target, sampler, estimator,
                                                                          TARGETS[target][1], blocks=2)
    for expected, actual in zip(reference, compiled):
        assert expected.stop == expected.start + 50 and expected.status is None
        _assert_same_block(expected, actual)
    assert compiled_estimator.cost() == numpy_estimator.cost()
    if estimator == "svrg":
        assert compiled_estimator.calls == numpy_estimator.calls == 100
        _assert_close(compiled_estimator.centre, numpy_estimator.centre)
        _assert_close(compiled_estimator.centre_mean, numpy_estimator.centre_mean)


@pytest.mark.parametrize("fault", ["renewal one gradient late", "one centre for every chain"])
def test_the_comparison_catches_a_broken_kernel(fault, monkeypatch):
    """The same comparison with the compiled path's estimator state broken on purpose fails it."""
    from sgmcmc.gradient_estimators import SVRG

    original = SVRG.compiled_estimator

    def broken(self, n_chains):
        code, centre, centre_mean, update_every, calls = original(self, n_chains)
        if fault == "renewal one gradient late":
            update_every += 1
        else:  # the control variates' code: the kernel reads row 0 of the centres for every chain and never renews
            code = 1
        return code, centre, centre_mean, update_every, calls

    monkeypatch.setattr(SVRG, "compiled_estimator", broken)
    reference, compiled, _, _ = both_paths("logistic", "sgld", "svrg", 0.002, blocks=2)
    with pytest.raises(AssertionError):
        for expected, actual in zip(reference, compiled):
            _assert_same_block(expected, actual)
