"""The engine: blocks of steps, each integrator written once (:mod:`sgmcmc.engine.integrators`), compiled (numba)
or run as the same source in Python (the readable reference); the random numbers of a block are drawn with the run's
numpy Generator in one call, so both backends consume the same numbers (:mod:`sgmcmc.engine.driver`)."""
