"""The export tests' data: the committed studies under results/, a tiny fabricated one, pinned help texts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from loadtest.summary import ReportSummary
from tuner.certify.certification import Certification, Soak
from tuner.document.study import StudyDocument

ROOT = Path(__file__).resolve().parents[2]
HELP = {v: ROOT / "tests" / "launch" / "data" / f"help-options-{v}.txt" for v in ("0.26.0", "0.32.0", "0.33.0")}
DATA = Path(__file__).parent / "data"
FORMATS = ("compose", "kubernetes", "kserve", "helm")


def committed_gpu_studies() -> list[Path]:
    """Every committed study with a winner measured on a GPU (vLLM 0.26.0 on the H200)."""
    out = []
    for best in sorted((ROOT / "results").glob("*/best.json")):
        doc = json.loads(best.read_text())
        if doc.get("slo_met") and (doc.get("gpu") or {}).get("profile") != "cpu":
            out.append(best.parent.relative_to(ROOT))
    return out


def _trial(number: int, config: dict[str, Any], rate: float, tok_s: float) -> dict[str, Any]:
    full = {"model": "/models/tiny", "served_model_name": "tiny", "seed": 0, "extra_args": [], "env": {}, **config}
    return {
        "trial": number,
        "state": "COMPLETE",
        "slo_met": True,
        "goodput_req_s": rate * 0.9,
        "best_rate_req_s": rate,
        "config": full,
        "launched": full,
        "metrics": {"throughput_tok_s": tok_s, "throughput_req_s": rate * 0.9},
    }


def tiny_best(config: dict[str, Any] | None = None, **top: Any) -> dict[str, Any]:
    """A best.json of a fabricated 2-trial GPU study (h200, vLLM 0.26.0): winner trial 1, defaults trial 0."""
    winner = {"max_num_seqs": 64, "enable_prefix_caching": True, "gpu_memory_utilization": 0.9, **(config or {})}
    return {
        "created": "2026-12-01T00:00:00+00:00",
        "slo": "ttft_p95=2s",
        "workload": "chat",
        "gpu": {"profile": "h200", "emulated_on": None, "emulation": None},
        "model": {"path": "/models/tiny", "fingerprint": "f" * 64},
        "vllm": {"version": "0.26.0", "python": "/nonexistent/python"},
        "notes": [],
        "slo_met": True,
        "best": _trial(1, winner, rate=10.0, tok_s=2000.0),
        "baseline": _trial(0, {}, rate=5.0, tok_s=1000.0),
        **top,
    }


def certify(doc: dict[str, Any], who: str, rate: float, tok_s: float | None) -> dict[str, Any]:
    """``doc`` with ``who`` ("best" or "baseline") certified at ``rate``, as tuner.report.outputs writes it: the rate
    on the trial, the soaks in ``certifications`` (``tok_s`` None: a held soak without its throughput)."""
    trial = doc[who]
    trial["certified_rate_req_s"] = rate
    if who == "best":
        doc["certified_rate_req_s"] = rate
    soak = Soak(rate, 120.0, True, (), rate, tok_s, rate, {}, {}, ReportSummary())  # tok_s None: no throughput
    doc.setdefault("certifications", []).append(Certification(trial["trial"], rate, 120.0, (soak,)).to_dict())
    return doc


def typed(doc: dict[str, Any]) -> StudyDocument:
    """``doc`` as the readers of best.json take it."""
    return StudyDocument.from_dict(doc)
