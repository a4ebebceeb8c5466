"""report.html: why the winning configuration won, in one self-contained page (inline SVG)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from tuner.certify.certification import Certification
from tuner.certify.headline import Headline
from tuner.report.outputs import Summary, atomic_write
from tuner.report.predict_report import section as predicted_section
from tuner.report.svg import bar_chart, pareto_front, xy_chart
from tuner.trial.level import Level
from tuner.trial.result import TrialResult, TrialState

CSS = (
    "body{font-family:sans-serif;max-width:1200px;margin:2em auto;color:#222}"
    "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px}"
    ".ok{color:#080}.bad{color:#b00}.note{background:#fff6d5;padding:.5em 1em;border-left:4px solid #e0b000}"
    ".charts{display:flex;flex-wrap:wrap;gap:16px}"
)


def _fmt(v: object) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.4g}"
    return escape(str(v))


def _headline(summary: Summary, meta: dict[str, Any], head: Headline) -> str:
    """The stated capacity and the one gain figure (tuner.certify.headline), as every other output states them."""
    slo = escape(str(meta.get("slo", "")))
    if summary.best is None:
        return (
            f'<p class="bad"><b>No configuration met {slo} at any tested load.</b> '
            "The closest configurations are listed below; no launch.sh was written.</p>"
        )
    b = summary.best
    who = "vLLM's defaults were the best configuration found" if b.is_baseline else f"Trial {b.number} wins"
    css = "ok" if head.certified_req_s is not None or head.soak_s is None else "bad"
    return (
        f'<p class="{css}"><b>{who}</b> ({slo}). <b>{escape(head.line())}</b>. In the search: capacity '
        f"{escape(summary.best_capacity_text())}. {escape(summary.baseline_note)}.</p>"
    )


def _certifications(certs: Mapping[int, Certification]) -> str:
    """Each certification's soaks: rate, length, verdict and why, with the SLO percentiles' intervals."""
    if not certs:
        return "<p>No certifying soak ran (--soak-seconds 0, or nothing met the SLOs).</p>"
    items = []
    for cert in sorted(certs.values(), key=lambda c: c.trial):
        soaks = "".join(f"<li>{escape(s.line())}</li>" for s in cert.soaks)
        items.append(f"<li>{escape(cert.line())}<ul>{soaks}</ul></li>")
    return "<ul>" + "".join(items) + "</ul>"


def _speculation(meta: dict[str, Any]) -> str:
    """The speculation rule's verdict (tuner.certify.spec_rule), or what speculating trials measured when the
    best does not speculate."""
    spec, lost = meta.get("speculation"), meta.get("speculation_lost")
    if not spec and not lost:
        return ""
    return f"<h2>Speculative decoding</h2><p>{escape(str(spec['line'] if spec else lost))}</p>"


def _spare(meta: dict[str, Any]) -> str:
    """How much slower a machine may be before the stated rate tips, by the model (tuner.certify.spare_speed)."""
    spare = meta.get("spare_speed")
    return f'<p class="note">{escape(str(spare["line"]))}</p>' if spare else ""


def _sample(meta: dict[str, Any]) -> str:
    """The winner's answer to one question (tuner.report.sample_answer), when it was asked."""
    sample = meta.get("sample_answer")
    if not sample:
        return ""
    return (
        f"<h2>Sample answer of the winner (trial {sample['trial']})</h2>"
        f"<p><b>Q:</b> {escape(sample['question'])}<br><b>A:</b> {escape(sample['answer'])}</p>"
    )


