"""Nightly re-tune. Unchanged model and stack → re-measure the frozen config at its target load.
Changed model (fingerprint) or stack (versions) → re-quantize if the study did, tune a new study
warm-started from the previous best configs, verify the new winner, and only then replace launch.sh.
A regression (SLO lost, or goodput below the old one by more than the tolerance) exits 1.

A configuration's stated rate (certified by a soak, else the search's estimate: best.json ``headline``) is
the edge where its SLO only just held: one more measurement at that rate meets or misses it by noise alone.
So verification soaks a fresh server at (1 − tolerance) × that rate: the SLO holding there is what "within
the tolerance" promises. Goodput at the verified rate (rate × share of requests meeting every SLO) is
reported beside it. A re-tune certifies its own winner; a new certified rate more than the tolerance
below the old stated one is a regression.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from launch.fingerprint import model_fingerprint
from loadtest.summary import ReportSummary
from tuner.certify.margin import Step
from tuner.certify.verify import Verification, verify_at_rate
from tuner.document.study import StudyDocument
from tuner.errors import UsageError
from tuner.inputs import load_inputs
from tuner.pipeline import tune
from tuner.quantize_step import maybe_quantize
from tuner.retune_result import (
    CertifiedCheck,
    OldBest,
    Retuned,
    RetunedBest,
    RetuneResult,
    Reverified,
    retune_regressed,
)
from tuner.search.space import params_of
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.kv_pin import pinned
from tuner.tune_setup import base_config, space_context, trial_context
from tuner.versions import changed_versions, collect_versions

OUTPUT_FILES = ("launch.sh", "best.json", "trials.csv", "report.html")


def read_study(study: Path) -> StudyDocument:
    """best.json of ``study``, with its settings and a best that met the SLO; UsageError (one line) otherwise."""
    path = study / "best.json"
    if not path.is_file():
        raise UsageError(f"--study {study}: no best.json there; point --study at a folder written by `tune`")
    doc = StudyDocument.from_json(path)
    if doc.settings is None:
        raise UsageError(f"{path}: not a best.json written by `tune` (no settings); point --study at a tune folder")
    if not doc.slo_met or doc.best is None:
        raise UsageError(f"{path}: that study has no configuration that met its SLO; run `tune --resume` first")
    return doc


def retune(
    study: Path,
    *,
    trials: int | None = None,
    tolerance: float = 0.1,
    vllm_python: str | None = None,
    soak_seconds: float | None = None,
    progress: Callable[[str], None] = print,
) -> RetuneResult:
    """Run the nightly check; ``regression`` of the result decides the exit code."""
    check_tolerance(tolerance)
    doc = read_study(study)
    best = doc.need(doc.best, "best")
    overrides = {"vllm_python": vllm_python, "out": str(study), "resume": True, "soak_seconds": soak_seconds}
    settings = doc.need(doc.settings, "settings").tune_settings(overrides)
    inputs = load_inputs(settings)
    fingerprint = model_fingerprint(inputs.model_dir)
    changes = changed_versions(doc.versions or {}, collect_versions(settings.vllm_python))
    rate = stated_rate(doc)
    old = OldBest(
        best.goodput_req_s, rate, doc.certified_rate_req_s is not None, best.config, doc.model.fingerprint, doc.versions
    )
    old = replace(old, held_rate=_held_rate(doc.headline.step if doc.headline else None))
    model_changed = fingerprint != doc.model.fingerprint
    if not model_changed and not changes:
        ctx = trial_context(inputs, study / "logs" / f"retune-{_stamp()}")
        at = verification_rate(rate, tolerance)
        check = verify_at_rate(best.deployed or best.config, ctx, at, progress)  # as launch.sh starts it
        # rate × (share of requests meeting every SLO): unlike good/duration, it does not swing with how
        # long the last request's tail took
        old = replace(old, goodput_at_rate_req_s=rate * good_share(best.metrics))  # best.json's report
        new: Reverified | Retuned = Reverified(check, at * good_share(check.report))
        regression, updated = not check.slo_met, False
    else:
        new = _retune_changed(study, doc, settings, trials, tolerance, progress)
        updated = new.verified
        regression = retune_regressed(old, new, tolerance)
    result = RetuneResult(
        study=study,
        model_changed=model_changed,
        changes=changes,
        tolerance=tolerance,
        old=old,
        new=new,
        regression=regression,
        launch_sh_updated=updated,
    )
    _append_history(study, result)
    return result


def _retune_changed(
    study: Path,
    doc: StudyDocument,
    settings: TuneSettings,
    trials: int | None,
    tolerance: float,
    progress: Callable[[str], None],
) -> Retuned:
    new_dir = study / f"retune-{_stamp()}"
    new_settings = replace(settings, out=str(new_dir), resume=False, trials=trials or settings.trials)
    inputs = load_inputs(new_settings)
    quantized = maybe_quantize(new_settings, inputs)
    sctx = space_context(inputs, base_config(inputs), quantized or new_settings.quantized_model)
    previous = [doc.need(doc.best, "best"), *doc.top]
    warm = [params_of(b.config, sctx) for b in previous]
    outcome = tune(inputs, quantized=quantized, warm_start=warm)
    best = outcome.summary.best
    if best is None or best.best_rate is None:
        return Retuned(new_dir, None)
    head = outcome.headline
    check: CertifiedCheck | Verification
    if head is not None and head.certified_req_s is not None:  # certified on a fresh server: that verifies it
        check, rate = CertifiedCheck(head.certified_req_s), head.certified_req_s
    elif head is not None and head.certification_failed:
        check, rate = CertifiedCheck(None, head.held_unconfirmed), best.best_rate
    else:  # no certification (--soak-seconds 0): one verification soak below the search's estimate
        ctx = trial_context(inputs, new_dir / "logs")
        frozen = pinned(best.config, best.readback, inputs.spec, inputs.gpu.is_cpu)  # as launch.sh starts it
        check = verify_at_rate(frozen, ctx, verification_rate(best.best_rate, tolerance), progress)
        rate = best.best_rate
    certified = head is not None and head.certified_req_s is not None
    held = _held_rate(head.step if head is not None else None)
    retuned = Retuned(new_dir, RetunedBest(best.number, best.goodput_req_s, rate, certified, best.config, check, held))
    if retuned.verified:  # only a verified winner replaces the frozen files
        _replace_frozen_files(study, new_dir)
    return retuned


def _replace_frozen_files(study: Path, new_dir: Path) -> None:
    """Archive the study's output files under history/ and put the re-tune's in their place."""
    archive = study / "history" / _stamp()
    archive.mkdir(parents=True, exist_ok=True)
    for name in OUTPUT_FILES:
        if (study / name).exists():
            shutil.copy2(study / name, archive / name)
        if (new_dir / name).exists():
            shutil.copy2(new_dir / name, study / name)


def _held_rate(step: Step | None) -> float | None:
    """What the soaks held where a step below it was stated (a KV-bound edge or a thin margin; None: the stated
    rate was held)."""
    return step.held_req_s if step is not None else None


def check_tolerance(tolerance: float) -> None:
    if not 0 <= tolerance < 1:
        raise UsageError(f"--tolerance {tolerance}: give a fraction in [0, 1), e.g. 0.1 for 10 %")


def stated_rate(doc: StudyDocument) -> float:
    """The rate a study states for its best: certified where a soak certified it, else the search's estimate."""
    if doc.certified_rate_req_s is not None:
        return doc.certified_rate_req_s
    return doc.need(doc.need(doc.best, "best").best_rate_req_s, "best.best_rate_req_s")


def verification_rate(best_rate: float, tolerance: float) -> float:
    """The rate one verification level runs at: (1 − tolerance) × the configuration's best rate."""
    check_tolerance(tolerance)
    return best_rate * (1 - tolerance)


def good_share(report: ReportSummary | None) -> float:
    """Share of a level's requests (failed ones included) that met every SLO; 0 without a report."""
    return report.good_share if report is not None else 0.0


def _stamp() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def _append_history(study: Path, result: RetuneResult) -> None:
    entry = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **result.to_dict()}
    with (study / "retune-history.jsonl").open("a") as f:
        f.write(json.dumps(entry, default=str) + "\n")
