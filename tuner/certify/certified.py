"""Which configurations a study certifies, and where their certifications are kept.

After the search (and any --confirm), the best configuration and vLLM's defaults are each certified
(tuner.certify.certification) so that the headline gain compares like with like; with ``--certify each``
every configuration that met the SLO is, and the one that certified the highest rate wins
(tuner.certify.summary.certified_summary). Certifications live in the study
(user attribute ``certifications``), so a resumed study keeps them instead of soaking again; one made
with another soak length, or of a trial that is no longer the best or the defaults, is not reused. The soaks
of a certification in progress are stored after each one (``certifications_interrupted``), so that a resumed
study goes on from them instead of soaking again: on the H200 one certification took 4 soaks on 3 servers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol

from tuner.certify.certification import Certification, KeepSoaks, Soak
from tuner.certify.confirming import SERVERS, eligible_rates, servers_holding
from tuner.certify.gain_check import GainCheck
from tuner.certify.summary import Summary
from tuner.trial.level import Level
from tuner.trial.result import TrialResult

STUDY_ATTR = "certifications"
PARTIAL_ATTR = "certifications_interrupted"  # trial number -> the soak length and soaks of a cut certification


class AttrStore(Protocol):  # an optuna.Study, or a stand-in in tests
    @property
    def user_attrs(self) -> dict[str, Any]: ...

    def set_user_attr(self, key: str, value: Any) -> None: ...


def stored(study: AttrStore) -> dict[int, Certification]:
    """The study's certifications by trial number (the latest of each trial)."""
    out: dict[int, Certification] = {}
    for d in study.user_attrs.get(STUDY_ATTR, []):
        cert = Certification.from_dict(d)
        out[cert.trial] = cert
    return out


WHOM = ("all", "best", "baseline", "each")


def to_certify(summary: Summary, whom: str = "all") -> list[TrialResult]:
    """The best, and vLLM's defaults when they met the SLO and are not the best (``whom``: WHOM); with "each"
    then every other configuration that met the SLO, one trial each (its first), in trial order."""
    best, base = summary.best, summary.baseline
    if best is None:
        return []
    out = [best] if whom in ("all", "best", "each") else []
    if whom in ("all", "baseline", "each") and base is not None and base.number != best.number and base.slo_met:
        out.append(base)
    if whom == "each":
        seen = {t.config for t in out}
        for t in sorted(summary.measurements, key=lambda r: r.number):
            if t.slo_met and t.config not in seen:
                out.append(t)
                seen.add(t.config)
    return [t for t in out if t.best_rate]


def floor_rate(trial: TrialResult) -> float:
    """Where soaks stop stepping down: the lowest rate the search saw hold for this trial, or half its estimate
    when that is lower. A search seeded by a prediction (tuner.trial.capacity) sees nothing hold far below the
    edge, and its lowest held level (0.85 x the prediction) once ended a certification after one missed soak."""
    held = [lv.rate for lv in trial.levels if lv.kind == "rate" and lv.passed and lv.rate]
    return min([*held, (trial.best_rate or 0.0) / 2])


def config_levels(summary: Summary, trial: TrialResult) -> tuple[Level, ...]:
    """Every search level of ``trial``'s configuration: each of its measurements' (the trial's own when none)."""
    runs = [r for r in summary.measurements if r.config == trial.config] or [trial]
    return tuple(lv for r in runs for lv in r.levels)


def rate_to_beat(best: Certification | None, rival: TrialResult) -> float | None:
    """Where a rival's first soak runs: the best's certified rate when that is above the rival's own estimate, else
    None (its estimate). A soak that holds at its estimate never looks higher, so two configurations certified at
    their estimates would be compared on the search's noise; a rival that holds the rate to beat ties."""
    rate = best.certified_rate if best is not None else None
    return rate if rate is not None and rate > (rival.best_rate or 0.0) else None


