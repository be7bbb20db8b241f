"""The engine's injected noise (sgmcmc/engine/injection.py) against sgmcmc.noise's draws from the same standard normals:
the clipped draw of a full V̂ (``noise_clip`` with the running estimate's full form) is ``clipped_gaussian``'s, the
Cholesky factor where ε(2D − εTV̂T) has one, else the eigendecomposition with the negative eigenvalues set to 0 and
counted, and the flags of its count say which (the block adds them to ``sgmcmc.noise.clip_counters``)."""

from __future__ import annotations

import numpy as np
import pytest

from sgmcmc.engine.codes import CLIP_DRAW, CLIP_FALLBACK
from sgmcmc.engine.injection import DIAGONAL_ESTIMATE, FULL_ESTIMATE, NOT_PSD, OK, inject
from tests.reference_noise import clipped_gaussian, injected_noise_clipped
from tests.helpers import ScriptedNormals

STEP, DIFFUSION, SCALE = 0.1, np.array([1.0, 0.5, 2.0]), np.array([1.0, 0.8, 1.2])


def engine_draw(variance, normal, clip=1, mode=FULL_ESTIMATE):
    """inject's (status, count with its flags, draw) for V̂ = ``variance``, z = ``normal``."""
    out, square = np.empty(3), np.empty((3, 3))
    status, count = inject(STEP, DIFFUSION, SCALE, mode, np.ascontiguousarray(variance), clip,
                           np.stack([np.zeros(3), normal]), out, square)
    return status, count, out


def covariance(variance):
    return STEP * (2 * np.diag(DIFFUSION) - STEP * SCALE[:, None] * variance * SCALE[None, :])


# V̂ with a large off-diagonal pair: ε(2D − εTV̂T) has a positive diagonal and a negative eigenvalue (the Cholesky
# factorisation fails at its second pivot), or, scaled down, is positive definite
NOT_PSD_VARIANCE = np.array([[10.0, -60.0, 2.0], [-60.0, 5.0, 3.0], [2.0, 3.0, 5.0]])


@pytest.mark.parametrize("factor", [1.0, 0.05], ids=["not_psd", "positive_definite"])
def test_a_full_clipped_draw_is_clipped_gaussians(factor):
    variance = factor * NOT_PSD_VARIANCE
    target = covariance(variance)
    assert np.all(np.diag(target) > 0) and (np.linalg.eigvalsh(target).min() < 0) == (factor == 1.0)
    normal = np.random.default_rng(0).standard_normal(3)
    expected, clipped, fallback = clipped_gaussian(target[None], normal[None])
    status, count, drawn = engine_draw(variance, normal)
    assert status == OK and fallback[0] == (factor == 1.0)
    assert count == CLIP_DRAW + (CLIP_FALLBACK if fallback[0] else 0) + clipped[0]
    assert clipped[0] == (1 if factor == 1.0 else 0)
    np.testing.assert_allclose(drawn, expected[0], rtol=1e-12, atol=1e-14)
    # without the clip the same covariance is refused, or drawn from its factor (no flags)
    status, count, drawn = engine_draw(variance, normal, clip=0)
    assert (status, count) == ((NOT_PSD, 0) if factor == 1.0 else (OK, 0))


def test_a_diagonal_estimate_in_full_form_is_drawn_elementwise():
    """A V̂ whose off-diagonal entries are all 0 is drawn elementwise, its negative variance clipped and counted with no
    flags (no full draw), as sgmcmc.noise draws it."""
    variance = np.diag([10.0, 600.0, 1.0])
    normal = np.random.default_rng(1).standard_normal(3)
    expected, clipped = injected_noise_clipped(ScriptedNormals(normal[None]), STEP, DIFFUSION[None], variance,
                                               SCALE[None])
    status, count, drawn = engine_draw(variance, normal)
    assert status == OK and count == clipped[0] == 1
    np.testing.assert_allclose(drawn, expected[0], rtol=1e-12, atol=1e-14)
    assert engine_draw(variance, normal, mode=DIAGONAL_ESTIMATE)[1] == 1


def test_a_non_finite_estimate_draws_nan():
    status, count, drawn = engine_draw(np.full((3, 3), np.inf), np.ones(3))
    assert status == OK and np.all(np.isnan(drawn))
