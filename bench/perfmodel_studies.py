"""The committed studies ``bench/perfmodel_validation.py`` predicts, and how each was measured.

Each study's plan is the capacity search its trials ran (``perfmodel.protocol.ShortLevelSearch``), read off
the tuner at the time: the GPU plan (probe of 256 requests at 128 at once, levels of 8 s and at least 64
requests, 3 halvings) or the CPU plan (24 at 8, 15-s levels, at least 12, 2 halvings); the longdoc studies
ran after 9ffeeb7 (probe fitted to the running capacity, levels at most 4 × their duration).
``tests/perfmodel/test_committed_studies.py`` checks every plan against the recorded levels: with the
recorded outcomes as the oracle, the search asks for exactly the recorded rates, and the best level's
request count and token totals match. A trial's load seed is found from its best level's exact
prompt/output token totals (merged studies renumbered some trials).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from loadtest.workload import Workload
from perfmodel.protocol import ShortLevelSearch
from perfmodel.traffic import requests_of
from tuner.trial.result import COMPLETE, TrialResult

ROOT = Path(__file__).resolve().parents[1]
GPU_8S = ShortLevelSearch(
    probe_requests=256,
    probe_concurrency=128,
    level_duration_s=8.0,
    min_level_requests=64,
    bisection_steps=3,
    max_level_stretch=None,
    fit_probe=False,
)
GPU_8S_FITTED = ShortLevelSearch(
    probe_requests=256, probe_concurrency=128, level_duration_s=8.0, min_level_requests=64, bisection_steps=3
)
CPU_15S = ShortLevelSearch(
    probe_requests=24,
    probe_concurrency=8,
    level_duration_s=15.0,
    min_level_requests=12,
    bisection_steps=2,
    max_level_stretch=None,
    fit_probe=False,
)


@dataclass(frozen=True)
class Study:
    folder: str
    machine: str  # "H200" | "CPU"
    gpu: str  # the profile whose speed the trials ran at (an emulated A30 ran at the H200's)
    shape: str  # tuner.synthetic shape of the model (the studies served synthetic models)
    workload: str
    slo: str
    plan: ShortLevelSearch
    note: str = ""


STUDIES = (
    Study("h200-llama-3-8b-h200", "H200", "h200", "llama-3-8b", "chat", "ttft_p95=2s,tpot_p95=60ms", GPU_8S),
    Study(
        "h200-llama-3-8b-a30",
        "H200",
        "h200",
        "llama-3-8b",
        "chat",
        "ttft_p95=2s,tpot_p95=60ms",
        GPU_8S,
        "A30 memory emulated on the H200",
    ),
    Study(
        "h200-llama-3-8b-a30-w4a16",
        "H200",
        "h200",
        "llama-3-8b",
        "chat",
        "ttft_p95=2s,tpot_p95=60ms",
        GPU_8S,
        "A30 memory emulated; the 4-bit variant a knob",
    ),
    Study(
        "h200-llama-3-8b-a30-w4a16-longdoc",
        "H200",
        "h200",
        "llama-3-8b",
        "longdoc",
        "ttft_p95=2s,tpot_p95=60ms",
        GPU_8S_FITTED,
        "A30 memory emulated; ~7.7k-token prompts",
    ),
    Study("cpu-search-vs-grid-niced", "CPU", "cpu", "llama-tiny", "chat", "ttft_p95=2s", CPU_15S),
    Study("cpu-search-vs-grid-niced-2", "CPU", "cpu", "llama-tiny", "chat", "ttft_p95=2s", CPU_15S),
)


def trial_results(study: Study) -> list[TrialResult]:
    """Every finished trial of the study with levels and a best (or closest) report, by number."""
    db = sqlite3.connect(f"file:{ROOT / 'results' / study.folder / 'study.db'}?mode=ro", uri=True)  # never written
    try:
        rows = db.execute("select value_json from trial_user_attributes where key='result'").fetchall()
    finally:
        db.close()
    out = []
    for (raw,) in rows:
        d = json.loads(raw)
        r = TrialResult.from_dict(json.loads(d) if isinstance(d, str) else d)
        if r.state == COMPLETE and r.levels and r.report:
            out.append(r)
    return sorted(out, key=lambda r: r.number)


def load_seed(workload: Workload, result: TrialResult, limit: int = 256) -> int:
    """The seed whose first requests have exactly the best level's prompt and output token totals."""
    rep = result.report
    if rep is None:
        raise ValueError(f"trial {result.number} has no report to match")
    n = rep.requests_ok + rep.requests_failed
    for seed in range(limit):
        reqs = requests_of(workload, seed, n)
        if (
            sum(r.prompt_tokens for r in reqs) == rep.input_tokens
            and sum(r.output_tokens for r in reqs) == rep.output_tokens
        ):
            return seed
    raise ValueError(f"trial {result.number}: no seed below {limit} gives its recorded token totals")
