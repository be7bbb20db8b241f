"""The checks at the end of every run, after Stan's and PyMC's warnings after sampling: a finished run whose numbers
likely mislead says so, naming what was measured and a remedy as a config key and value (issue 34).

Each check reads the run's metrics (``metrics.json``'s record, before it is written) and what the run was asked for
(:class:`RunFacts`), and gives a :class:`RunWarning` where its measurement crosses its bound:

- ``rhat``: the largest split R-hat over the coordinates (rank-normalised, Vehtari et al. 2021) above 1.01, SPEC
  §4.9's bound, and above 1.01 times the R-hat that stationary chains of this length and autocorrelation give
  (``rhat_excess_max``, :func:`sgmcmc.diagnostics.autocorrelation.stationary_split_rhat`): the chains disagree. Many
  short chains have an R-hat above 1.01 at stationarity (the default run's 1,000 chains of 1,000 draws: 1.04), which
  says each chain alone is short, not that the chains disagree (Margossian et al. 2024, "Nested R̂"); where the halves
  are too short to judge that (a within-chain τ over a tenth of their draws) the bound is 1.01 alone, and the warning
  says so. Remedy: twice the steps.
- ``ess``: the least bulk or tail ESS below 100 a chain for up to 4 chains (Vehtari et al. 2021 ask for 400 over 4
  chains): the means and quantiles carry Monte Carlo errors of sd/√ESS and more. Remedy: more steps.
- ``stuck``: chains whose draws never changed (a Metropolis–Hastings test that rejects every proposal, a step that
  underflows). Remedy: a tenth of the step size. R-hat and the ESS then say the same with a remedy that does not
  help (longer chains): they are not checked.
- ``acceptance``: a Metropolis–Hastings acceptance below 10%. Remedy: a quarter of the step size.
- ``thermostat``: ξ's mean off its predicted value (SGNHT, CCAdL, BADODAB) by more than 4 standard errors and 10%:
  the thermostat has not settled (it heated during the descent from the start, and cools by about ε a step).
  Remedy: a burn-in as long as the run.
- ``clipping``: more than 1% of the injected noise's variances clipped at 0 (``noise_clip``): the subtracted noise
  estimate exceeded 2D, and the samples come out wider than the posterior. Remedy: a tenth of the step size.
- ``minibatch_noise``: with ``noise_estimate=zero`` the minibatch noise is not subtracted, and inflates the posterior
  variance by about ε·V̂/(2D) (``final.noise_inflation``, :func:`sgmcmc.tuning.noise_inflation` at the draws) above
  10%. Remedy: the step size that brings it to 5%, or ``sampler.noise_estimate=known``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

RHAT_BOUND = 1.01  # SPEC §4.9
ESS_PER_CHAIN = 100  # Vehtari et al. (2021): 400 over 4 chains
ACCEPTANCE_BOUND = 0.1
THERMOSTAT_STANDARD_ERRORS, THERMOSTAT_RELATIVE = 4.0, 0.1
CLIPPED_BOUND = 0.01
NOISE_INFLATION_BOUND, NOISE_INFLATION_AIM = 0.1, 0.05


@dataclass(frozen=True)
class RunFacts:
    """What the run was asked for: its chains, steps, burn-in, step size and dimension."""

    n_chains: int
    n_steps: int
    burn_in: int
    step_size: float
    dim: int


@dataclass(frozen=True)
class RunWarning:
    """One check that failed: ``check`` names it, ``message`` says what was measured, ``remedy`` is a config
    override (key=value) with why."""

    check: str
    message: str
    remedy: str

    def line(self) -> str:
        return f"{self.message}; remedy: {self.remedy}"

    def as_dict(self) -> dict:
        return {"check": self.check, "message": self.message, "remedy": self.remedy}


def _number(value) -> Optional[float]:
    return None if value is None else float(value)


def warnings_after_run(metrics: dict, facts: RunFacts) -> list[RunWarning]:
    """The module docstring's checks on a completed run's ``metrics`` (none for a run that failed or stopped early:
    its own error says why)."""
    if metrics.get("status") != "completed":
        return []
    final, out = metrics.get("final") or {}, []
    stuck = final.get("chains_stuck")
    smaller = facts.step_size / 10
    if stuck:  # then R-hat and the ESS say the same, with a remedy (longer chains) that does not help
        out.append(RunWarning("stuck", f"{stuck} of {facts.n_chains} chains never moved",
                              f"sampler.step_size={smaller:.3g} (a tenth)"))
    longer = f"run.n_steps={2 * facts.n_steps} run.burn_in={2 * facts.burn_in}"
    rhat, excess = _number(final.get("rhat_max")), _number(final.get("rhat_excess_max"))
    judged = excess is not None and not math.isnan(excess)
    if not stuck and rhat is not None and rhat > RHAT_BOUND and not (judged and excess <= RHAT_BOUND):
        # NaN R-hat (one chain): not measured
        why = (f"{excess:.3g} times what stationary chains of this length give" if judged else
               "and the half-chains are too short (under 10 effective draws each) to tell disagreement from Monte "
               "Carlo error")
        out.append(RunWarning("rhat", f"the chains disagree: split R-hat {rhat:.3g} > {RHAT_BOUND}, {why}",
                              f"{longer} (longer chains), or a smaller sampler.step_size"))
    bound = ESS_PER_CHAIN * min(facts.n_chains, 4)
    for key, name in (("ess_bulk_min", "bulk"), ("ess_tail_min", "tail")):
        ess = _number(final.get(key))
        if not stuck and ess is not None and ess < bound:
            out.append(RunWarning("ess", f"{name} ESS {ess:.0f} < {bound}: the means and quantiles carry Monte Carlo "
                                         f"errors of sd/√ESS or more", f"{longer} (more effective draws)"))
            break
    acceptance = _number(metrics.get("acceptance_rate"))
    if acceptance is not None and acceptance < ACCEPTANCE_BOUND:
        out.append(RunWarning("acceptance", f"the Metropolis-Hastings test accepted {acceptance:.1%} of the proposals",
                              f"sampler.step_size={facts.step_size / 4:.3g} (a quarter)"))
    out.extend(_thermostat(final, facts))
    clipped = metrics.get("noise_clips") or 0
    variances = max(metrics.get("steps_done") or 0, 1) * facts.n_chains * facts.dim
    if clipped / variances > CLIPPED_BOUND:
        message = (f"{clipped:,} of the injected noise's {variances:,} variances were clipped at 0 "
                   f"({clipped / variances:.1%}): the samples come out wider than the posterior")
        out.append(RunWarning("clipping", message, f"sampler.step_size={smaller:.3g} (a tenth)"))
    inflation = _number(final.get("noise_inflation"))
    if inflation is not None and inflation > NOISE_INFLATION_BOUND:
        message = (f"the minibatch noise, not subtracted (noise_estimate=zero), inflates the posterior variance by "
                   f"about {inflation:.0%} (ε·V/(2D))")
        aimed = facts.step_size * NOISE_INFLATION_AIM / inflation
        out.append(RunWarning("minibatch_noise", message, f"sampler.step_size={aimed:.3g} (to about "
                                                          f"{NOISE_INFLATION_AIM:.0%}), or sampler.noise_estimate=known"))
    return out


def _thermostat(final: dict, facts: RunFacts) -> list[RunWarning]:
    mean, predicted = _number(final.get("thermostat_mean")), _number(final.get("thermostat_predicted"))
    if mean is None or predicted is None or not math.isfinite(predicted):
        return []
    error = _number(final.get("thermostat_se")) or 0.0
    if abs(mean - predicted) <= max(THERMOSTAT_STANDARD_ERRORS * error, THERMOSTAT_RELATIVE * abs(predicted)):
        return []
    return [RunWarning("thermostat", f"the thermostat's mean {mean:.4g} is off its prediction {predicted:.4g} "
                                     f"(standard error {error:.2g}): it has not settled",
                       f"run.burn_in={facts.n_steps} run.n_steps={2 * facts.n_steps} (a burn-in as long as the run)")]
