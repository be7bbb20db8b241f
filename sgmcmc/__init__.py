"""sgmcmc: stochastic-gradient MCMC samplers built from the complete recipe of Ma, Chen & Fox (2015).

The package is plain Python over numpy arrays (chain dimension first) and imports without Hydra, which lives only
at the edge (``run.py``, ``check.py``, ``sgmcmc_cli``, ``configs/``). See ``sgmcmc.samplers`` and
``sgmcmc.targets`` for the registries.
"""

__version__ = "0.1.0"
RESULTS_SCHEMA_VERSION = "1"


def lazy_exports(namespace: dict, modules: dict[str, str]):
    """A module's ``__getattr__`` (PEP 562) that imports each name of ``modules`` from its module on first use,
    so that importing a package does not import what only some of its users need."""

    def __getattr__(name: str):
        if name not in modules:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        from importlib import import_module

        value = namespace[name] = getattr(import_module(modules[name]), name)
        return value

    return __getattr__
