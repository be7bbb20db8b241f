import numpy as np

from sgmcmc.targets.gaussian_prior import prior_gradient_of


def test_the_prior_gradient_is_minus_theta_over_the_variance():
    theta = np.array([1.5, -2.0, 0.25])
    np.testing.assert_array_equal(prior_gradient_of(1.0)(theta), -theta)
    np.testing.assert_allclose(prior_gradient_of(2.5)(theta), -theta / 2.5, rtol=1e-15)
    assert prior_gradient_of(1.0) is prior_gradient_of(1.0) is not prior_gradient_of(2.5)
