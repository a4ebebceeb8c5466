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
from typing import Any

from launch.config import ServeConfig
from launch.fingerprint import model_fingerprint
from loadtest.redact import without_password
from loadtest.summary import ReportSummary
from loadtest.textfile import read_json
from tuner.certify.verify import verify_at_rate
from tuner.errors import UsageError
from tuner.inputs import load_inputs
from tuner.pipeline import tune
from tuner.quantize_step import maybe_quantize
from tuner.search.space import params_of
from tuner.settings.tune_settings import TuneSettings
from tuner.tune_setup import base_config, space_context, trial_context
from tuner.versions import changed_versions, collect_versions

OUTPUT_FILES = ("launch.sh", "best.json", "trials.csv", "report.html")


def read_study(study: Path) -> dict[str, Any]:
    path = study / "best.json"
    if not path.is_file():
        raise UsageError(f"--study {study}: no best.json there; point --study at a folder written by `tune`")
    doc = read_json(path, UsageError)
    if not isinstance(doc, dict) or not isinstance(doc.get("settings"), dict):
        raise UsageError(f"{path}: not a best.json written by `tune` (no settings); point --study at a tune folder")
    if not doc.get("slo_met") or not doc.get("best"):
        raise UsageError(f"{path}: that study has no configuration that met its SLO; run `tune --resume` first")
    return doc


def _settings(doc: dict[str, Any], study: Path, overrides: dict[str, Any]) -> TuneSettings:
    values = {k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__}
    if isinstance(values.get("storage"), str):  # written masked: the driver reads the password (PGPASSWORD)
        values["storage"] = without_password(values["storage"])
    values.update({k: v for k, v in overrides.items() if v is not None})
    return TuneSettings(**values)


