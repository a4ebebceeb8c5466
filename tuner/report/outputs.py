"""The study folder's files: trials.csv, best.json, launch.sh, report.html — rewritten from the
study after every trial (atomically), so an interrupted tune loses nothing it finished.

Contract (DESIGN.md): trials.csv has the contract columns; best.json records config, metrics,
versions, GPU and model hash; launch.sh exists only for a configuration that met every SLO.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from launch.config import ServeConfig
from tuner.certify.certification import Certification
from tuner.certify.confirm import Confirmation
from tuner.certify.headline import Headline, headline
from tuner.certify.spec_rule import apply_rule, speculation_lost
from tuner.certify.summary import Summary, certified_summary, summarize
from tuner.document.study import CostFigures
from tuner.export.cost import cost_document, cost_lines, gpu_price
from tuner.layout import layout_columns
from tuner.report.company import company
from tuner.report.predict_report import median_error, predictions
from tuner.trial.result import TrialResult


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def trials_frame(
    results: list[TrialResult],
    timelines: Mapping[int, Mapping[str, Any]] | None = None,
    certifications: Mapping[int, Certification] | None = None,
) -> pd.DataFrame:
    """trials.csv: each trial's row (TrialResult.csv_row), its certified rate where a soak certified it
    (tuner.certify.certification), and what else ran on the host while it was measured (tuner.report.company;
    empty where the trial was not measured or kept no timeline). ``timelines``: every trial's, also of those that are
    not results (tuner.search.study.timelines_of); default: the results'."""
    certs = certifications or {}
    if timelines is None:
        timelines = {r.number: r.timeline for r in results if r.timeline}
    met = company(timelines)
    layouts = any(r.config.gpus > 1 for r in results)  # several GPUs searched: goodput per GPU beside
    rows = []
    for r in sorted(results, key=lambda r: r.number):
        c = met.get(r.number)
        rows.append(
            {
                **r.csv_row(),
                **(layout_columns(r.config, r.goodput_req_s) if layouts else {}),
                "certified_rate_req_s": _certified(certs.get(r.number)),
                "others_starting_s": None if c is None else round(c.others_starting_s, 1),
                "others_up_mean": None if c is None else round(c.others_up_mean, 2),
            }
        )
    return pd.DataFrame(rows).convert_dtypes()  # integer knobs stay integers next to empty (default) cells


def _certified(cert: Certification | None) -> float | None:
    rate = cert.certified_rate if cert is not None else None
    return None if rate is None else round(rate, 4)


def best_document(
    summary: Summary,
    meta: dict[str, Any],
    headline: Headline,
    certifications: Mapping[int, Certification] | None = None,
    deploy: Callable[[TrialResult], ServeConfig] | None = None,
) -> dict[str, Any]:
    """best.json: the metadata, the headline (tuner.certify.headline: the one stated capacity and gain), the best,
    the defaults and the closest misses, and every certification's soaks. ``deploy``: what launch.sh starts of a
    trial (its KV cache pinned: tuner.trial.kv_pin), stated as ``deployed``."""
    certs = certifications or {}

    def brief(r: TrialResult | None) -> dict[str, Any] | None:
        if r is None:
            return None
        return {
            "trial": r.number,
            "state": r.state,
            "slo_met": r.slo_met,
            "goodput_req_s": r.goodput_req_s,
            "best_rate_req_s": r.best_rate,
            "config": r.config.to_dict(),
            "launched": r.launched.to_dict() if r.launched else None,
            "deployed": (deploy(r) if deploy else r.config).to_dict(),
            "metrics": r.report.to_dict() if r.report else None,
            "kv_tokens_predicted": r.budget.kv_tokens if r.budget else None,
            "kv_tokens_reported": r.readback.kv_cache_size_tokens if r.readback else None,
            "fail_reason": r.fail_reason,
            "certified_rate_req_s": certs[r.number].certified_rate if r.number in certs else None,
            "pace_ms": r.pace_ms,  # its server's pace (launch.pace), which launch.sh and the exports time again
        }

    return {
        **meta,
        "slo_met": summary.best is not None,
        # the stated capacity (certified, else the search's estimate, said which) and the one gain figure
        "certified_rate_req_s": headline.certified_req_s,
        "headline": headline.to_dict(),
        "best": brief(summary.best),
        # every measurement of the best's configuration (more than one where the search proposed it again):
        # its capacity, which ranks, and its goodput beside it
        "best_capacities_req_s": list(summary.best_capacities),
        "best_capacity_mean_req_s": summary.best_capacity,
        "best_goodputs_req_s": list(summary.best_goodputs),
        "best_goodput_mean_req_s": _mean_or_none(summary.best_goodputs),
        "baseline": brief(summary.baseline),
        "gain_over_baseline": headline.gain,
        "gain_basis": headline.basis,
        "baseline_note": summary.baseline_note,
        "overruled": brief(summary.overruled),
        "closest": [brief(r) for r in summary.closest],
        "top": [brief(r) for r in summary.top],
        "certifications": [c.to_dict() for _, c in sorted(certs.items())],
    }


