"""Gamma precisions of groups of parameters, resampled by Gibbs steps inside an SG-MCMC run (the SGHMC paper's BNN and
BPMF, SPEC T11/T12; Chen, Fox & Guestrin 2014 §4.2).

Group g holds n_g coordinates θ_g with the prior θ_g ~ N(0, λ_g⁻¹ I) and the hyperprior λ_g ~ Gamma(a, b) (shape a,
rate b; Gamma(1, 1) in the papers). Given θ the precisions are independent with the conjugate conditional

    λ_g | θ ~ Gamma(a + n_g / 2, b + ‖θ_g‖² / 2),

which :meth:`GammaPrecisions.conditional` gives, :meth:`GammaPrecisions.draw` samples (the Gibbs step) and
:meth:`GammaPrecisions.mode` maximises ((shape − 1)⁺ / rate: what the authors' code sets for an optimiser, a MAP
estimate). Every chain has its own precisions: ``values`` is (n_chains, G), or (1, G) before the first update
(``initial`` for every chain, broadcast). Their share of the potential is ½ Σ_g λ_g ‖θ_g‖² (the terms that depend on θ),
with gradient λ_g θ_g per coordinate (:meth:`GammaPrecisions.prior_gradient`).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np


class GammaPrecisions:
    """The precisions λ (n_chains or 1, G) of G groups of coordinates (module docstring).

    Parameters
    ----------
    names : sequence of str
        One name per group (the trace's and the checkpoint's keys, e.g. ``"precision_layer1"``).
    groups : sequence of index arrays or slices
        The coordinates of θ in each group.
    dim : int
        The length of θ; every coordinate must be in exactly one group.
    shape, rate : float
        a and b of the Gamma(a, b) hyperprior (rate parametrisation, mean a / b).
    initial : float
        λ₀ of every group and chain before the first update.
    """

    def __init__(self, names: Sequence[str], groups: Sequence, dim: int, shape: float = 1.0, rate: float = 1.0,
                 initial: float = 1.0):
        if len(names) != len(groups) or len(set(names)) != len(names):
            raise ValueError("GammaPrecisions needs one distinct name per group")
        if not (shape > 0 and rate > 0 and initial > 0):
            raise ValueError(f"the Gamma hyperprior's shape and rate and the initial precision must be > 0; "
                             f"got {shape}, {rate}, {initial}")
        self.names, self.dim = tuple(names), int(dim)
        self.shape, self.rate = float(shape), float(rate)
        self.group_of = np.full(self.dim, -1, dtype=np.int64)  # each coordinate's group
        for g, group in enumerate(groups):
            index = np.arange(self.dim)[group]
            if np.any(self.group_of[index] >= 0):
                raise ValueError(f"group {names[g]!r} overlaps another group")
            self.group_of[index] = g
        if np.any(self.group_of < 0):
            raise ValueError("every coordinate of θ must belong to a group")
        self.sizes = np.bincount(self.group_of, minlength=len(self.names)).astype(float)
        self.initial = float(initial)
        self.values = np.full((1, len(self.names)), self.initial)

    def reset(self) -> None:
        """λ ← the initial value for every group, (1, G) (the start of a run)."""
        self.values = np.full((1, len(self.names)), self.initial)

    # -- the conditional ---------------------------------------------------------------------------------
    def squared_norms(self, theta: np.ndarray) -> np.ndarray:
        """‖θ_g‖² per chain and group, (c, G)."""
        theta = np.asarray(theta, dtype=float)
        out = np.zeros((theta.shape[0], len(self.names)))
        for g in range(len(self.names)):
            part = theta[:, self.group_of == g]
            out[:, g] = np.einsum("ci,ci->c", part, part)
        return out

    def conditional(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(shape (G,), rate (c, G)) of λ | θ: a + n_g/2 and b + ‖θ_g‖²/2."""
        return self.shape + self.sizes / 2, self.rate + self.squared_norms(theta) / 2

    def draw(self, theta: np.ndarray, rng: np.random.Generator) -> None:
        """The Gibbs step: λ ← a draw from λ | θ for every chain and group (one ``rng.gamma`` call, (c, G) values)."""
        shape, rate = self.conditional(theta)
        self.values = rng.gamma(np.broadcast_to(shape, rate.shape), 1.0 / rate)

    def mode(self, theta: np.ndarray) -> None:
        """λ ← the conditional's mode max(shape − 1, 0) / rate (no random numbers; the optimisers' update)."""
        shape, rate = self.conditional(theta)
        self.values = np.maximum(shape - 1.0, 0.0) / rate

    # -- the prior's share of U(θ) ------------------------------------------------------------------------
    def per_coordinate(self, n_chains: int) -> np.ndarray:
        """λ of every coordinate, (c, d) (or (1, d) before the first update, broadcast over the chains)."""
        values = self.values if self.values.shape[0] in (1, n_chains) else None
        if values is None:
            raise ValueError(f"the precisions are for {self.values.shape[0]} chains; θ has {n_chains}")
        return values[:, self.group_of]

    def prior_gradient(self, theta: np.ndarray) -> np.ndarray:
        """∇_θ log p(θ | λ) = −λ_g θ per coordinate, (c, d)."""
        return -self.per_coordinate(theta.shape[0]) * theta

    def prior_potential(self, theta: np.ndarray) -> np.ndarray:
        """½ Σ_g λ_g ‖θ_g‖² per chain, (c,) (the θ-dependent part of −log p(θ | λ))."""
        return 0.5 * np.einsum("cg,cg->c", np.broadcast_to(self.values, (theta.shape[0], len(self.names))),
                               self.squared_norms(theta))

    # -- trace and checkpoints ---------------------------------------------------------------------------
    def as_dict(self) -> dict[str, np.ndarray]:
        """name → λ of every chain ((c,) or (1,))."""
        return {name: self.values[:, g].copy() for g, name in enumerate(self.names)}

    def load(self, values: dict) -> None:
        """Inverse of :meth:`as_dict`."""
        self.values = np.stack([np.asarray(values[name], dtype=float) for name in self.names], axis=1)
