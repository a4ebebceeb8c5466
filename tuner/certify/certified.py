"""Which configurations a study certifies, and where their certifications are kept.

After the search (and any --confirm), the best configuration and vLLM's defaults are each certified
(tuner.certify.certification) so that the headline gain compares like with like; with ``--certify each``
every configuration that met the SLO is, and the one that certified the highest rate wins
(tuner.certify.summary.certified_summary). Certifications live in the study
(user attribute ``certifications``), so a resumed study keeps them instead of soaking again; one made
with another soak length, or of a trial that is no longer the best or the defaults, is not reused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from tuner.certify.certification import Certification
from tuner.certify.summary import Summary
from tuner.trial.result import TrialResult

STUDY_ATTR = "certifications"


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
    """The lowest rate the search saw hold for this trial: soaks step down no further."""
    held = [lv.rate for lv in trial.levels if lv.kind == "rate" and lv.passed and lv.rate]
    return min(held) if held else (trial.best_rate or 0.0) / 2


def certify_study(
    study: AttrStore,
    summary: Summary,
    soak_s: float,
    run: Callable[[TrialResult, float | None], Certification],
    whom: str = "all",
    also: tuple[TrialResult, ...] = (),
    first: Mapping[int, float] | None = None,
) -> dict[int, Certification]:
    """Certify what needs it (reusing stored certifications of the same soak length) and store the new ones;
    ``run(trial, first_rate)`` soaks one, from ``first``'s rate for that trial where given, else its estimate.
    ``also``: further trials to certify (a speculating winner's twin without speculation: tuner.certify.spec_rule)."""
    have = stored(study)
    for trial in [*to_certify(summary, whom), *(t for t in also if t.best_rate)]:
        old = have.get(trial.number)
        if old is not None and old.soak_s == soak_s:
            continue
        have[trial.number] = run(trial, (first or {}).get(trial.number))
        study.set_user_attr(STUDY_ATTR, [c.to_dict() for c in have.values()])
    return have