def with_predictions(
    document: dict[str, Any], results: list[TrialResult], certifications: Mapping[int, Certification] | None = None
) -> dict[str, Any]:
    """best.json with perfmodel's prediction against the measurement of each trial it launched (--predict), and
    against the rate its soaks held and the stated rate where soaks certified it (--certify each)."""
    rows = predictions(results, certifications)
    if not rows:
        return document
    return {
        **document,
        "predictions": rows,
        "prediction_median_abs_error": median_error(rows),
        "prediction_median_abs_error_vs_certified": median_error(rows, "error_vs_certified"),
        "prediction_median_abs_error_vs_held": median_error(rows, "error_vs_held"),
    }


class ScriptWriter(Protocol):
    """Writes launch.sh for the best trial (it needs the probed vLLM: tuner.study_outputs)."""

    def __call__(self, path: Path, best: TrialResult, head: Headline, /) -> None: ...


class ReportWriter(Protocol):
    """Writes report.html (tuner.report.report_html.write_report, with the study's importances bound)."""

    def __call__(
        self,
        path: Path,
        results: list[TrialResult],
        summary: Summary,
        meta: dict[str, Any],
        /,
        *,
        headline: Headline,
        certifications: Mapping[int, Certification],
        cost: Sequence[str],
    ) -> None: ...


def write_outputs(
    out: Path,
    results: list[TrialResult],
    meta: dict[str, Any],
    write_script: ScriptWriter,
    write_report: ReportWriter,
    timelines: Mapping[int, Mapping[str, Any]] | None = None,
    certifications: Mapping[int, Certification] | None = None,
    confirmation: Confirmation | None = None,
    deploy: Callable[[TrialResult], ServeConfig] | None = None,
) -> Summary:
    """Write every output file; ``write_script(path, best, headline)`` and ``write_report(path, results,
    summary, meta, headline=)`` are injected (launch.sh needs the probed vLLM; report.html is its own
    module). Every file states the one headline (tuner.certify.headline) of the results, certifications and
    the current --confirm runs."""
    out.mkdir(parents=True, exist_ok=True)
    summary, spec = apply_rule(
        certified_summary(summarize(results), certifications or {}), results, certifications or {}
    )
    if spec is not None:  # the speculation rule's verdict (tuner.certify.spec_rule), in best.json and the report
        meta = {**meta, "speculation": spec.to_dict()}
    elif (lost := speculation_lost(summary, results, certifications)) is not None:
        meta = {**meta, "speculation_lost": lost}
    head = headline(summary, certifications or {}, confirmation)
    frame = trials_frame(results, timelines, certifications)
    tmp = out / "trials.csv.tmp"
    frame.to_csv(tmp, index=False)
    os.replace(tmp, out / "trials.csv")
    document = with_predictions(best_document(summary, meta, head, certifications, deploy), results, certifications)
    figures = CostFigures.from_dict(json.loads(json.dumps(document, default=str)))  # the figures as written
    price = gpu_price(figures)
    document["cost"] = cost_document(figures, *price)  # $ per million output tokens at the stated rates
    atomic_write(out / "best.json", json.dumps(document, indent=2, default=str))
    script = out / "launch.sh"
    if summary.best is not None:
        write_script(script, summary.best, head)
    elif script.exists():  # never leave a launch.sh that claims an SLO no config met
        script.unlink()
    write_report(
        out / "report.html",
        results,
        summary,
        meta,
        headline=head,
        certifications=certifications or {},
        cost=cost_lines(figures, *price),
    )
    return summary


def _mean_or_none(values: tuple[float, ...]) -> float | None:
    return sum(values) / len(values) if values else None
