"""The small records a sampler passes around: its state and what one step reports.

Arrays carry the chain dimension first: ``theta`` and ``momentum`` are (n_chains, dim), ``xi`` is
(n_chains,). Fields a sampler does not use are ``None``.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np


class SamplerState(NamedTuple):
    """Position θ, momentum r (Hamiltonian samplers) and thermostat ξ (SGNHT-type samplers)."""

    theta: np.ndarray
    momentum: Optional[np.ndarray] = None
    xi: Optional[np.ndarray] = None


class StepInfo(NamedTuple):
    """Per-step diagnostics: Metropolis–Hastings acceptance (per chain) where the sampler has a test."""

    accept_probability: Optional[np.ndarray] = None
    accepted: Optional[np.ndarray] = None
