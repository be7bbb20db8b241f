"""Online LDA speed and memory (issue 7, SPEC §4.11 defaults): seconds per 100 documents of each sampler, sampling
only (no held-out evaluation), and the process's peak resident memory after streaming 2,000 and 10,000 documents.

Each measurement runs in its own process (peak RSS is per process), ``python -m benchmarks.lda --sampler sgrhmc
--documents 10000``, which prints one JSON line. The Gibbs kernels use all cores (numba threads).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

SAMPLERS = ("sgld", "sghmc", "sgrld", "sgrhmc")
DOCUMENT_COUNTS = (2_000, 10_000)


def measure(sampler_name: str, documents: int) -> dict:
    """Stream ``documents`` through the sampler at ``python run.py sampler=<name> target=lda``'s settings, on what a
    run takes (:func:`sgmcmc.engine.blocks.kernel_of`): the engine's blocks, one step each (LDA's d = 385,100 gets one
    step a block, :func:`sgmcmc.runner.block_steps`)."""
    from experiments.common import compose
    from sgmcmc.engine.blocks import kernel_of
    from sgmcmc.experiment import build

    config = compose([f"sampler={sampler_name}", "target=lda"])
    start = time.perf_counter()
    built = build(config)
    setup = time.perf_counter() - start
    target, sampler, schedule = built.target, built.sampler, built.schedule
    rng = np.random.default_rng(0)
    state = sampler.init(target.initial_position(1, rng), rng)
    steps = documents // target.batch_size
    blocks = kernel_of(sampler)
    if blocks is None:
        raise ValueError(f"{sampler_name} on lda has no engine blocks to time")

    def advance(state, t):
        return blocks(rng, state, np.array([schedule(t)]), t).state
    state = advance(state, 0)  # compiles the blocks and the Gibbs kernel (or loads them from numba's cache)
    start = time.perf_counter()
    for t in range(1, steps):
        state = advance(state, t)
    seconds = time.perf_counter() - start
    return {"sampler": sampler_name, "documents": target.documents_seen, "setup_seconds": setup,
            "path": "engine blocks",
            "seconds_per_100_documents": 100.0 * seconds / ((steps - 1) * target.batch_size),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0,
            "finite": bool(np.isfinite(state.theta).all()), "numba_threads": _numba_threads()}


def _numba_threads() -> int:
    import numba

    return int(numba.get_num_threads())


def run_all(samplers=SAMPLERS, document_counts=DOCUMENT_COUNTS) -> list[dict]:
    """Every (sampler, documents) in a fresh process; rows as :func:`measure` gives them."""
    rows = []
    env = {**os.environ, "NUMBA_NUM_THREADS": str(os.cpu_count() or 1)}
    for name in samplers:
        for documents in document_counts:
            result = subprocess.run([sys.executable, "-m", "benchmarks.lda", "--sampler", name, "--documents", str(documents)],
                                    capture_output=True, text=True, env=env)
            if result.returncode != 0:
                lines = (result.stderr.strip() or "no output").splitlines()
                raise RuntimeError(f"benchmarks.lda {name} {documents}: {lines[-1]}")
            rows.append(json.loads(result.stdout.strip().splitlines()[-1]))
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sampler", choices=SAMPLERS, required=True)
    parser.add_argument("--documents", type=int, default=10_000)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.sampler, args.documents)))


if __name__ == "__main__":
    main()
