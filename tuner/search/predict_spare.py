"""The best's spare speed as ``tune`` states it (tuner.certify.spare_speed): its family's calibration from the study
(``tune --predict``'s, else fitted here on the family's launches), its configuration with the KV blocks its server
had, the study's demand; and whether a stored one still describes the current best and its stated rate."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from perfmodel.family import Family, family_of
from perfmodel.rank import Calibration
from tuner.certify.edge import lowest_miss_above
from tuner.certify.spare_speed import STUDY_ATTR, SpareSpeed, spare_speed
from tuner.report.predict_report import measured_rate
from tuner.search.families import FAMILIES_ATTR, Calibrations, modelled
from tuner.search.predict_demand import demand_of
from tuner.search.predict_fit import CALIBRATION_ATTR
from tuner.search.predict_model import candidate
from tuner.search.study import results_of

if TYPE_CHECKING:
    import optuna

    from tuner.certify.certification import Certification
    from tuner.certify.soak_record import Soak
    from tuner.trial.context import TrialContext
    from tuner.trial.level import Level
    from tuner.trial.result import TrialResult

Fit = Callable[[Sequence["TrialResult"]], Calibration]  # a family's first calibration on these trials (Model.calibrate)
CALIBRATION_TRIALS = 3  # a --predict study's families were fitted on 2-3 launches; each more adds its levels' replay


def spare_speed_of(
    study: optuna.Study,
    ctx: TrialContext,
    best: TrialResult,
    cert: Certification,
    levels: Iterable[Level],
    fit: Fit | None = None,
) -> SpareSpeed | str:
    """``best`` at the rate ``cert`` states, over its soaks' window, on slower machines, by its family's calibration
    in ``study`` (where ``tune --predict`` stored none, ``fit`` on the family's launches: calibration_trials),
    below the lowest miss above that rate among its soaks and ``levels`` (every measurement of its configuration:
    tuner.certify.edge), the model set to the speed of the soaks that held that rate (their mean TPOT, on the KV
    blocks their servers had; a stated rate a step below the held one, not soaked itself, by the held rate's
    soaks); else why the model cannot say (a line for the console)."""
    family = family_of(best.launched or best.config)  # as the refits name it (tuner.search.predict_fit)
    if not modelled(family):
        return f"spare speed of trial {best.number}: not stated, the model has no speculative steps"
    cal = family_calibration(study, family)
    if cal is None and fit is not None:
        cal = fit(calibration_trials(results_of(study), family, best))
    if cal is None:
        return f"spare speed of trial {best.number}: not stated, its engine family ({family}) was not calibrated"
    found = candidate(best.config, ctx)  # budgeted as the trial was (the launched one has the emulation's gmu)
    if found is None:
        return f"spare speed of trial {best.number}: not stated, the KV budget drops its configuration"
    rate, held = cert.certified_rate or 0.0, cert.held_rate
    at_rate = soaks_held_at(cert.soaks, rate) or soaks_held_at(cert.soaks, held or 0.0)  # a step below: held's
    engine = found.engine
    tokens = soaks_kv_tokens(at_rate) or (best.readback.kv_cache_size_tokens if best.readback else None)
    if tokens:  # the blocks its soaks' servers had (else the trial's)
        engine = engine.with_blocks(tokens // engine.block_size)
    trials = tuple(sorted(set(cal.trials)))
    predicted = best.predicted.capacity_req_s if best.predicted else None
    error = (predicted - held) / held if predicted is not None and held else None
    miss = lowest_miss_above(rate, cert.soaks, levels)
    missed = miss.rate_req_s if miss is not None else None
    tpot, at = soaks_mean_tpot_ms(at_rate), (at_rate[0].rate if at_rate else None)
    demand = demand_of(ctx)
    return spare_speed(best.number, rate, cert.soak_s, engine, cal.costs, demand, trials, error, missed, tpot, at)


def calibration_trials(results: Sequence[TrialResult], family: Family, best: TrialResult) -> list[TrialResult]:
    """The launches of ``family`` a calibration is fitted on where ``tune --predict`` stored none: vLLM's defaults
    first where they are of it (the model fits the family of the first), then ``best``, then the family's other
    measured trials from the highest capacity down, CALIBRATION_TRIALS in all."""
    mine = [r for r in results if measured_rate(r) and family_of(r.launched or r.config) == family]
    first = [r for r in mine if r.is_baseline and r.number != best.number] + [best]
    rest = sorted(
        (r for r in mine if r.number not in {f.number for f in first}), key=lambda r: -(measured_rate(r) or 0)
    )
    return [*first, *rest][:CALIBRATION_TRIALS]


FIT_ATTR = "spare_speed_calibration"  # the calibration fitted for the spare speed: its trials, Calibration.to_dict


def kept_fit(study: optuna.Study, trials: Sequence[TrialResult]) -> Calibration | None:
    """The calibration an earlier call fitted for the spare speed on these very trials (finished trials do not
    change, so neither does it); None where none was, or on other trials."""
    kept = study.user_attrs.get(FIT_ATTR)
    if kept is None or kept["trials"] != [t.number for t in trials]:
        return None
    return Calibration.from_dict(kept["calibration"])


def keep_fit(study: optuna.Study, trials: Sequence[TrialResult], cal: Calibration) -> None:
    study.set_user_attr(FIT_ATTR, {"trials": [t.number for t in trials], "calibration": cal.to_dict()})


def soaks_held_at(soaks: Sequence[Soak], rate: float) -> list[Soak]:
    return [s for s in soaks if s.holds and abs(s.rate - rate) < 1e-9]


def family_calibration(study: optuna.Study, family: Family) -> Calibration | None:
    """``family``'s calibration as ``tune --predict`` stored it in ``study``; None: none was."""
    stored = study.user_attrs.get(CALIBRATION_ATTR)
    others = study.user_attrs.get(FAMILIES_ATTR, [])
    return Calibrations.of_stored(Calibration.from_dict(stored), others).of(family) if stored else None


def soaks_kv_tokens(soaks: Sequence[Soak]) -> int | None:
    """The fewest KV tokens a server of these soaks had (vLLM's /metrics); None where none reported it."""
    tokens = [s.report.server.kv_cache_tokens for s in soaks if s.report.server and s.report.server.kv_cache_tokens]
    return int(min(tokens)) if tokens else None


def soaks_mean_tpot_ms(soaks: Sequence[Soak]) -> float | None:
    """The soaks' mean TPOT, each soak weighted by its answered requests; None: none measured one."""
    pairs = [(s.report.tpot_ms.mean, s.report.requests_ok) for s in soaks if s.report.tpot_ms.mean is not None]
    weight = sum(n for _, n in pairs)
    return sum(m * n for m, n in pairs) / weight if weight else None


def current_spare(
    stored: Mapping[str, Any] | None, best: TrialResult | None, certs: Mapping[int, Certification]
) -> dict[str, Any] | None:
    """The stored spare speed (``study.user_attrs[STUDY_ATTR]``) where it is of ``best`` at its stated rate now;
    None where the best or its rate has changed since (a resumed study re-certified)."""
    if not stored or best is None or best.number not in certs:
        return None
    rate = certs[best.number].certified_rate
    same = stored.get("trial") == best.number and rate is not None and abs(stored["rate_req_s"] - rate) < 1e-9
    return dict(stored) if same else None


__all__ = ["FIT_ATTR", "STUDY_ATTR", "calibration_trials", "current_spare", "keep_fit", "kept_fit", "spare_speed_of"]
