"""The metrics' functions for the engine's blocks (:meth:`sgmcmc.geometry.DiagonalMetric.engine_function`) against
independent truths: the expanded mean's S and ∂S against finite differences, its flow against a numerical solution
of θ̇ = S(θ) r (scipy's ODE solver) and, where the flow reaches θ = 0, against the mirror image it must come back as."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from sgmcmc.config import ConfigError
from sgmcmc.experiment import _metric
from sgmcmc.geometry import ExpandedMeanMetric, expanded_mean_flow, expanded_mean_metric
from sgmcmc.schema import metric

SCALE = 0.8


def test_expanded_mean_metric_is_the_root_of_c_theta_and_its_derivative():
    theta = np.array([0.3, 1.7, 4.0])
    root, derivative = np.empty(3), np.empty(3)
    expanded_mean_metric(theta, np.array([SCALE]), root, derivative)
    np.testing.assert_allclose(root ** 2, SCALE * theta, rtol=1e-14)
    shift = 1e-6
    ahead, behind, scratch = np.empty(3), np.empty(3), np.empty(3)
    expanded_mean_metric(theta + shift, np.array([SCALE]), ahead, scratch)
    expanded_mean_metric(theta - shift, np.array([SCALE]), behind, scratch)
    np.testing.assert_allclose(derivative, (ahead - behind) / (2 * shift), rtol=1e-8)
    assert ExpandedMeanMetric(SCALE).engine_function(3)[0] is expanded_mean_metric


def test_expanded_mean_flow_solves_the_ode_and_mirrors_at_zero():
    theta, momentum, time = np.array([0.5, 2.0, 0.04, 1.0]), np.array([0.7, -1.2, -3.0, 0.0]), 0.3
    out, moved = np.empty(4), momentum.copy()
    crossed = expanded_mean_flow(theta, moved, time, np.array([SCALE]), out)
    # the first, second and fourth stay inside θ > 0: the ODE θ̇ = √(cθ) r at fixed r
    inside = [0, 1, 3]
    solution = solve_ivp(lambda t, y: np.sqrt(SCALE * np.maximum(y, 0.0)) * momentum[inside], (0.0, time),
                         theta[inside], rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(out[inside], solution.y[:, -1], rtol=1e-8)
    np.testing.assert_array_equal(moved[inside], momentum[inside])
    # the third reaches 0 at t₀ = 2√θ/(√c|r|) < t and comes back: √θ(t) = √c|r|(t − t₀)/2, its r flipped
    reach = 2 * np.sqrt(theta[2]) / (np.sqrt(SCALE) * abs(momentum[2]))
    assert reach < time
    np.testing.assert_allclose(np.sqrt(out[2]), np.sqrt(SCALE) * abs(momentum[2]) * (time - reach) / 2, rtol=1e-12)
    assert moved[2] == -momentum[2] and crossed == 1


def test_the_expanded_mean_metric_is_declared_with_its_one_scale():
    """sampler.metric={name: expanded_mean, scale: c} is G⁻¹ = c·diag(θ); several scales are refused in one line."""
    spec = metric("sampler.metric", {"name": "expanded_mean", "scale": 10})
    built = _metric(spec)
    np.testing.assert_allclose(built.inverse(np.array([[0.5, 2.0]])), [[5.0, 20.0]])
    with pytest.raises(ConfigError, match="one number c"):
        _metric(metric("sampler.metric", {"name": "expanded_mean", "scale": [1.0, 2.0]}))
