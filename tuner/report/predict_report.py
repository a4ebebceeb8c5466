"""Predicted against measured, per launched trial of a ``tune --predict`` study (issue #24): best.json's
``predictions`` and the report's section, both read from the trials' stored results (``TrialResult.extra``),
so the files of one study state the same figures as trials.csv's ``predicted_capacity_req_s``."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from html import escape
from typing import TYPE_CHECKING, Any

from tuner.certify.certification import Certification
from tuner.report.svg import xy_chart
from tuner.trial.result import PREDICTED, Predicted, TrialResult, TrialState

if TYPE_CHECKING:
    from perfmodel.rank import Prediction


def prediction_attr(p: Prediction) -> dict[str, float | str | None]:
    """What a trial enqueued by the model stores of its prediction (TrialResult.predicted reads it back)."""
    return Predicted(p.capacity_req_s, p.demonstrated_error, p.extrapolated or p.seq_bound, p.unseen).to_dict()


def with_prediction(result: TrialResult, attrs: Mapping[str, Any]) -> TrialResult:
    """``result`` with its trial's prediction (a user attr set when it was enqueued), if any."""
    pred = attrs.get(PREDICTED)
    return result if pred is None else replace(result, extra={**result.extra, PREDICTED: dict(pred)})


def measured_rate(r: TrialResult) -> float | None:
    """The capacity a trial measured (its best passing rate); None when it has none to compare."""
    return r.best_rate if r.state == TrialState.COMPLETE and r.slo_met and r.best_rate else None


def predictions(
    results: Sequence[TrialResult], certifications: Mapping[int, Certification] | None = None
) -> list[dict[str, Any]]:
    """One entry per trial launched by the model: the capacity predicted before its launch, the one measured
    (its best passing rate; None when none passed) and the relative error; where soaks certified the trial
    (--certify each), the rate they held and the error against it (what the model predicts), and the stated rate
    (a step below the held one at a KV-bound edge or a thin margin: ``step``) with the error against that; [] when
    no trial was."""
    certs = certifications or {}
    rows = []
    for r in sorted(results, key=lambda r: r.number):
        pred = r.predicted
        if pred is None:
            continue
        predicted = pred.capacity_req_s
        measured = r.best_rate if r.state == TrialState.COMPLETE and r.slo_met else None
        cert = certs.get(r.number)
        certified = cert.certified_rate if cert is not None else None
        held = cert.held_rate if cert is not None else None
        rows.append(
            {
                "trial": r.number,
                "state": r.state,
                "predicted_capacity_req_s": predicted,
                "measured_capacity_req_s": measured,
                "error": _error(predicted, measured),
                "certified_req_s": certified,
                "error_vs_certified": _error(predicted, certified),
                "held_req_s": held,
                "step": _step_name(cert),
                "error_vs_held": _error(predicted, held),
                "demonstrated_error_before": pred.demonstrated_error,
                "extrapolated": pred.extrapolated,
                "unseen": pred.unseen,
            }
        )
    return rows


def _error(predicted: float | None, measured: float | None) -> float | None:
    return (predicted - measured) / measured if predicted is not None and measured else None


def median_error(rows: Sequence[dict[str, Any]], key: str = "error") -> float | None:
    """Median |error| over the rows that have one (``key``: "error", "error_vs_held" or "error_vs_certified")."""
    errors = [abs(r[key]) for r in rows if r.get(key) is not None]
    return statistics.median(errors) if errors else None


def certified_lines(results: Sequence[TrialResult], certifications: Mapping[int, Certification]) -> list[str]:
    """The console's account of the predictions against the rates the soaks held (--predict with --certify each),
    naming the stated rate where a step below the held one was stated; [] when no launched trial was certified."""
    rows = [r for r in predictions(results, certifications) if r["error_vs_held"] is not None]
    if not rows:
        return []
    each = [
        f"trial {r['trial']} predicted {r['predicted_capacity_req_s']:.3f} req/s, held "
        f"{r['held_req_s']:.3f} ({_pct(r['error_vs_held'])}){_stated(r)}"
        for r in rows
    ]
    med = median_error(rows, "error_vs_held")
    return [f"--predict against the held rates: {'; '.join(each)}; median |error| {_pct(med)} over {len(rows)}"]


