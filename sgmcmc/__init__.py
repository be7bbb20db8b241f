"""sgmcmc: stochastic-gradient MCMC samplers built from the complete recipe of Ma, Chen & Fox (2015).

The package is plain Python over numpy arrays (chain dimension first); Hydra lives only at the edge
(``run.py``, ``configs/``). See ``sgmcmc.samplers`` and ``sgmcmc.targets`` for the registries.
"""

__version__ = "0.1.0"
RESULTS_SCHEMA_VERSION = "1"
