"""The command-line layer over :mod:`sgmcmc`: what knows about Hydra besides ``run.py``, ``check.py`` and
``configs/``. The core package :mod:`sgmcmc` imports without Hydra (``tests/test_hydra_edge.py``).

* :mod:`sgmcmc_cli.sweep`: a multirun's ``manifest.json`` and its jobs (Hydra's basic sweeper's expansion);
* :mod:`sgmcmc_cli.hydra_callbacks`: the Hydra callbacks of ``configs/config.yaml`` (the manifest, Ray's loopback);
* :mod:`sgmcmc_cli.overrides`: the command line's group choices and keys checked against ``configs/`` and the
  declared keys (:mod:`sgmcmc.config`) before Hydra composes them;
* :mod:`sgmcmc_cli.hydra_private`: the only module that uses Hydra's private API (``hydra._internal``), where
  Hydra has no public one; ``tests/test_hydra_private.py`` pins it to the Hydra versions it was written for.
"""