def _first_rate(summary: Summary, trial: TrialResult, have: Mapping[int, Certification]) -> float | None:
    """vLLM's defaults soak first at the best's certified rate (``rate_to_beat``), so that the gain is judged at the
    rate it is claimed from: on SmolLM2 the defaults held 1.6 req/s under vLLM's own client where the search had
    estimated 0.906 and the best certified 1.316 (docs/certification.md, "The gain is soaked at the rate to beat")."""
    best, base = summary.best, summary.baseline
    if best is None or base is None or trial.number != base.number or base.number == best.number:
        return None
    return rate_to_beat(have.get(best.number), trial)


# soaks one trial (the trial, its first rate, the soaks of its interrupted certification, where to keep new soaks)
CertifyOne = Callable[[TrialResult, float | None, tuple[Soak, ...], KeepSoaks], Certification]


def certify_study(
    study: AttrStore,
    summary: Summary,
    soak_s: float,
    run: CertifyOne,
    whom: str = "all",
    also: tuple[TrialResult, ...] = (),
    first: Mapping[int, float] | None = None,
) -> dict[int, Certification]:
    """Certify what needs it (reusing stored certifications of the same soak length) and store the new ones;
    ``run(trial, first_rate, prior, keep)`` soaks one, from ``first``'s rate for that trial where given, else (vLLM's
    defaults) the best's certified rate where that is above their estimate, else its estimate; ``prior``: the soaks
    of its interrupted certification (same soak length), which ``keep`` stores after each soak. ``also``: further
    trials to certify (a speculating winner's twin: tuner.certify.spec_rule)."""
    have = stored(study)
    for trial in [*to_certify(summary, whom), *(t for t in also if t.best_rate)]:
        old = have.get(trial.number)
        if old is not None and old.soak_s == soak_s:
            continue
        keep = functools.partial(_keep_interrupted, study, trial.number, soak_s)
        try:
            start = (first or {}).get(trial.number) or _first_rate(summary, trial, have)
            have[trial.number] = run(trial, start, interrupted(study, trial.number, soak_s), keep)
        except KeyboardInterrupt as exc:
            exc.add_note(kept_line(trial.number, interrupted(study, trial.number, soak_s)))
            raise
        study.set_user_attr(STUDY_ATTR, [c.to_dict() for c in have.values()])
        _keep_interrupted(study, trial.number, soak_s, None)
    return have


def keep_gain_check(study: AttrStore, trial: int, check: GainCheck) -> None:
    """Store the best's soak beside the defaults with its certification (tuner.certify.gain_check)."""
    have = stored(study)
    have[trial] = replace(have[trial], gain_check=check)
    study.set_user_attr(STUDY_ATTR, [c.to_dict() for c in have.values()])


def interrupted(study: AttrStore, trial: int, soak_s: float) -> tuple[Soak, ...]:
    """The soaks an interrupted certification of ``trial`` stored, where they are of ``soak_s`` seconds."""
    kept = study.user_attrs.get(PARTIAL_ATTR, {}).get(str(trial))
    if not kept or kept["soak_s"] != soak_s:
        return ()
    return tuple(Soak.from_dict(d) for d in kept["soaks"])


def kept_line(trial: int, soaks: tuple[Soak, ...]) -> str:
    """What a cut certification leaves for a resumed call: its soaks so far, and the rate that holds among them."""
    if not soaks:
        return f"trial {trial}'s certification was cut before a soak ended: a resumed call starts it again"
    best = max(eligible_rates(soaks), default=None)
    on = (
        f"; {best:.3f} req/s held on {servers_holding(soaks, best)} server(s) of the {SERVERS} it needs" if best else ""
    )
    return (f"trial {trial}'s certification was cut after {len(soaks)} soak(s){on}; they are kept in the study, and "
            "the same command with --resume goes on from them")  # fmt: skip


def _keep_interrupted(study: AttrStore, trial: int, soak_s: float, soaks: tuple[Soak, ...] | None) -> None:
    """Store a certification's soaks as they come (None: it finished, they are in the certification now)."""
    kept = dict(study.user_attrs.get(PARTIAL_ATTR, {}))
    if soaks is None:
        if str(trial) not in kept:
            return
        kept.pop(str(trial))
    else:
        kept[str(trial)] = {"soak_s": soak_s, "soaks": [s.to_dict() for s in soaks]}
    study.set_user_attr(PARTIAL_ATTR, kept)