def _stated(row: Mapping[str, Any]) -> str:
    """The clause naming the stated rate where it is not the held one (a KV-bound edge, a thin margin), else ""."""
    if row["certified_req_s"] == row["held_req_s"]:
        return ""
    return f", stated {row['certified_req_s']:.3f} a step lower ({row['step']})"


def _step_name(cert: Certification | None) -> str | None:
    """Why the stated rate is a step below the held one (None: it is not)."""
    return cert.step.kind if cert is not None and cert.step is not None else None


def _unmeasured(state: str) -> str:
    """A row's note when the trial did not complete: its state."""
    return "" if state == TrialState.COMPLETE else state


def section(results: Sequence[TrialResult], certifications: Mapping[int, Certification] | None = None) -> str:
    """The report's 'Predicted vs measured' section; empty when the model launched nothing."""
    rows = predictions(results, certifications)
    if not rows:
        return ""
    certified = any(r["held_req_s"] is not None for r in rows)
    summary = f"median |error| {_pct(median_error(rows))} over {_count(rows, 'error')} launches"
    if certified:
        summary += (
            "; against the rates the soaks held (--certify each; the stated rate is a step lower at a KV-bound "
            f"edge or a thin margin): median |error| {_pct(median_error(rows, 'error_vs_held'))} over "
            f"{_count(rows, 'error_vs_held')}"
        )
    return (
        "<h2>Predicted vs measured (--predict)</h2>"
        f"<p>perfmodel's steady-state capacity, predicted before each launch, against the capacity the launch "
        f"measured (its search's best passing rate); {summary}.</p>{_table(rows, certified)}{_chart(rows)}"
    )


def _count(rows: Sequence[dict[str, Any]], key: str) -> int:
    return sum(r[key] is not None for r in rows)


def _table(rows: Sequence[dict[str, Any]], certified: bool) -> str:
    cols = ["trial", "predicted req/s", "measured req/s", "error"]
    cols += ["held req/s", "error vs held", "stated req/s"] if certified else []
    head = "".join(f"<th>{c}</th>" for c in [*cols, "note"])
    body = "".join(
        f"<tr><td>{r['trial']}</td><td>{_num(r['predicted_capacity_req_s'])}</td>"
        f"<td>{_num(r['measured_capacity_req_s'])}</td><td>{_pct(r['error'])}</td>"
        + (
            f"<td>{_num(r['held_req_s'])}</td><td>{_pct(r['error_vs_held'])}</td><td>{_num(r['certified_req_s'])}</td>"
            if certified
            else ""
        )
        + f"<td>{escape(r['unseen'] or r['extrapolated'] or _unmeasured(r['state']))}</td></tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _chart(rows: Sequence[dict[str, Any]]) -> str:
    searched = [r for r in rows if r["error"] is not None]
    certified = [r for r in rows if r["error_vs_held"] is not None]
    pts = [(r["predicted_capacity_req_s"], r["measured_capacity_req_s"]) for r in searched]
    cpts = [(r["predicted_capacity_req_s"], r["held_req_s"]) for r in certified]
    series = [("launched trials (search)", pts, "dot")]
    series += [("held by the soaks", cpts, "dot")] if cpts else []
    return xy_chart(
        [*series, ("predicted = measured", _diagonal([*pts, *cpts]), "line")],
        title="Predicted vs measured capacity",
        xlabel="predicted (req/s)",
        ylabel="measured (req/s)",
        labels=[(x, y, f"#{r['trial']}") for (x, y), r in zip(pts, searched, strict=True)],
    )


def _diagonal(pts: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    if not pts:
        return []
    hi = max(max(x, y) for x, y in pts)
    return [(0.0, 0.0), (hi, hi)]


def _num(v: float | None) -> str:
    return "—" if v is None else f"{v:.3f}"


def _pct(v: float | None) -> str:
    return "—" if v is None else f"{100 * v:+.1f} %"
