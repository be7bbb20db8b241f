"""The integer codes the compiled kernels (:mod:`sgmcmc.engine.kernels`) take and return; no numba here, so
that declaring a kernel does not load it."""

# A chain's status after a step: fine, left the floating-point range, or its injected covariance was not PSD.
OK, NON_FINITE, NOT_PSD = 0, 1, 2
# Metric kinds: constant (S = I, friction C), or the rational metric of SPEC §4.2, (G^{-1/2})_ii = a_i/√(1 + b_i θ_i²).
CONSTANT_METRIC, RATIONAL_METRIC = 0, 1
# Integrators of the momentum and thermostat kernels.
SPLITTING, EULER, THETA_FIRST, ABOBA = 0, 1, 2, 3
# Trajectories of the resampled-momentum samplers: leapfrog (HMC, naive SGHMC), Chen et al. 2014 Alg. 2 (SGHMC + MH).
LEAPFROG, ALGORITHM_2 = 0, 1
# How the gradient-noise estimate V̂ enters the injected covariance: not at all, as its diagonal, or in full.
NO_ESTIMATE, DIAGONAL_ESTIMATE, FULL_ESTIMATE = 0, 1, 2
