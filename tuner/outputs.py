"""The study folder's files: trials.csv, best.json, launch.sh, report.html — rewritten from the
study after every trial (atomically), so an interrupted tune loses nothing it finished.

Contract (DESIGN.md): trials.csv has the contract columns; best.json records config, metrics,
versions, GPU and model hash; launch.sh exists only for a configuration that met every SLO.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.trial_result import COMPLETE, TrialResult


@dataclass(frozen=True)
class Summary:
    """What the study found so far."""

    best: TrialResult | None
    baseline: TrialResult | None
    closest: tuple[TrialResult, ...]  # when nothing met the SLO: nearest misses first
    top: tuple[TrialResult, ...]  # the best configs that met the SLO, best first (warm starts)
    gain_over_baseline: float | None  # best goodput / baseline goodput − 1
    baseline_note: str


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def summarize(results: list[TrialResult]) -> Summary:
    met = [r for r in results if r.state == COMPLETE and r.slo_met]
    best = max(met, key=lambda r: (r.goodput_req_s, -(r.metric("ttft_ms.p95") or 0.0)), default=None)
    baseline = next((r for r in results if r.is_baseline), None)
    closest = tuple(sorted((r for r in results if r.state == COMPLETE and not r.slo_met),
                           key=lambda r: r.constraint)[:3]) if best is None else ()
    gain, note = None, "no baseline trial yet"
    if baseline is not None:
        if baseline.state != COMPLETE:
            note = f"vLLM's defaults did not run: {baseline.state} ({baseline.fail_reason})"
        elif not baseline.slo_met:
            note = "vLLM's defaults met the SLO at no tested load (goodput 0)"
        elif best is not None:
            gain = best.goodput_req_s / baseline.goodput_req_s - 1.0 if baseline.goodput_req_s > 0 else None
            note = f"vLLM's defaults: {baseline.goodput_req_s:.3f} req/s goodput"
    top = tuple(sorted(met, key=lambda r: -r.goodput_req_s)[:3])
    return Summary(best, baseline, closest, top, gain, note)


def trials_frame(results: list[TrialResult]) -> pd.DataFrame:
    rows = [r.csv_row() for r in sorted(results, key=lambda r: r.number)]
    return pd.DataFrame(rows).convert_dtypes()  # integer knobs stay integers next to empty (default) cells


def best_document(summary: Summary, meta: dict[str, Any]) -> dict[str, Any]:
    def brief(r: TrialResult | None) -> dict[str, Any] | None:
        if r is None:
            return None
        return {"trial": r.number, "state": r.state, "slo_met": r.slo_met, "goodput_req_s": r.goodput_req_s,
                "best_rate_req_s": r.best_rate, "config": r.config.to_dict(),
                "launched": r.launched.to_dict() if r.launched else None, "metrics": r.report,
                "kv_tokens_predicted": (r.budget or {}).get("kv_tokens"),
                "kv_tokens_reported": (r.readback or {}).get("kv_cache_size_tokens"),
                "fail_reason": r.fail_reason}

    return {
        **meta,
        "slo_met": summary.best is not None,
        "best": brief(summary.best),
        "baseline": brief(summary.baseline),
        "gain_over_baseline": summary.gain_over_baseline,
        "baseline_note": summary.baseline_note,
        "closest": [brief(r) for r in summary.closest],
        "top": [brief(r) for r in summary.top],
    }


def write_outputs(out: Path, results: list[TrialResult], meta: dict[str, Any],
                  write_script: Any, write_report: Any) -> Summary:
    """Write every output file; ``write_script(path, best)`` and ``write_report(path, results, summary,
    meta)`` are injected (launch.sh needs the probed vLLM; report.html is its own module)."""
    out.mkdir(parents=True, exist_ok=True)
    summary = summarize(results)
    frame = trials_frame(results)
    tmp = out / "trials.csv.tmp"
    frame.to_csv(tmp, index=False)
    os.replace(tmp, out / "trials.csv")
    atomic_write(out / "best.json", json.dumps(best_document(summary, meta), indent=2, default=str))
    script = out / "launch.sh"
    if summary.best is not None:
        write_script(script, summary.best)
    elif script.exists():  # never leave a launch.sh that claims an SLO no config met
        script.unlink()
    write_report(out / "report.html", results, summary, meta)
    return summary
