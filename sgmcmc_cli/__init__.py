"""The command-line layer over :mod:`sgmcmc`: what knows about Hydra besides ``run.py``, ``check.py`` and
``configs/``. The core package :mod:`sgmcmc` imports without Hydra (``tests/test_hydra_edge.py``).

* :mod:`sgmcmc_cli.sweep`: a multirun's ``manifest.json`` and its jobs (Hydra's basic sweeper's expansion);
* :mod:`sgmcmc_cli.hydra_callbacks`: the Hydra callbacks of ``configs/config.yaml`` (the manifest, Ray's loopback);
* :mod:`sgmcmc_cli.overrides`: the command line's group choices and keys checked against ``configs/`` and the
  declared keys (:mod:`sgmcmc.keys`) before Hydra composes them;
* :mod:`sgmcmc_cli.arguments`: the command line's flags (``hydra.main``'s), checked before Hydra runs anything;
* :mod:`sgmcmc_cli.single_run`: a single run, its config composed once (Hydra's compose API) and run by Hydra's
  ``run_job`` as ``hydra.main`` runs it.

Only Hydra's public API is used: nothing imports ``hydra._internal`` (``tests/test_hydra_api.py``).
"""
