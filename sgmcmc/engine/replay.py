"""A vectorised model on the engine's blocks: each step run again until every chain's gradients are answered.

A vectorised data model (``grad_log_likelihood(θ, index)`` over all chains at once, :mod:`sgmcmc.targets.user`) is fast
when one call serves every chain, and slow called per chain from compiled code (numba's object mode:
``results/test-times/callbacks-vectorised-20261129.md``). Here the blocks run it step by step, each step in passes
(:class:`Replay`): every chain runs the step (the same integrator and estimator as any data model on rows,
:func:`sgmcmc.engine.estimators.minibatch_gradient`) with functions that answer the model's calls from a table of
answers (:func:`replayed_rows`, :func:`replayed_prior`; with the known V(θ), the estimator's noise door
:func:`replayed_noise`, answered by :func:`row_covariance` over all the rows for all the chains at once). The first call
a chain makes that the table cannot answer is recorded (its kind, point and rows) and answered with zeros, and so is
every later call of the pass that the table cannot answer; after the pass the model is called once per kind and number
of rows for all the recorded calls of all the chains, the answers are put in the table, the chains' estimator states are
put back, and the step runs again, until a pass records nothing (a call is answered only where its kind, point and rows
are those it was asked at). A step whose calls are at points it knows at its start (SGLD, SGHMC, SGNHT, BAOAB…: the
rows' gradients and the prior at θ, the control variates' at θ and the centre) takes two passes; a call at a point moved
by an earlier answer one more pass (a trajectory's m gradients would take m + 1 passes and m² gradients: the samplers
with several gradients a step call the model one chain at a time instead: :func:`per_chain`). The samples are those of the same model on rows, to rounding.

A chain finds its table through its estimator memory's last two entries, (the chain's index, the calls it has made in
this pass), which the functions get as the tail the blocks hand a model's functions (``lead4(first, θ, rows, tail,
source)``), and the table as ``source[-2]``: per chain and slot (one slot a call) its status (:data:`EMPTY`,
:data:`PENDING`, :data:`ANSWERED`), kind, number of rows, point (c, s, d) and rows (c, s, m); the answers (c,
capacity) and each slot's offset in them; and a flag set where a chain had more calls than slots (the table is then
made twice as large and the step run again). The model is handed the points of every recorded call of a kind at once:
θ (k, d) with k the number of such calls, not the number of chains.
"""

from __future__ import annotations

from typing import Callable, Optional

import numba
import numpy as np

from sgmcmc.sample_covariance import chunked_sample_covariance

# the model's calls the table answers: a data model's rows' gradients (n, d), its prior's gradient (d,) and the
# covariance S_h²(θ) of its h_i over all N rows (d, d) or its diagonal (d,), a density model's ∇U (d,), a data model's
# rows' gradients summed, Σ_i g_i (d,), or with their scatter, (Σ_i g_i, Σ_i (g_i − ḡ)²) (2d,)
ROWS, PRIOR, GRADIENT, COVARIANCE, COVARIANCE_DIAGONAL, ROW_SUMS, ROW_SUMS_SCATTER = 0, 1, 2, 3, 4, 5, 6
# the most numbers of the model's rows' gradients (chains × rows × d) one call makes while S_h² is summed
CHUNK = 1 << 21
# where a chain's (index, calls made) sit in its estimator memory: its last two entries
TAIL = 2
# a slot of the table: empty, a call recorded for the model to answer, a call answered
EMPTY, PENDING, ANSWERED = 0, 1, 2


