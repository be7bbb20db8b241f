"""Compiled blocks of steps on the data targets (Normal-Gamma T7, logistic regression T8): the Python side.

A data target declares its minibatch gradient through :meth:`sgmcmc.targets.data.DataTarget.compiled_data` (a
:class:`CompiledData`: which likelihood, the data, N, n, the prior and the reflected coordinate); a sampler whose own
class has an exact kernel then runs on :func:`sgmcmc.engine.data_kernels.data_block` through a :class:`DataKernel`
(see :func:`data_kernel`). The kernel is line for line the numpy steps (the readable reference, pinned to it by
``tests/engine/test_data_blocks.py``):

- SGLD ``euler`` (``sgmcmc/samplers/sgld.py``; Ma et al. 2015 Eq. 13);
- SGHMC ``theta_first`` (Shang et al. 2015 Eq. 14), ``splitting``, ``euler`` (``momentum_recipe.py``; Eq. 12), and
  gSGRHMC / naive SGRHMC with the identity metric (S = I, F = I, γ = 0: SGHMC with C = 1);
- SGNHT and CCAdL ``theta_first`` (Shang et al. 2015 Eq. 12 and Algorithm 1), ``splitting``, ``euler``
  (``sgnht.py``, ``ccadl.py``; Eq. 15);

each with ``noise_estimate`` ``zero`` or ``running`` in the full form (Î_t = Î_{t−1} + (V_t − Î_{t−1})/t, Shang et al.
Eq. 18-19, scaled by :meth:`~sgmcmc.samplers.base.Sampler.running_scale`), with or without ``noise_clip`` (the
Cholesky-first clipped draw of :func:`sgmcmc.noise.clipped_gaussian`, counted in :data:`sgmcmc.noise.clip_counters`),
and the target's reflection (Normal-Gamma's γ ≤ 0 → −γ with the momentum flipped, counted per step).

Random numbers: each step of the numpy path draws the minibatch keys ``rng.random((c, N))`` (none when n = N) and
then the injected noise's ``rng.standard_normal((c, d))``. :class:`DataKernel` makes the same calls in the same
order, step after step, into preallocated arrays, takes every step's n smallest keys in one compiled pass
(:func:`sgmcmc.engine.data_kernels.smallest_keys`: the same indices in the same, ascending, order as the per-step
call), and runs the kernel once per chunk of steps: a chunk holds at most :data:`KEY_ELEMENTS` keys, so memory stays bounded for N = 12,214 (logistic).
The stream is the numpy steps' one, so a seed gives the same samples on both paths (to rounding).
"""

from __future__ import annotations

from typing import NamedTuple, Optional

import numpy as np

from sgmcmc.engine import codes
from sgmcmc.engine.blocks import DIVERGED, FAILED, Block
from sgmcmc.noise import clip_counters

# The likelihoods the data kernels know (:func:`sgmcmc.engine.data_kernels.minibatch_gradient`).
NORMAL_GAMMA, LOGISTIC = 0, 1
# The sampler families: θ' = θ − ε∇Ũ + noise (SGLD); the (θ, r) recipe with S = I, F = C (SGHMC); the thermostat
# (SGNHT, and CCAdL with its covariance-controlled friction).
LANGEVIN, MOMENTUM, THERMOSTAT = 0, 1, 2
# The gradient estimators the data kernels know (sgmcmc.gradient_estimators): the plain minibatch, control variates
# around one centre, SVRG's per-chain centres renewed every update_every gradients.
PLAIN, CONTROL_VARIATES, SVRG = 0, 1, 2
# The most minibatch keys (steps × chains × N float64) held at once: 2^21 = 16 MB.
KEY_ELEMENTS = 2**21
# The integrators of each family the data kernel reproduces.
DATA_INTEGRATORS = {LANGEVIN: {"euler": codes.EULER},
                    MOMENTUM: {"theta_first": codes.THETA_FIRST, "splitting": codes.SPLITTING, "euler": codes.EULER},
                    THERMOSTAT: {"theta_first": codes.THETA_FIRST, "splitting": codes.SPLITTING, "euler": codes.EULER}}


class CompiledData(NamedTuple):
    """A data target's ∇Ũ(θ) = −(N/n) Σ_{i∈S̃} g_i − ∇log p(θ) as the data kernel computes it (SPEC §1 "Common").

    ``kind``: :data:`NORMAL_GAMMA` (g_i = (γ(x_i − µ), 1/(2γ) − (x_i − µ)²/2), ∇log p = (−γµ, 1/(2γ) − 1 − µ²/2)) or
    :data:`LOGISTIC` (g_i = σ(−y_i θᵀx_i) y_i x_i, ∇log p = −θ/s²); ``data`` (N, w): the x_i (w = 1), or the y_i x_i;
    ``prior``: the prior's parameters ((s²,) for logistic); ``reflected``: the coordinate mapped to −θ_j where
    θ_j ≤ 0 after a move (Normal-Gamma's γ: 1), or −1 for none."""

    kind: int
    data: np.ndarray
    n_data: int
    batch_size: int
    prior: np.ndarray
    reflected: int = -1
    # the gradient estimator whose h_i replace the g_i (a sgmcmc.gradient_estimators.CentredGradients with
    # compiled_estimator()), or None for the plain minibatch
    centred: object = None


