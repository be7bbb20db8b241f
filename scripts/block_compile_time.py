"""Seconds to compile one engine block from a cold numba cache (issue 33: the test suite's time is mostly these
compilations): each ``target:sampler`` pair in turn in one process, a block of 3 steps of 2 chains (noise estimate
zero, the generic blocks of ``SGMCMC_SPECIALISE_KERNELS=0`` as the test suite compiles them). The first pair also
compiles what every block shares (the driver's draws, the eigendecomposed draw).

    python scripts/block_compile_time.py [double_well:sghmc gaussian_1d:sgld ...]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

# numba reads both when it is first imported: a cache folder of this run only (cold), and the test suite's blocks
os.environ["NUMBA_CACHE_DIR"] = tempfile.mkdtemp(prefix="sgmcmc-compile-")
os.environ["SGMCMC_SPECIALISE_KERNELS"] = "0"

import numpy as np  # noqa: E402

from sgmcmc.samplers import make_sampler  # noqa: E402
from sgmcmc.targets import make_target  # noqa: E402

PAIRS = ("double_well:sghmc", "gaussian_1d:sgld", "double_well:sgld", "gaussian_1d:sgnht", "normal_gamma:sghmc",
         "normal_gamma:sgld")


def compile_seconds(target_name: str, sampler_name: str) -> float:
    target = make_target(target_name)
    sampler = make_sampler(sampler_name, target, noise_estimate="zero")
    rng = np.random.default_rng(0)
    state = sampler.init(target.initial_position(2, rng), rng)
    start = time.perf_counter()
    sampler.engine_blocks()(rng, state, np.full(3, 1e-4), 0)
    return time.perf_counter() - start


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pairs", nargs="*", default=list(PAIRS), help="target:sampler pairs, in order")
    seconds = {}
    for pair in parser.parse_args(argv).pairs:
        target_name, sampler_name = pair.split(":")
        seconds[pair] = compile_seconds(target_name, sampler_name)
        print(f"{pair}: {seconds[pair]:.1f} s", flush=True)
    return seconds


if __name__ == "__main__":
    main()