@numba.njit(cache=True)
def _answer(kind, theta, rows, tail, table, size):
    """The table's answer (size,) to the chain's next call (its index and the calls it has made in ``tail[-2:]``)
    where the table holds one for this very call (its kind, point and rows), else zeros, the call recorded in its
    slot for the model to answer after the pass (:meth:`Replay.fill`)."""
    status, kinds, counts, point, asked, answers, offsets, overflow = table
    chain, call = int(tail[tail.shape[0] - 2]), int(tail[tail.shape[0] - 1])
    tail[tail.shape[0] - 1] = call + 1
    out = np.zeros(size)
    if rows.shape[0] > asked.shape[2]:  # a pass over all the data: the samplers route none here (Sampler.engine_blocks)
        raise ValueError("the replay answers calls of a minibatch's rows at most: a pass of the model's gradients "
                         "over all the data calls the model one chain at a time (per_chain)")
    if call >= status.shape[1]:  # no slot left: the table is made larger and the step run again
        overflow[0] = 1
        return out
    same = status[chain, call] == ANSWERED and kinds[chain, call] == kind and counts[chain, call] == rows.shape[0]
    for j in range(theta.shape[0]):  # NaN matches NaN: a diverged chain's point is answered once, not asked forever
        same = same and (point[chain, call, j] == theta[j] or (point[chain, call, j] != point[chain, call, j]
                                                              and theta[j] != theta[j]))
    for m in range(rows.shape[0]):
        same = same and asked[chain, call, m] == int(rows[m, 0])
    if same:
        start = offsets[chain, call]
        for m in range(size):
            out[m] = answers[chain, start + m]
        return out
    status[chain, call], kinds[chain, call], counts[chain, call] = PENDING, kind, rows.shape[0]
    for j in range(theta.shape[0]):
        point[chain, call, j] = theta[j]
    for m in range(rows.shape[0]):
        asked[chain, call, m] = int(rows[m, 0])
    return out


@numba.njit(cache=True)
def replayed_rows(theta, rows, tail, source):
    """The rows' gradients (n, d) of the chain's next call, from the table ``source[-2]`` (``rows``: the minibatch's
    rows of the data, each its index)."""
    return _answer(ROWS, theta, rows, tail, source[-2], rows.shape[0] * theta.shape[0]).reshape(
        (rows.shape[0], theta.shape[0]))


@numba.njit(cache=True)
def replayed_sums(theta, rows, with_scatter, tail, source):
    """The rows' gradient sums (Σ_i g_i (d,), Σ_i (g_i − ḡ)² (d,)) of the chain's next call, from the table
    ``source[-2]``: the sums door (:func:`sgmcmc.engine.estimators.sums_gradient`) of a vectorised model that sums
    its rows' gradients itself, so that the engine gets no (chains, n, d) array of per-example gradients; the second
    sum is asked for only ``with_scatter`` (zeros otherwise)."""
    d = theta.shape[0]
    if with_scatter:
        answer = _answer(ROW_SUMS_SCATTER, theta, rows, tail, source[-2], 2 * d)
        return answer[:d].copy(), answer[d:].copy()
    return _answer(ROW_SUMS, theta, rows, tail, source[-2], d), np.zeros(d)


@numba.njit(cache=True)
def replayed_prior(theta, tail, source):
    """The prior's gradient (d,) of the chain's next call, from the table ``source[-2]``."""
    return _answer(PRIOR, theta, np.zeros((0, 1)), tail, source[-2], theta.shape[0])


@numba.njit(cache=True)
def replayed_gradient(theta, tail, source):
    """A density model's ∇U (1, d) at θ (1, d) of the chain's next call, from the table ``source[-2]``."""
    point = theta[0]
    return _answer(GRADIENT, point, np.zeros((0, 1)), tail, source[-2], point.shape[0]).reshape((1, point.shape[0]))


@numba.njit(cache=True)
def replayed_noise(source, theta, memory, variance):
    """The known V̂ = c·S_h²(θ) at θ from the table, c = ``source[4][3]``: the source's noise door with the known V(θ)
    (:func:`sgmcmc.engine.estimators.minibatch_noise`'s pass over the data as one call of the model for all the
    chains, not per-chain calls over all N rows); into ``variance`` (d, d), or its diagonal into the row (1, d)."""
    d = theta.shape[0]
    kind = COVARIANCE_DIAGONAL if variance.shape[0] < d else COVARIANCE
    answer = _answer(kind, theta, np.zeros((0, 1)), memory, source[-2], variance.size)
    for j in range(variance.shape[0]):
        for k in range(d):
            variance[j, k] = source[4][3] * answer[j * d + k]


def row_covariance(rows_gradient: Callable, n_data: int, points: np.ndarray, diagonal: bool,
                   centre: Optional[np.ndarray] = None) -> np.ndarray:
    """S_h²(θ) over all N rows at each point θ (k, d): (k, d, d), or its diagonal (k, d)
    (:func:`~sgmcmc.sample_covariance.chunked_sample_covariance`); h_i = g_i(θ), or g_i(θ) − g_i(θ̂) about the
    control variates' centre θ̂ (their constant ḡ(θ̂) leaves it unchanged); the rows in chunks, all the points at
    once."""
    return chunked_sample_covariance(_row_chunks(rows_gradient, n_data, points, centre), n_data, diagonal)


