"""Diagnostics: exact reference masses and moments, histogram divergences, autocorrelation time, ESS, R-hat, the
kernel Stein discrepancy.

Pure functions over numpy arrays, chain dimension first; definitions follow SPEC §3 "Metric definitions" and §4.4/§4.12.
"""

from .autocorrelation import autocorrelation, effective_sample_size, integrated_autocorrelation_time, split_rhat
from .histogram_divergence import histogram_density_rmse, histogram_kl
from .marginal_rmse import marginal_density_rmse
from .moments import moment_errors, wasserstein1_to_exact_1d
from .quadrature import bin_masses, bin_masses_1d, bin_masses_2d, expectation_1d
from .stein import imq_ksd, target_ksd

__all__ = [
    "autocorrelation",
    "bin_masses",
    "bin_masses_1d",
    "bin_masses_2d",
    "effective_sample_size",
    "expectation_1d",
    "histogram_density_rmse",
    "histogram_kl",
    "imq_ksd",
    "integrated_autocorrelation_time",
    "marginal_density_rmse",
    "moment_errors",
    "split_rhat",
    "target_ksd",
    "wasserstein1_to_exact_1d",
]
