"""Predicted against measured, per launched trial of a ``tune --predict`` study (issue #24): best.json's
``predictions`` and the report's section, both read from the trials' stored results (``TrialResult.extra``),
so the files of one study state the same figures as trials.csv's ``predicted_capacity_req_s``."""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import replace
from html import escape
from typing import TYPE_CHECKING, Any

from tuner.report.svg import xy_chart
from tuner.trial.result import PREDICTED, Predicted, TrialResult, TrialState

if TYPE_CHECKING:
    from perfmodel.rank import Prediction


def prediction_attr(p: Prediction) -> dict[str, float | str | None]:
    """What a trial enqueued by the model stores of its prediction (TrialResult.predicted reads it back)."""
    return Predicted(p.capacity_req_s, p.demonstrated_error, p.extrapolated, p.unseen).to_dict()


def with_prediction(result: TrialResult, attrs: Mapping[str, Any]) -> TrialResult:
    """``result`` with its trial's prediction (a user attr set when it was enqueued), if any."""
    pred = attrs.get(PREDICTED)
    return result if pred is None else replace(result, extra={**result.extra, PREDICTED: dict(pred)})


def measured_rate(r: TrialResult) -> float | None:
    """The capacity a trial measured (its best passing rate); None when it has none to compare."""
    return r.best_rate if r.state == TrialState.COMPLETE and r.slo_met and r.best_rate else None


def predictions(results: Sequence[TrialResult]) -> list[dict[str, Any]]:
    """One entry per trial launched by the model: the capacity predicted before its launch, the one measured
    (its best passing rate; None when none passed) and the relative error; [] when no trial was."""
    rows = []
    for r in sorted(results, key=lambda r: r.number):
        pred = r.predicted
        if pred is None:
            continue
        predicted = pred.capacity_req_s
        measured = r.best_rate if r.state == TrialState.COMPLETE and r.slo_met else None
        error = (predicted - measured) / measured if predicted is not None and measured else None
        rows.append(
            {
                "trial": r.number,
                "state": r.state,
                "predicted_capacity_req_s": predicted,
                "measured_capacity_req_s": measured,
                "error": error,
                "demonstrated_error_before": pred.demonstrated_error,
                "extrapolated": pred.extrapolated,
                "unseen": pred.unseen,
            }
        )
    return rows


def median_error(rows: Sequence[dict[str, Any]]) -> float | None:
    errors = [abs(r["error"]) for r in rows if r["error"] is not None]
    return statistics.median(errors) if errors else None


def _unmeasured(state: str) -> str:
    """A row's note when the trial did not complete: its state."""
    return "" if state == TrialState.COMPLETE else state


def section(results: Sequence[TrialResult]) -> str:
    """The report's 'Predicted vs measured' section; empty when the model launched nothing."""
    rows = predictions(results)
    if not rows:
        return ""
    med = median_error(rows)
    pts = [(r["predicted_capacity_req_s"], r["measured_capacity_req_s"]) for r in rows if r["error"] is not None]
    chart = xy_chart(
        [("launched trials", pts, "dot"), ("predicted = measured", _diagonal(pts), "line")],
        title="Predicted vs measured capacity",
        xlabel="predicted (req/s)",
        ylabel="measured (req/s)",
        labels=[
            (x, y, f"#{r['trial']}") for (x, y), r in zip(pts, [r for r in rows if r["error"] is not None], strict=True)
        ],
    )
    head = "".join(f"<th>{c}</th>" for c in ("trial", "predicted req/s", "measured req/s", "error", "note"))
    body = "".join(
        f"<tr><td>{r['trial']}</td><td>{_num(r['predicted_capacity_req_s'])}</td>"
        f"<td>{_num(r['measured_capacity_req_s'])}</td><td>{_pct(r['error'])}</td>"
        f"<td>{escape(r['unseen'] or r['extrapolated'] or _unmeasured(r['state']))}</td></tr>"
        for r in rows
    )
    summary = f"median |error| {_pct(med)} over {sum(r['error'] is not None for r in rows)} launches"
    return (
        "<h2>Predicted vs measured (--predict)</h2>"
        f"<p>perfmodel's steady-state capacity, predicted before each launch, against the capacity the launch "
        f"measured; {summary}.</p><table><tr>{head}</tr>{body}</table>{chart}"
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
