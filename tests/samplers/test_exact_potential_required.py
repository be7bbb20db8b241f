"""Samplers that need the exact U(θ) or ∇U(θ) refuse, in one line, a target that has neither (LDA's needs the
marginal likelihood of the whole corpus), and the stochastic-gradient ones still accept it."""

import pytest

from sgmcmc.samplers import make_sampler
from sgmcmc.targets import make_target


class NoPotential(type(make_target("gaussian_1d"))):
    name = "no_potential"
    has_potential = False
    has_exact_gradient = False


@pytest.mark.parametrize("name, params, needs", [
    ("hmc", {}, "exact gradient"),
    ("hmc", {"metropolis": False}, "exact gradient"),
    ("naive_sghmc", {"metropolis": True}, "sampler.metropolis=false"),
    ("sghmc_mh", {}, "sampler.metropolis=false"),
])
def test_samplers_needing_the_exact_potential_refuse_a_target_without_one(name, params, needs):
    with pytest.raises(ValueError, match=needs) as error:
        make_sampler(name, NoPotential(), **params)
    assert "\n" not in str(error.value) and "'no_potential'" in str(error.value)


class Bounded(NoPotential):
    bounded = True


@pytest.mark.parametrize("name", ["naive_sghmc", "sghmc_mh"])
def test_trajectory_samplers_refuse_a_bounded_support(name):
    with pytest.raises(ValueError, match="do not reflect at the boundary"):
        make_sampler(name, Bounded(), metropolis=False)
    make_sampler("sgld", Bounded())


@pytest.mark.parametrize("name, params", [("naive_sghmc", {}), ("sghmc_mh", {"metropolis": False}), ("sgld", {})])
def test_stochastic_gradient_samplers_accept_it(name, params):
    make_sampler(name, NoPotential(), **params)
    make_sampler(name, make_target("gaussian_1d"), **params)  # and the check is the target's, not the sampler's