def compiled_data(kind: int, target, data, prior=(0.0,), reflected: int = -1) -> CompiledData:
    """The :class:`CompiledData` of the data target ``target`` (its N and n) with ``data`` (N, w) and ``prior``."""
    data = np.asarray(data, dtype=float)
    return CompiledData(kind, np.ascontiguousarray(data.reshape(data.shape[0], -1)), int(target.n_data),
                        int(target.batch_size), np.ascontiguousarray(prior, dtype=float), int(reflected))


class DataKernel:
    """A sampler's compiled block on a data target: ``kernel(rng, state, step_sizes, start) -> Block``, the same
    :class:`~sgmcmc.engine.blocks.Block` as :func:`~sgmcmc.engine.blocks.numpy_block` (paths, clipped and reflected
    counts, the final state with the running estimate, the status and message of a divergence or a failed step).

    ``family`` and ``integrator`` pick the update; ``coefficient`` is SGHMC's friction C or the thermostat's and
    SGLD's diffusion A (1 for SGLD); ``friction`` adds CCAdL's −ε(ε/2)Σ̂r; ``subtract`` makes the injected noise
    N(0, ε(2D − εΣ̂)) (else N(0, 2εD)); ``running`` keeps the running estimate with Σ̂ = ``scale``·Î; ``clip`` the
    clipped draw."""

    def __init__(self, data: CompiledData, family: int, integrator: int, coefficient: float, friction: bool,
                 subtract: bool, running: bool, scale: float, clip: bool):
        self.data, self.family, self.integrator = data, family, integrator
        self.coefficient, self.friction, self.subtract = float(coefficient), bool(friction), bool(subtract)
        self.running, self.scale, self.clip = bool(running), float(scale), bool(clip)
        self.has_momentum = family != LANGEVIN
        self.has_xi = family == THERMOSTAT

    def chunk_steps(self, n_chains: int) -> int:
        """Steps per kernel call: at most :data:`KEY_ELEMENTS` minibatch keys at once (any number with n = N)."""
        if self.data.batch_size == self.data.n_data:
            return 2**31
        return max(1, KEY_ELEMENTS // max(1, n_chains * self.data.n_data))

    def draw(self, rng: np.random.Generator, n_steps: int, n_chains: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
        """The minibatch indices (K, c, n) and the standard normals (K, c, d) of K steps, drawn from ``rng`` in the
        numpy steps' order: per step ``rng.random((c, N))`` (unless n = N), then ``rng.standard_normal((c, d))``."""
        n_data, batch = self.data.n_data, self.data.batch_size
        normals = np.empty((n_steps, n_chains, dim))
        if batch == n_data:
            for k in range(n_steps):
                rng.standard_normal(out=normals[k])
            return np.zeros((1, 1, 1), dtype=np.int64), normals
        keys = np.empty((n_steps, n_chains, n_data))
        for k in range(n_steps):
            rng.random(out=keys[k])
            rng.standard_normal(out=normals[k])
        from sgmcmc.engine import data_kernels

        index = np.empty((n_steps, n_chains, batch), dtype=np.int64)
        data_kernels.smallest_keys(keys, batch, index)  # DataTarget.minibatch, every step at once
        return index, normals

    def __call__(self, rng: np.random.Generator, state, step_sizes: np.ndarray, start: int) -> Block:
        from sgmcmc.engine import data_kernels

        theta = np.array(state.theta, dtype=float)
        n_chains, dim = theta.shape
        step_sizes = np.ascontiguousarray(step_sizes, dtype=float)
        n_steps = step_sizes.size
        momentum = np.array(state.momentum, dtype=float) if self.has_momentum else np.zeros((n_chains, dim))
        xi = np.array(state.xi, dtype=float) if self.has_xi else np.zeros(n_chains)
        noise = np.array(state.noise, dtype=float) if self.running else np.zeros((n_chains, dim, dim))
        count = np.array([state.noise_count if self.running else 0], dtype=np.int64)
        # (the kernel writes no momentum path for SGLD, no ξ path without a thermostat: empty arrays there)
        paths = {"theta": np.empty((n_chains, n_steps, dim)),
                 "momentum": np.empty((n_chains, n_steps if self.has_momentum else 0, dim)),
                 "xi": np.empty((n_chains, n_steps if self.has_xi else 0)), "clipped": np.zeros((n_chains, n_steps), dtype=np.int64),
                 "reflected": np.zeros((n_chains, n_steps), dtype=np.int64)}
        counters = np.zeros(2, dtype=np.int64)  # clipped draws with a full covariance, and their eigendecompositions
        estimator, centre, centre_mean, update_every, calls = self._estimator(n_chains, dim)
        report = np.zeros(3)  # status code, chains with a non-finite θ, r or ξ, smallest variance (diagonal V̂)
        data, chunk = self.data, self.chunk_steps(n_chains)
        done = 0
        while done < n_steps:
            size = min(chunk, n_steps - done)
            index, normals = self.draw(rng, size, n_chains, dim)
            steps = data_kernels.data_block(
                data.kind, data.data, data.n_data, data.batch_size, data.prior, data.reflected, self.family,
                self.integrator, self.coefficient, self.friction, self.subtract, self.running, self.scale, self.clip,
                theta, momentum, xi, noise, count, index, normals, step_sizes[done:done + size], done, paths["theta"],
                paths["momentum"], paths["xi"], paths["clipped"], paths["reflected"], counters, report, estimator, centre,
                centre_mean, update_every, calls)
            done += steps
            if steps < size:
                break
        if data.centred is not None:
            data.centred.compiled_advanced(centre, centre_mean, int(calls[0]))
        clip_counters.draws += int(counters[0])
        clip_counters.fallbacks += int(counters[1])
        return self._block(state, paths, done, step_sizes, start, theta, momentum, xi, noise, int(count[0]), report)

    def _estimator(self, n_chains: int, dim: int):
        """(code, θ̂, ḡ(θ̂), update_every, calls) for the kernel: the plain minibatch's placeholders, or the estimator's
        state (``CentredGradients.compiled_estimator``), arrays the kernel updates in place."""
        if self.data.centred is None:
            return PLAIN, np.zeros((1, dim)), np.zeros((1, dim)), 1, np.zeros(1, dtype=np.int64)
        code, centre, centre_mean, update_every, calls = self.data.centred.compiled_estimator(n_chains)
        return (code, np.ascontiguousarray(centre, dtype=float), np.ascontiguousarray(centre_mean, dtype=float),
                int(update_every), np.array([calls], dtype=np.int64))

    def _block(self, state, paths, done, step_sizes, start, theta, momentum, xi, noise, count, report) -> Block:
        """The :class:`Block` of the first ``done`` steps, with the numpy path's status and message."""
        status = error = None
        code = int(report[0])
        if code == codes.NOT_PSD:
            status = FAILED
            if np.isnan(report[2]):  # a full covariance without a Cholesky factor (sgmcmc.noise.injected_noise)
                error = ("injected noise covariance eps*(2D - eps*B) is not positive definite; "
                         "reduce the step size or the noise estimate")
            else:
                error = ("injected noise covariance eps*(2D - eps*B) is not positive semidefinite: "
                         f"smallest variance {report[2]:.3g}; reduce the step size or the noise estimate")
            error = f"step {start + done + 1}: {error}"
        elif code == codes.NON_FINITE:
            status = DIVERGED
            error = f"non-finite state at step {start + done + 1} in {int(report[1])} of {theta.shape[0]} chains"
        kept = {name: np.ascontiguousarray(path[:, :done]) for name, path in paths.items()}
        new_state = state._replace(theta=theta, momentum=momentum if self.has_momentum else state.momentum,
                                   xi=xi if self.has_xi else state.xi, noise=noise if self.running else state.noise,
                                   noise_count=count if self.running else state.noise_count)
        return Block(start, start + done, step_sizes[:done], kept["theta"], new_state,
                     momentum=kept["momentum"] if self.has_momentum else None, xi=kept["xi"] if self.has_xi else None,
                     clipped=kept["clipped"] if self.clip else None,
                     reflected=kept["reflected"] if self.data.reflected >= 0 else None, status=status, error=error)


def data_kernel(sampler, family: int, coefficient: float, friction: bool = False, subtract: bool = True) -> Optional[DataKernel]:
    """``sampler``'s :class:`DataKernel` on its data target, or None when the kernel does not reproduce its numpy
    steps (no :meth:`~sgmcmc.samplers.base.Sampler.compiled_data`, another integrator or noise estimate)."""
    data = sampler.compiled_data()
    integrator = DATA_INTEGRATORS[family].get(sampler.integrator)
    if data is None or integrator is None:
        return None
    running = sampler.noise_estimate == "running"
    scale = sampler.running_scale() if running else 0.0
    return DataKernel(data, family, integrator, coefficient, friction and running, subtract and running, running, scale,
                      sampler.noise_clip)
