"""The seeds' rule for speculative decoding: a winner that speculates is kept only when its measured
acceptance is above zero and its capacity beats the same configuration without speculation (its *twin*),
measured the same way: both certified rates where both were soaked, else both search estimates. Otherwise
the twin wins and launch.sh runs it.

Why: drafting costs a verification pass per step. On the H200 every ngram trial of random-weight models
lost (0 drafts); on the CPU a 135M model verifies k+1 tokens at nearly k+1 times the cost of one, so even
accepted drafts may not pay. The rule asks the measurement, not the sampler's luck on a short level.

``twin_of`` names the configuration the pipeline measures (and certifies) beside a speculating winner;
``apply_rule`` (pure) judges and returns the summary with the kept configuration as the best.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from launch.config import ServeConfig, speculation_on
from loadtest.server_metrics import ServerSummary
from tuner.certify.certification import Certification
from tuner.certify.summary import Summary
from tuner.trial.result import TrialResult, TrialState


def twin_of(config: ServeConfig) -> ServeConfig:
    """The same configuration with speculative decoding off."""
    return replace(config, speculative_method=None, num_speculative_tokens=None, speculative_model=None)


def speculates(trial: TrialResult | None) -> bool:
    return trial is not None and speculation_on(trial.config.speculative_method)


@dataclass(frozen=True)
class SpecVerdict:
    kept: bool
    trial: int  # the speculating configuration's trial
    twin_trial: int | None  # the same configuration without speculation (None: not measured)
    acceptance: float | None  # accepted / drafted tokens, as vLLM counted them
    rate_req_s: float | None
    twin_rate_req_s: float | None
    basis: str  # "certified" (both soaked) | "search" (the search's capacity, both sides)
    line: str

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


SOAK, SEARCH = "in its certifying soak", "at its best search level (trials.csv)"


def _acceptance(trial: TrialResult, cert: Certification | None) -> tuple[float | None, str]:
    """vLLM's acceptance in the certifying soak where there is one, else at the search's best level (the
    figure trials.csv holds), and which of the two it is: the two windows count different drafts."""
    soak = cert.certified_soak if cert is not None else None
    soaked = soak.report.server if soak is not None else ServerSummary()
    if soaked.spec_decode_acceptance_rate is not None or soaked.spec_decode_drafts is not None:
        return float(soaked.spec_decode_acceptance_rate or 0.0), SOAK
    value, drafts = trial.server.spec_decode_acceptance_rate, trial.server.spec_decode_drafts
    return (float(value) if value is not None else (0.0 if drafts is not None else None)), SEARCH


def verdict(best: TrialResult, twin: TrialResult | None, certs: Mapping[int, Certification]) -> SpecVerdict:
    """Judge a speculating ``best`` against its ``twin`` (None when the twin was not measured)."""
    cert = certs.get(best.number)
    acceptance, where = _acceptance(best, cert)
    mine, theirs, basis = best.capacity_req_s, None, "search"
    twin_cert = certs.get(twin.number) if twin is not None else None
    if twin is not None:
        theirs = twin.capacity_req_s
    if cert is not None and twin_cert is not None:
        mine, theirs, basis = cert.certified_rate or 0.0, twin_cert.certified_rate or 0.0, "certified"
    accepted = acceptance is not None and acceptance > 0
    faster = theirs is not None and mine > theirs
    method = f"{best.config.speculative_method} speculation (k={best.config.num_speculative_tokens})"
    acc = "not measured" if acceptance is None else f"{acceptance:.1%} {where}"
    kept = accepted and faster
    if twin is None:
        line = f"{method} of trial {best.number}: acceptance {acc}; not judged, the same configuration "
        line += "without it was not measured (the rule runs after certifying soaks)"
    else:
        why = f"{mine:.3f} vs {theirs:.3f} req/s without it (trial {twin.number}, {basis})"
        line = f"{method} of trial {best.number} {'kept' if kept else 'dropped'}: acceptance {acc}; {why}"
        if not kept:
            line += "; it is kept only when its acceptance is above 0 and it beats the same configuration without it"
    return SpecVerdict(kept, best.number, twin.number if twin else None, acceptance, mine, theirs, basis, line)


def _measured(config: ServeConfig, results: list[TrialResult]) -> list[TrialResult]:
    return sorted((r for r in results if r.state == TrialState.COMPLETE and r.config == config), key=lambda r: r.number)


def find_twin(best: TrialResult, results: list[TrialResult]) -> TrialResult | None:
    """The latest completed trial of ``best``'s configuration without speculation."""
    trials = _measured(twin_of(best.config), results)
    return trials[-1] if trials else None


def apply_rule(
    summary: Summary, results: list[TrialResult], certs: Mapping[int, Certification]
) -> tuple[Summary, SpecVerdict | None]:
    """The summary whose best obeys the rule, and the verdict (None when no speculating best is judged). A
    speculating best that certified below its twin was overruled before the rule (tuner.certify.certified): its
    verdict is still the rule's, on both certified rates."""
    best, overruled = summary.best, summary.overruled
    if best is not None and overruled is not None and speculates(overruled) and find_twin(overruled, [best]):
        return summary, verdict(overruled, best, certs)
    if best is None or not speculates(best):
        return summary, None
    twin = find_twin(best, results)
    judged = verdict(best, twin, certs)
    if judged.kept or twin is None or not twin.slo_met:
        return summary, judged
    capacities = tuple(r.capacity_req_s for r in _measured(twin.config, results))
    top = (twin, *(t for t in summary.top if t.number != twin.number))
    return replace(summary, best=twin, best_capacities=capacities, top=top, gain_over_baseline=None), judged


def speculation_lost(
    summary: Summary, results: list[TrialResult], certs: Mapping[int, Certification] | None = None
) -> str | None:
    """When trials speculated but the best does not: what each measured against the best (certified rates beside
    the search's where soaked), so the report says why speculation is not in launch.sh. None otherwise."""
    best, certs = summary.best, certs or {}
    tried = [r for r in results if r.state == TrialState.COMPLETE and speculates(r)]
    if best is None or speculates(best) or not tried:
        return None
    parts = []
    for r in sorted(tried, key=lambda r: r.number):
        acc = _acceptance(r, None)[0]
        acc_text = "acceptance not measured" if acc is None else f"acceptance {acc:.1%}"
        method = f"{r.config.speculative_method}, k={r.config.num_speculative_tokens}"
        parts.append(f"trial {r.number} ({method}): {acc_text}, {_rates(r, certs)}")
    where = "in certification" if any(r.number in certs for r in tried) else "in the search"
    return (
        f"Speculation was measured and lost {where}: {'; '.join(parts)}; the best, trial {best.number}, "
        f"does not speculate ({_rates(best, certs)})"
    )


def _rates(trial: TrialResult, certs: Mapping[int, Certification]) -> str:
    """'3.313 req/s in the search' and, where soaks certified the trial, ', 2.683 certified'."""
    cert = certs.get(trial.number)
    certified = f", {cert.certified_rate:.3f} certified" if cert is not None and cert.certified_rate else ""
    return f"{trial.capacity_req_s:.3f} req/s in the search{certified}"
