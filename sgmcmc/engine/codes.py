"""The integer codes the compiled blocks take and return (:mod:`sgmcmc.engine.injection`); no numba here, so that
declaring a block does not load it."""

# A chain's status after a step: fine, left the floating-point range, or its injected covariance was not PSD.
OK, NON_FINITE, NOT_PSD = 0, 1, 2
# How the gradient-noise estimate V̂ enters the injected covariance: not at all, as its diagonal, or in full.
NO_ESTIMATE, DIAGONAL_ESTIMATE, FULL_ESTIMATE = 0, 1, 2
# Flags a step's clipped count carries besides the number of clipped eigenvalues (below CLIP_DRAW), for the clipped
# draw of a full V̂ (as tests/reference_noise.py's clipped_gaussian draws it): the chain-step drew from a full covariance, and that covariance
# had no Cholesky factor (eigendecomposed). The block's Python side adds them to sgmcmc.noise.clip_counters.
CLIP_DRAW, CLIP_FALLBACK = 1 << 32, 1 << 33