def _row_chunks(rows_gradient: Callable, n_data: int, points: np.ndarray, centre: Optional[np.ndarray]):
    """h_i at each point for all N rows in chunks of shape (k, m, d), in index order."""
    k, d = points.shape
    size = max(1, CHUNK // max(1, k * d))
    for start in range(0, n_data, size):
        index = np.tile(np.arange(start, min(start + size, n_data)), (k, 1))
        chunk = np.asarray(rows_gradient(points, index), dtype=float)
        if centre is not None:
            chunk = chunk - np.asarray(rows_gradient(np.tile(centre, (k, 1)), index), dtype=float)
        yield chunk


class Replay:
    """The table of one step's calls and answers for ``n_chains`` chains of dimension ``dim`` and calls of up to
    ``rows`` rows, and the model's functions that answer them: ``answer[kind](points (n, d), index (n, m)) -> (n,
    size)`` (``index`` unused by the prior)."""

    def __init__(self, answer: dict, n_chains: int, dim: int, rows: int, slots: int = 4):
        self.answer, self.shape = answer, (n_chains, dim, max(rows, 1))
        self._allocate(slots)
        self.used = np.zeros(n_chains, dtype=np.int64)
        self.answers = np.zeros((n_chains, slots * (rows + 1) * dim))

    def _allocate(self, slots: int) -> None:
        n_chains, dim, rows = self.shape
        self.status = np.zeros((n_chains, slots), dtype=np.int64)
        self.kinds, self.counts = np.zeros_like(self.status), np.zeros_like(self.status)
        self.offsets = np.zeros_like(self.status)
        self.point = np.zeros((n_chains, slots, dim))
        self.asked = np.zeros((n_chains, slots, rows), dtype=np.int64)
        self.overflow = np.zeros(1, dtype=np.int64)

    def table(self) -> tuple:
        return (self.status, self.kinds, self.counts, self.point, self.asked, self.answers, self.offsets,
                self.overflow)

    def clear(self) -> None:
        """A new step: no calls, no answers."""
        self.status[:] = EMPTY
        self.used[:] = 0

    def fill(self) -> bool:
        """Answer the recorded calls, one model call per kind and number of rows (a table too small for a step's
        calls made twice as large); False where there was nothing to do: the pass had every answer it asked for."""
        if self.overflow[0]:
            self._allocate(2 * self.status.shape[1])
            self.used[:] = 0
            return True
        chains, calls = np.nonzero(self.status == PENDING)
        if chains.size == 0:
            return False
        kinds, counts = self.kinds[chains, calls], self.counts[chains, calls]
        for kind, count in set(zip(kinds.tolist(), counts.tolist())):
            chosen = (kinds == kind) & (counts == count)
            at, slot = chains[chosen], calls[chosen]
            values = np.asarray(self.answer[kind](self.point[at, slot], self.asked[at, slot, :count]), dtype=float)
            self._add(at, slot, values.reshape(at.size, -1))
        self.status[chains, calls] = ANSWERED
        return True

    def _add(self, chains: np.ndarray, slots: np.ndarray, values: np.ndarray) -> None:
        """Each call's answer after its chain's others (the answers made larger where they are full): a chain's calls
        in the order given, placed one after another from where its answers end."""
        size = values.shape[1]
        order = np.argsort(chains, kind="stable")
        chains, slots, values = chains[order], slots[order], values[order]
        first = np.searchsorted(chains, chains)  # where each chain's calls begin among them
        starts = self.used[chains] + (np.arange(chains.size) - first) * size
        needed = int(np.max(starts)) + size
        if needed > self.answers.shape[1]:
            self.answers = np.pad(self.answers, ((0, 0), (0, max(self.answers.shape[1], needed))))
        self.answers[chains[:, None], starts[:, None] + np.arange(size)] = values
        self.offsets[chains, slots] = starts
        np.maximum.at(self.used, chains, starts + size)


def on_replay(functions: dict) -> dict:
    """A target's functions (its ``engine_functions()``) as the blocks take them: a vectorised data model's
    (``vectorised_row_gradients(θ (c, d), index (c, n))`` → (c, n, d), ``vectorised_prior_gradient(θ)`` → (c, d),
    ``n_data``) as a data model on rows whose functions answer from the table (``data`` the column of row indices,
    ``replay`` the model's answers by kind, for :class:`Replay`), and where it also sums its rows' gradients itself
    (``vectorised_row_gradient_sums(θ (c, d), index (c, n), with_scatter)`` → (Σ_i g_i (c, d), Σ_i (g_i − ḡ)² (c, d)))
    with the sums door :func:`replayed_sums`, which the blocks take where it serves (plain minibatches, no noise
    estimate or the running diagonal one: :func:`sgmcmc.engine.estimators.source_of`); a vectorised density model's (``vectorised_gradient(θ
    (c, d))`` → ∇U (c, d), with its gradient noise's ``noise_factor``) as a density model whose gradient answers from
    the table; any other's as they are."""
    if "vectorised_gradient" in functions:
        gradient = functions["vectorised_gradient"]
        return {**{key: value for key, value in functions.items() if not key.startswith("vectorised_")},
                "gradient": replayed_gradient, "sign": 1.0, "replay": {GRADIENT: lambda theta, index: gradient(theta)}}
    if "vectorised_row_gradients" not in functions:
        return functions
    prior, rows, n_data = (functions["vectorised_prior_gradient"], functions["vectorised_row_gradients"],
                           int(functions["n_data"]))
    centre = None if "centre" not in functions else np.ravel(functions["centre"])
    replayed = {**{key: value for key, value in functions.items() if not key.startswith("vectorised_")},
                "row_gradients": replayed_rows, "prior_gradient": replayed_prior, "full_data_noise": replayed_noise,
                "data": np.arange(float(n_data)).reshape(-1, 1),
                "replay": {ROWS: rows, PRIOR: lambda theta, index: prior(theta),
                           COVARIANCE: lambda theta, index: row_covariance(rows, n_data, theta, False, centre),
                           COVARIANCE_DIAGONAL: lambda theta, index: row_covariance(rows, n_data, theta, True,
                                                                                    centre)}}
    if "vectorised_row_gradient_sums" in functions:
        sums = functions["vectorised_row_gradient_sums"]
        replayed["row_gradient_sums"] = replayed_sums
        replayed["replay"].update({ROW_SUMS: lambda theta, index: sums(theta, index, False)[0],
                                   ROW_SUMS_SCATTER: lambda theta, index: np.concatenate(sums(theta, index, True),
                                                                                         axis=1)})
    return replayed


def per_chain(functions: dict) -> dict:
    """A vectorised model's functions (:func:`on_replay`'s) as a model of one chain at a time, for the steps the table
    does not serve (a trajectory's gradients, U over all the rows for a Metropolis–Hastings test, pSGLD's stationary
    V(θ) and Γ, SVRG's renewals over all the rows): each function called with the chain's θ as a (1, d) array and its
    rows' indices as a (1, m) array (the rows' ``data`` their index column), which the blocks call in Python
    (:func:`sgmcmc.engine.estimators._door`: closures, one chain a call); a vectorised density model's ∇U and U as
    they are (``vectorised_potential``, where it has one); any other's as they are."""
    kept = {key: value for key, value in functions.items() if not key.startswith("vectorised_")}
    if "vectorised_gradient" in functions:
        if "vectorised_potential" in functions:
            kept.update(potential=functions["vectorised_potential"], potential_sign=1.0)
        return {**kept, "gradient": functions["vectorised_gradient"], "sign": 1.0}
    if "vectorised_row_gradients" not in functions:
        return functions
    rows, prior = functions["vectorised_row_gradients"], functions["vectorised_prior_gradient"]
    kept.update(data=np.arange(float(functions["n_data"])).reshape(-1, 1),
                row_gradients=lambda theta, data: rows(theta[None], _indices(data))[0],
                prior_gradient=lambda theta: prior(theta[None])[0])
    if "vectorised_row_log_likelihoods" in functions:
        likelihoods, density = functions["vectorised_row_log_likelihoods"], functions["vectorised_prior_log_density"]
        kept.update(row_log_likelihoods=lambda theta, data: likelihoods(theta[None], _indices(data))[0],
                    prior_log_density=lambda theta: float(np.asarray(density(theta[None]), dtype=float)[0]))
    return kept


def _indices(data: np.ndarray) -> np.ndarray:
    """The rows' indices (1, m) of the index column ``data`` (m, 1) that :func:`per_chain` hands the blocks."""
    return data[:, 0].astype(np.int64)[None]
