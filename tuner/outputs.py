"""The study folder's files: trials.csv, best.json, launch.sh, report.html — rewritten from the
study after every trial (atomically), so an interrupted tune loses nothing it finished.

Contract (DESIGN.md): trials.csv has the contract columns; best.json records config, metrics,
versions, GPU and model hash; launch.sh exists only for a configuration that met every SLO.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from launch.config import ServeConfig
from tuner.certify import Certification
from tuner.company import company
from tuner.export.cost import cost_document, cost_lines, gpu_price
from tuner.headline import Headline, headline
from tuner.layout import layout_columns
from tuner.spec_rule import apply_rule
from tuner.trial_result import TrialResult, TrialState

if TYPE_CHECKING:
    from tuner.confirm import Confirmation


@dataclass(frozen=True)
class Summary:
    """What the study found so far.

    A configuration the sampler proposed more than once was measured more than once; it is judged on the
    mean of its measurements (0 where one met the SLO at no load), not on its luckiest one: on the 2-core
    CPU machine repeats of one configuration differed by up to 22 %. ``best`` is then that configuration's
    measurement nearest the mean."""

    best: TrialResult | None
    baseline: TrialResult | None
    closest: tuple[TrialResult, ...]  # when nothing met the SLO: nearest misses first
    top: tuple[TrialResult, ...]  # the best configs that met the SLO, one trial each, best first (warm starts)
    gain_over_baseline: float | None  # mean goodput of the best config / of vLLM's defaults − 1
    baseline_note: str
    best_goodputs: tuple[float, ...] = ()  # every measurement of the best's configuration, in trial order
    baseline_goodputs: tuple[float, ...] = ()
    overruled: TrialResult | None = None  # the search's best, when vLLM's defaults certified a higher rate

    @property
    def best_goodput(self) -> float | None:
        return _mean(self.best_goodputs) if self.best_goodputs else None

    def best_goodput_text(self) -> str:
        """'43.879 req/s', or with repeats '39.938 req/s (mean of 2 measurements: 43.879, 35.997)'."""
        if self.best_goodput is None:
            return "n/a"
        text = f"{self.best_goodput:.3f} req/s"
        if len(self.best_goodputs) > 1:
            text += (
                f" (mean of {len(self.best_goodputs)} measurements: "
                + ", ".join(f"{g:.3f}" for g in self.best_goodputs)
                + ")"
            )
        return text


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _mean(values: tuple[float, ...]) -> float:
    return sum(values) / len(values)


def _goodput(r: TrialResult) -> float:
    return r.goodput_req_s if r.slo_met else 0.0


def by_config(results: list[TrialResult]) -> dict[ServeConfig, list[TrialResult]]:
    """Completed trials grouped by configuration, in trial order."""
    groups: dict[ServeConfig, list[TrialResult]] = {}
    for r in sorted(results, key=lambda r: r.number):
        if r.state == TrialState.COMPLETE:
            groups.setdefault(r.config, []).append(r)
    return groups


def summarize(results: list[TrialResult]) -> Summary:
    groups = by_config(results)
    ranked = []  # (mean goodput, the measurement nearest it, every measurement) per config that met the SLO
    for trials in groups.values():
        met = [r for r in trials if r.slo_met]
        if met:
            goodputs = tuple(_goodput(r) for r in trials)
            mean = _mean(goodputs)
            nearest = min(met, key=lambda r: (abs(r.goodput_req_s - mean), -r.number))
            ranked.append((mean, nearest, goodputs))
    ranked.sort(key=lambda x: (-x[0], x[1].metric("ttft_ms.p95") or 0.0))
    best_mean, best, best_goodputs = ranked[0] if ranked else (0.0, None, ())
    baseline = next((r for r in results if r.is_baseline), None)
    baseline_goodputs = tuple(_goodput(r) for r in groups.get(baseline.config, [])) if baseline else ()
    unmet = (r for r in results if r.state == TrialState.COMPLETE and not r.slo_met)
    closest = tuple(sorted(unmet, key=lambda r: r.constraint)[:3]) if best is None else ()
    gain, note = None, "no baseline trial yet"
    if baseline is not None:
        base_mean = _mean(baseline_goodputs) if baseline_goodputs else 0.0
        if baseline.state != TrialState.COMPLETE:
            note = f"vLLM's defaults did not run: {baseline.state} ({baseline.fail_reason})"
        elif base_mean <= 0:
            note = "vLLM's defaults met the SLO at no tested load (goodput 0)"
        elif best is not None:
            gain = best_mean / base_mean - 1.0
            note = f"vLLM's defaults: {base_mean:.3f} req/s goodput"
            if len(baseline_goodputs) > 1:
                note += f" (mean of {len(baseline_goodputs)} measurements)"
    top = tuple(r for _mean, r, _g in ranked[:3])
    return Summary(best, baseline, closest, top, gain, note, best_goodputs, baseline_goodputs)


def certified_summary(summary: Summary, certifications: Mapping[int, Certification]) -> Summary:
    """The summary with the certifications' verdict: when vLLM's defaults certified a higher rate than the
    search's best (or the best certified none), the defaults are the best and launch.sh runs them; the
    search's winner is kept as ``overruled``."""
    best, base = summary.best, summary.baseline
    if best is None or base is None or best.number == base.number:
        return summary
    mine, theirs = certifications.get(best.number), certifications.get(base.number)
    if mine is None or theirs is None or theirs.certified_rate is None:
        return summary
    if mine.certified_rate is not None and mine.certified_rate >= theirs.certified_rate:
        return summary
    top = (base, *(t for t in summary.top if t.number != base.number))
    return replace(
        summary, best=base, best_goodputs=summary.baseline_goodputs, gain_over_baseline=None, top=top, overruled=best
    )


