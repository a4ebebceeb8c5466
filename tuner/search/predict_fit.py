"""What ``tune --predict`` learns from each launch (tuner.search.predict_search): the study's calibrations, stored
with it so a resumed call goes on from them, refitted after each launch of a calibrated family; a family the
model describes calibrated on its own first launch (tuner.search.families); and how each uncalibrated family is
launched first."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from perfmodel.family import Family, family_of
from perfmodel.kv_sibling import kv_read_multiple, kv_siblings
from perfmodel.rank import Calibration, Check, Prediction
from tuner.report.predict_report import measured_rate
from tuner.search.families import FAMILIES_ATTR, Calibrations, family_launch, modelled
from tuner.search.predict_queue import TRUSTED_ERROR
from tuner.search.study import results_of
from tuner.trial.result import TrialResult, TrialState

if TYPE_CHECKING:
    import optuna

    from launch.config import ServeConfig
    from tuner.search.predict_model import Model

CALIBRATION_ATTR = "perfmodel_calibration"  # the defaults' family's latest calibration (Calibration.to_dict)
Fitted = dict[Family, list[TrialResult]]  # each calibrated family's trials, its first launch first


def calibrated(study: optuna.Study, model: Model, base: TrialResult) -> tuple[Calibrations, Fitted]:
    """The study's calibrations (stored by an earlier call, else the defaults' fitted on them, and stored) and the
    trials each was fitted on."""
    stored = study.user_attrs.get(CALIBRATION_ATTR)
    main = Calibration.from_dict(stored) if stored else model.calibrate([base], None)
    cals = Calibrations.of_stored(main, study.user_attrs.get(FAMILIES_ATTR, []))
    by_number = {r.number: r for r in results_of(study)}
    fitted = {c.family: [by_number[n] for n in c.trials if n in by_number] for c in (cals.main, *cals.others)}
    fitted[main.family] = [base, *(r for r in fitted[main.family] if r.number != base.number)]
    for r in by_number.values():  # a family's first launch whose calibration a stopped call did not store
        fam = family_of(r.config)
        if (
            cals.of(fam) is None
            and modelled(fam)
            and measured_rate(r)
            and r.config == family_launch(base.config, r.config)
        ):
            fitted[fam] = [r]
            cals = cals.with_cal(model.calibrate([r], sibling_of(cals, fam)))
    store(study, cals)
    return cals, fitted


def store(study: optuna.Study, cals: Calibrations) -> None:
    study.set_user_attr(CALIBRATION_ATTR, cals.main.to_dict())
    if cals.others:
        study.set_user_attr(FAMILIES_ATTR, cals.others_to_list())


def refit(
    model: Model, cals: Calibrations, fitted: Fitted, new: TrialResult, trusted: bool = True
) -> tuple[Calibrations, str, Family | None]:
    """After a launch: its check (predicted before, measured after) and its family's refit; a family the model
    describes, measured for the first time, calibrated on it (returned third: its configurations can now be
    predicted). An untrusted prediction (its rate filled max_num_seqs) is neither checked nor refitted on: the
    model's steps do not describe that regime, and its demonstrated error is the trusted predictions'."""
    rate, fam = measured_rate(new), family_of(new.launched or new.config)
    cal = cals.of(fam)
    if new.state != TrialState.COMPLETE or (cal is None and (rate is None or not modelled(fam))):
        what = f"{rate:.3f} req/s measured" if rate else (new.fail_reason or "no capacity measured")
        why = "" if new.state != TrialState.COMPLETE or rate is None else "; the model has no speculative steps"
        return cals, f"trial {new.number}: {new.state}, {what} (not refitted on{why})", None
    pred = new.predicted.capacity_req_s if new.predicted else None
    if cal is None:
        fitted[fam] = [new]
        sibling = sibling_of(cals, fam)
        first = model.calibrate([new], sibling)
        line = f"trial {new.number}: measured {rate:.3f} req/s; calibrated {fam} on it"
        if sibling is not None:
            line += f" ({sibling_line(first, sibling)})"
        return cals.with_cal(first), line, fam
    if not trusted:
        error = f", predicted {pred:.3f} ({100 * (pred / rate - 1):+.1f} %)" if pred and rate else ""
        return (
            cals,
            f"trial {new.number}: measured {rate or 0:.3f} req/s{error}; it fills max_num_seqs: not refitted on",
            None,
        )
    fitted.setdefault(fam, []).append(new)
    checks = (Check(new.number, pred, rate),) if pred is not None and rate else ()
    cals = cals.with_cal(model.calibrate(fitted[fam], cal.checked(*checks)))
    return cals, _checked_line(new.number, rate, checks, cals.demonstrated_error), None


def sibling_of(cals: Calibrations, family: Family) -> Calibration | None:
    """The defaults' calibration where ``family`` differs from theirs by KV dtype only: a first calibration of
    ``family`` keeps its costs but the KV reads' (perfmodel.kv_sibling)."""
    return cals.main if kv_siblings(family, cals.main.family) else None


def sibling_line(cal: Calibration, sibling: Calibration) -> str:
    multiple = kv_read_multiple(cal, sibling)
    return f"the costs of {sibling.family.kv_dtype} KV but its reads: {multiple:.2f} x theirs a byte"


def _checked_line(number: int, rate: float | None, checks: tuple[Check, ...], err: float | None) -> str:
    line = f"trial {number}: measured {rate or 0:.3f} req/s"
    if checks:
        line += f", predicted {checks[0].predicted_req_s:.3f} ({100 * checks[0].rel_error:+.1f} %)"
    if err is not None:
        line += f"; demonstrated error now {100 * err:.1f} %"
        if err > TRUSTED_ERROR:
            line += f" (over {100 * TRUSTED_ERROR:.0f} %: not trusted to stop the search)"
    return line + "; refitted"


def family_launcher(model: Model, cals: Calibrations, base: ServeConfig) -> Callable[[Prediction], Prediction | None]:
    """How an uncalibrated family is launched first: vLLM's defaults with that family's settings (None where the
    KV budget drops that configuration: the family's own pick stays)."""

    def launch(member: Prediction) -> Prediction | None:
        ranked = model.rank([family_launch(base, member.config)], cals.main)
        return ranked[0] if ranked else None

    return launch