def _trials_table(results: list[TrialResult]) -> str:
    if not results:
        return "<p>No trials yet.</p>"
    cols = list(results[0].csv_row().keys())
    head = "".join(f"<th>{escape(c)}</th>" for c in cols)
    rows = []
    for r in sorted(results, key=lambda r: r.number):
        row = r.csv_row()
        cls = "ok" if r.slo_met else ("bad" if r.state != TrialState.COMPLETE else "")
        rows.append(f'<tr class="{cls}">' + "".join(f"<td>{_fmt(row[c])}</td>" for c in cols) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _charts(results: list[TrialResult], summary: Summary, importances: dict[str, float]) -> str:
    done = [r for r in results if r.state == TrialState.COMPLETE and r.ttft_p95_ms is not None]
    charts = [_pareto_chart(done), *_level_charts(done), _importance_chart(importances)]
    b, base = summary.best, summary.baseline
    if b is not None and base is not None:
        charts.append(_defaults_vs_best(base, b))
    return '<div class="charts">' + "".join(f"<div>{c}</div>" for c in charts) + "</div>"


def _pareto_chart(done: list[TrialResult]) -> str:
    pts = [(r.ttft_p95_ms or 0.0, r.goodput_req_s) for r in done]
    front = pareto_front([p for p, r in zip(pts, done, strict=True) if r.slo_met])
    return xy_chart(
        [("trials", pts, "dot"), ("Pareto front (SLO met)", front, "line")],
        title="Goodput vs p95 TTFT",
        xlabel="p95 TTFT at best load (ms)",
        ylabel="goodput (req/s)",
        labels=[(x, y, f"#{r.number}") for (x, y), r in zip(pts, done, strict=True)],
    )


def _level_charts(done: list[TrialResult]) -> list[str]:
    """p95 TTFT and TPOT against the request rate of each load level, for the three best configurations."""
    top = sorted((r for r in done if r.slo_met), key=lambda r: -r.goodput_req_s)[:3]
    charts = []
    p95s: tuple[tuple[Callable[[Level], float | None], str], ...] = (
        (lambda lv: lv.ttft_p95_ms, "p95 TTFT (ms)"),
        (lambda lv: lv.tpot_p95_ms, "p95 TPOT (ms)"),
    )
    for p95, name in p95s:
        series = [
            (
                f"trial {r.number}",
                [(lv.rate, v) for lv in r.levels if lv.rate is not None and (v := p95(lv)) is not None],
                "line",
            )
            for r in top
        ]
        charts.append(
            xy_chart(series, title=f"{name} vs request rate (top configs)", xlabel="Poisson rate (req/s)", ylabel=name)
        )
    return charts


def _importance_chart(importances: dict[str, float]) -> str:
    if not importances:
        return (
            "<p><em>Parameter importance: not estimated yet (needs at least 4 completed trials "
            "with varied parameters).</em></p>"
        )
    names = list(importances)
    return bar_chart(
        names,
        [("importance", [importances[n] for n in names])],
        title="Parameter importance (PED-ANOVA; rough with few trials)",
    )


def _defaults_vs_best(base: TrialResult, b: TrialResult) -> str:
    return bar_chart(
        ["goodput (req/s)", "p95 TTFT (ms)", "p95 TPOT (ms)"],
        [
            (f"baseline #{base.number}", [base.goodput_req_s, base.ttft_p95_ms, base.tpot_p95_ms]),
            (f"best #{b.number}", [b.goodput_req_s, b.ttft_p95_ms, b.tpot_p95_ms]),
        ],
        title="vLLM defaults vs best",
    )


def render(
    results: list[TrialResult],
    summary: Summary,
    meta: dict[str, Any],
    importances: dict[str, float] | None = None,
    *,
    headline: Headline,
    certifications: Mapping[int, Certification] | None = None,
    cost: Sequence[str] = (),
) -> str:
    notes = "".join(f'<p class="note">{escape(n)}</p>' for n in meta.get("notes", []))
    settings = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{_fmt(v)}</td></tr>" for k, v in (meta.get("settings") or {}).items()
    )
    versions = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{_fmt(v)}</td></tr>" for k, v in (meta.get("versions") or {}).items()
    )
    best_cfg = ""
    if summary.best is not None:
        best_cfg = "".join(
            f"<tr><th>{escape(k)}</th><td>{_fmt(v)}</td></tr>"
            for k, v in summary.best.config.to_dict().items()
            if v not in (None, [], {})
        )
        best = summary.best
        if best.config.gpus > 1:  # a parallel layout: its size and goodput per GPU, so layouts compare
            per = f"{best.goodput_req_s / best.config.gpus:.3f} req/s"
            best_cfg += (
                f"<tr><th>GPUs</th><td>{best.config.gpus}</td></tr><tr><th>goodput per GPU</th><td>{per}</td></tr>"
            )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>slotune report</title>"
        f"<style>{CSS}</style></head><body><h1>slotune report</h1>{_headline(summary, meta, headline)}{notes}"
        f"<h2>Certification</h2>{_certifications(certifications or {})}{_spare(meta)}{_speculation(meta)}"
        f"{_sample(meta)}"
        f"<h2>Cost</h2><pre>{escape(chr(10).join(cost)) or 'not stated'}</pre>"
        f"<h2>Winning configuration</h2><table>{best_cfg or '<tr><td>none</td></tr>'}</table>"
        f"<h2>Charts</h2>{_charts(results, summary, importances or {})}{predicted_section(results, certifications)}"
        f"<h2>All trials</h2>{_trials_table(results)}"
        f"<h2>Settings</h2><table>{settings}</table><h2>Versions</h2><table>{versions}</table>"
        "</body></html>"
    )


def write_report(
    path: Path,
    results: list[TrialResult],
    summary: Summary,
    meta: dict[str, Any],
    importances: dict[str, float] | None = None,
    *,
    headline: Headline,
    certifications: Mapping[int, Certification] | None = None,
    cost: Sequence[str] = (),
) -> None:
    atomic_write(
        path,
        render(results, summary, meta, importances, headline=headline, certifications=certifications, cost=cost),
    )