def retune(
    study: Path,
    *,
    trials: int | None = None,
    tolerance: float = 0.1,
    vllm_python: str | None = None,
    soak_seconds: float | None = None,
    progress: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the nightly check; returns the JSON document (``regression`` decides the exit code)."""
    check_tolerance(tolerance)
    doc = read_study(study)
    old_best = doc["best"]
    overrides = {"vllm_python": vllm_python, "out": str(study), "resume": True, "soak_seconds": soak_seconds}
    settings = _settings(doc, study, overrides)
    inputs = load_inputs(settings)
    fingerprint = model_fingerprint(inputs.model_dir)
    versions = collect_versions(settings.vllm_python)
    model_changed = fingerprint != doc["model"]["fingerprint"]
    changes = changed_versions(doc.get("versions", {}), versions)
    result: dict[str, Any] = {
        "study": str(study),
        "model_changed": model_changed,
        "versions_changed": bool(changes),
        "changes": {k: {"old": o, "new": n} for k, (o, n) in changes.items()},
        "tolerance": tolerance,
        "old": {
            "goodput_req_s": old_best["goodput_req_s"],
            "rate": stated_rate(doc),
            "certified": doc.get("certified_rate_req_s") is not None,
            "config": old_best["config"],
            "fingerprint": doc["model"]["fingerprint"],
            "versions": doc.get("versions"),
        },
    }
    floor = stated_rate(doc) * (1 - tolerance)
    if not model_changed and not changes:
        ctx = trial_context(inputs, study / "logs" / f"retune-{_stamp()}")
        rate = verification_rate(stated_rate(doc), tolerance)
        check = verify_at_rate(ServeConfig.from_dict(old_best["config"]), ctx, rate, progress)
        # rate × (share of requests meeting every SLO): unlike good/duration, it does not swing with how
        # long the last request's tail took
        old_report = ReportSummary.from_dict(m) if (m := old_best.get("metrics")) else None  # best.json's
        result["old"]["goodput_at_rate_req_s"] = stated_rate(doc) * good_share(old_report)
        new = {**check.to_dict(), "goodput_at_rate_req_s": rate * good_share(check.report)}
        result.update(action="reverified", new=new, regression=not check.slo_met, launch_sh_updated=False)
        _append_history(study, result)
        return result
    result.update(_retune_changed(study, doc, settings, trials, floor, tolerance, progress))
    _append_history(study, result)
    return result


def _retune_changed(
    study: Path,
    doc: dict[str, Any],
    settings: TuneSettings,
    trials: int | None,
    floor: float,
    tolerance: float,
    progress: Callable[[str], None],
) -> dict[str, Any]:
    new_dir = study / f"retune-{_stamp()}"
    new_settings = replace(settings, out=str(new_dir), resume=False, trials=trials or settings.trials)
    inputs = load_inputs(new_settings)
    quantized = maybe_quantize(new_settings, inputs)
    sctx = space_context(inputs, base_config(inputs), quantized or new_settings.quantized_model)
    previous = [doc["best"]] + [c for c in doc.get("top", []) if c]
    warm = [params_of(ServeConfig.from_dict(b["config"]), sctx) for b in previous]
    outcome = tune(inputs, quantized=quantized, warm_start=warm)
    best = outcome.summary.best
    if best is None or best.best_rate is None:
        return {
            "action": "retuned",
            "new": {
                "study": str(new_dir),
                "slo_met": False,
                "verification": {"slo_met": False, "fail": "no trial of the re-tune met the SLOs"},
            },
            "regression": True,
            "launch_sh_updated": False,
        }
    head = outcome.headline
    if head is not None and head.certified_req_s is not None:  # certified on a fresh server: that verifies it
        check: dict[str, object] = {"certified_rate_req_s": head.certified_req_s}
        verified, rate = True, head.certified_req_s
    elif head is not None and head.certification_failed:
        verified, rate, check = False, best.best_rate, {"certified_rate_req_s": None, "fail": "no soak held"}
    else:  # no certification (--soak-seconds 0): one verification soak below the search's estimate
        ctx = trial_context(inputs, new_dir / "logs")
        v = verify_at_rate(best.config, ctx, verification_rate(best.best_rate, tolerance), progress)
        verified, rate, check = v.slo_met, best.best_rate, v.to_dict()
    if verified:  # only a verified winner replaces the frozen files
        _replace_frozen_files(study, new_dir)
    return {
        "action": "retuned",
        "launch_sh_updated": verified,
        "new": {
            "study": str(new_dir),
            "trial": best.number,
            "goodput_req_s": best.goodput_req_s,
            "rate": rate,
            "certified": head is not None and head.certified_req_s is not None,
            "config": best.config.to_dict(),
            "verification": check,
        },
        "regression": not verified or rate < floor,
    }


def _replace_frozen_files(study: Path, new_dir: Path) -> None:
    """Archive the study's output files under history/ and put the re-tune's in their place."""
    archive = study / "history" / _stamp()
    archive.mkdir(parents=True, exist_ok=True)
    for name in OUTPUT_FILES:
        if (study / name).exists():
            shutil.copy2(study / name, archive / name)
        if (new_dir / name).exists():
            shutil.copy2(new_dir / name, study / name)


def check_tolerance(tolerance: float) -> None:
    if not 0 <= tolerance < 1:
        raise UsageError(f"--tolerance {tolerance}: give a fraction in [0, 1), e.g. 0.1 for 10 %")


def stated_rate(doc: dict[str, Any]) -> float:
    """The rate a study states for its best: certified where a soak certified it, else the search's estimate."""
    certified = doc.get("certified_rate_req_s")
    return float(certified) if certified is not None else float(doc["best"]["best_rate_req_s"])


def verification_rate(best_rate: float, tolerance: float) -> float:
    """The rate one verification level runs at: (1 − tolerance) × the configuration's best rate."""
    check_tolerance(tolerance)
    return best_rate * (1 - tolerance)


def good_share(report: ReportSummary | None) -> float:
    """Share of a level's requests (failed ones included) that met every SLO; 0 without a report."""
    return report.good_share if report is not None else 0.0


def _stamp() -> str:
    return dt.datetime.now().strftime("%Y%m%d-%H%M%S")


def _append_history(study: Path, result: dict[str, Any]) -> None:
    entry = {"at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), **result}
    with (study / "retune-history.jsonl").open("a") as f:
        f.write(json.dumps(entry, default=str) + "\n")