def trials_frame(
    results: list[TrialResult],
    timelines: Mapping[int, Mapping[str, Any]] | None = None,
    certifications: Mapping[int, Certification] | None = None,
) -> pd.DataFrame:
    """trials.csv: each trial's row (TrialResult.csv_row), its certified rate where a soak certified it
    (tuner.certify), and what else ran on the host while it was measured (tuner.company; empty where the
    trial was not measured or kept no timeline). ``timelines``: every trial's, also of those that are not
    results (tuner.study.timelines_of); default: the results'."""
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
) -> dict[str, Any]:
    """best.json: the metadata, the headline (tuner.headline: the one stated capacity and gain), the best,
    the defaults and the closest misses, and every certification's soaks."""
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
            "metrics": r.report,
            "kv_tokens_predicted": (r.budget or {}).get("kv_tokens"),
            "kv_tokens_reported": (r.readback or {}).get("kv_cache_size_tokens"),
            "fail_reason": r.fail_reason,
            "certified_rate_req_s": certs[r.number].certified_rate if r.number in certs else None,
        }

    return {
        **meta,
        "slo_met": summary.best is not None,
        # the stated capacity (certified, else the search's estimate, said which) and the one gain figure
        "certified_rate_req_s": headline.certified_req_s,
        "headline": headline.to_dict(),
        "best": brief(summary.best),
        # every measurement of the best's configuration (more than one where the search proposed it again)
        "best_goodputs_req_s": list(summary.best_goodputs),
        "best_goodput_mean_req_s": summary.best_goodput,
        "baseline": brief(summary.baseline),
        "gain_over_baseline": headline.gain,
        "gain_basis": headline.basis,
        "baseline_note": summary.baseline_note,
        "overruled": brief(summary.overruled),
        "closest": [brief(r) for r in summary.closest],
        "top": [brief(r) for r in summary.top],
        "certifications": [c.to_dict() for _, c in sorted(certs.items())],
    }


def with_predictions(document: dict[str, Any], results: list[TrialResult]) -> dict[str, Any]:
    """best.json with perfmodel's prediction against the measurement of each trial it launched (--predict)."""
    from tuner.predict_report import median_error, predictions

    rows = predictions(results)
    if not rows:
        return document
    return {**document, "predictions": rows, "prediction_median_abs_error": median_error(rows)}


def write_outputs(
    out: Path,
    results: list[TrialResult],
    meta: dict[str, Any],
    write_script: Any,
    write_report: Any,
    timelines: Mapping[int, Mapping[str, Any]] | None = None,
    certifications: Mapping[int, Certification] | None = None,
    confirmation: Confirmation | None = None,
) -> Summary:
    """Write every output file; ``write_script(path, best, headline)`` and ``write_report(path, results,
    summary, meta, headline=)`` are injected (launch.sh needs the probed vLLM; report.html is its own
    module). Every file states the one headline (tuner.headline) of the results, certifications and
    the current --confirm runs."""
    out.mkdir(parents=True, exist_ok=True)
    summary, spec = apply_rule(
        certified_summary(summarize(results), certifications or {}), results, certifications or {}
    )
    if spec is not None:  # the speculation rule's verdict (tuner.spec_rule), in best.json and the report
        meta = {**meta, "speculation": spec.to_dict()}
    head = headline(summary, certifications or {}, confirmation)
    frame = trials_frame(results, timelines, certifications)
    tmp = out / "trials.csv.tmp"
    frame.to_csv(tmp, index=False)
    os.replace(tmp, out / "trials.csv")
    document = with_predictions(best_document(summary, meta, head, certifications), results)
    price = gpu_price(document)
    document["cost"] = cost_document(document, *price)  # $ per million output tokens at the stated rates
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
        cost=cost_lines(document, *price),
    )
    return summary
