"""The small records a sampler passes around: its state and what one step reports.

Arrays carry the chain dimension first: ``theta`` and ``momentum`` are (n_chains, dim), ``xi`` is
(n_chains,), ``noise`` (the running gradient-noise estimate Î_t of Shang et al. 2015, Eq. 18) is
(n_chains, dim, dim) or (n_chains, dim) for the diagonal form, with ``noise_count`` = t the number of
minibatches averaged into it; ``gradient`` (n_chains, dim) is the stochastic gradient ∇Ũ(θ) a splitting
sampler reuses for the first half kick of its next step (BAOAB, BADODAB: one gradient per step), and
``preconditioner`` (n_chains, dim) pSGLD's RMSProp average: each is the vector the engine's integrator carries from
step to step (``sgmcmc.engine.driver.Blocks.carry``), so a checkpoint keeps it. Fields a sampler does not use are
``None``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np


class SamplerState(NamedTuple):
    """Position θ, momentum r (Hamiltonian samplers) and thermostat ξ (SGNHT-type samplers)."""

    theta: np.ndarray
    momentum: Optional[np.ndarray] = None
    xi: Optional[np.ndarray] = None
    noise: Optional[np.ndarray] = None
    noise_count: int = 0
    preconditioner: Optional[np.ndarray] = None  # pSGLD's RMSProp average V_t (n_chains, dim) (Li et al. 2016)
    gradient: Optional[np.ndarray] = None  # BAOAB's, BADODAB's ∇Ũ(θ) for the next step's first half kick


class StepInfo(NamedTuple):
    """Per-step diagnostics, per chain: Metropolis–Hastings acceptance where the sampler has a test,
    the number of eigenvalues of the injected-noise covariance clipped at 0 (``noise_clip``), and the
    number of coordinates reflected at a boundary of the target's support."""

    accept_probability: Optional[np.ndarray] = None
    accepted: Optional[np.ndarray] = None
    clipped: Optional[np.ndarray] = None
    reflected: Optional[np.ndarray] = None
