"""Several parameter arrays flattened into one θ (c, d) with the chain dimension first, and the blocks of chains ×
examples that keep a network target's full-data passes within a memory bound: shared by the DRBM (T9) and the BNN
(T11), whose θ are (W, c, U, d) and (W1, b1, W2, b2)."""

from __future__ import annotations

from typing import Sequence

import numpy as np


def checked_theta(theta, dim: int) -> np.ndarray:
    """θ as a float array of shape (n_chains, dim), else a ValueError saying the shape."""
    theta = np.asarray(theta, dtype=float)
    if theta.ndim != 2 or theta.shape[1] != dim:
        raise ValueError(f"theta must have shape (n_chains, {dim}); got {theta.shape}")
    return theta


class FlatParameters:
    """Arrays of the given ``shapes`` (without the chain dimension), flattened row-major in that order."""

    def __init__(self, names: Sequence[str], shapes: Sequence[tuple]):
        self.names, self.shapes = tuple(names), [tuple(int(n) for n in shape) for shape in shapes]
        self.offsets = np.cumsum([0, *(int(np.prod(shape)) for shape in self.shapes)])
        self.dim = int(self.offsets[-1])

    def slices(self) -> list[slice]:
        """Where each array lies in θ."""
        return [slice(int(self.offsets[g]), int(self.offsets[g + 1])) for g in range(len(self.shapes))]

    def unpack(self, theta: np.ndarray) -> tuple:
        """The arrays (c, *shape) from θ (c, d): views into θ."""
        theta = checked_theta(theta, self.dim)
        return tuple(theta[:, part].reshape(theta.shape[0], *shape) for part, shape in zip(self.slices(), self.shapes))

    def pack(self, *parts) -> np.ndarray:
        """θ (c, d) from the arrays (c, *shape): the inverse of :meth:`unpack` (a ValueError naming a misshapen one)."""
        parts = [np.asarray(p, dtype=float) for p in parts]
        n = parts[0].shape[0] if parts[0].ndim == len(self.shapes[0]) + 1 else None
        for name, part, shape in zip(self.names, parts, self.shapes):
            if part.ndim != len(shape) + 1 or part.shape[1:] != shape or part.shape[0] != n:
                raise ValueError(f"{name} must have shape (n_chains, {', '.join(map(str, shape))}); got {part.shape}")
        return np.concatenate([p.reshape(n, -1) for p in parts], axis=1)


def blocks(n_chains: int, n_rows: int, width: int, chunk_elements: int):
    """(chain slice, row slice) pairs covering chains × rows such that a (chains, rows, width) block holds at most
    ``chunk_elements`` values (at least one chain and one row per block)."""
    width = max(1, int(width))
    if n_rows * width <= chunk_elements:
        per_chain_block = max(1, min(n_chains, chunk_elements // (width * max(1, n_rows))))
        for start in range(0, n_chains, per_chain_block):
            yield slice(start, min(start + per_chain_block, n_chains)), slice(0, n_rows)
        return
    per_row_block = max(1, chunk_elements // width)
    for chain in range(n_chains):
        for start in range(0, n_rows, per_row_block):
            yield slice(chain, chain + 1), slice(start, min(start + per_row_block, n_rows))


class FlatParameterTarget:
    """A mixin of the network targets: ``_theta``, ``unpack``, ``pack`` and ``_blocks`` from the :class:`FlatParameters`
    ``self._layout`` and the chunk bound ``self._chunk_elements``."""

    _layout: FlatParameters
    _chunk_elements: int

    def _theta(self, theta) -> np.ndarray:
        return checked_theta(theta, self._layout.dim)

    def unpack(self, theta) -> tuple:
        """The parameter arrays (c, *shape) from θ (c, d), in the layout's order: views into θ."""
        return self._layout.unpack(theta)

    def pack(self, *parts) -> np.ndarray:
        """θ (c, d) from the parameter arrays (c, *shape): the inverse of :meth:`unpack`."""
        return self._layout.pack(*parts)

    def _blocks(self, n_chains: int, n_rows: int, width: int):
        """(chain slice, row slice) pairs of at most ``_chunk_elements`` values (:func:`blocks`)."""
        return blocks(n_chains, n_rows, width, self._chunk_elements)
