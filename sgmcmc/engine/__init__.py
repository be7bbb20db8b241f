"""The engine: blocks of steps, compiled (numba) where the sampler and target allow it, with the numpy step
as the readable reference; the random numbers of a block are drawn with the run's numpy Generator in one
call, so both paths consume the same numbers (:mod:`sgmcmc.engine.blocks`)."""
