"""Offline, on the dev machine (nothing measured): calibrate the model on one H200 machine's vLLM defaults, with and
without fitting vLLM's TTFT split (engine queue + prefill against the rest, per level), and predict that machine's
other measurements (run e's same-machine/: trial 1 and the A30 grid's best, fresh servers, one protocol). Level by
level, the model's mean engine share and mean time outside the engine beside vLLM's /metrics.

    ../../.venv/bin/python fit_split.py > without-split.txt                  # the committed calibration
    git apply split-fit.patch && SLOTUNE_SPLIT_FIT=1 ../../.venv/bin/python fit_split.py > with-split.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STUDY = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-03-e"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from perfmodel.capacity import replay_levels  # noqa: E402
from perfmodel.rank import rank  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.search.predict_model import candidate, observed_levels  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402


def measured() -> dict[str, list[TrialResult]]:
    """same-machine/'s trials by contender (the grid's own measurement of its point with its re-measurements)."""
    out: dict[str, list[TrialResult]] = {}
    for name in ("grid", "remeasure"):
        for line in (STUDY / "same-machine" / f"{name}.jsonl").read_text().splitlines():
            row = json.loads(line)
            who = row.get("name", "grid best")
            who = "the A30 grid's best" if who.startswith("grid") else who
            out.setdefault(who, []).append(TrialResult.from_dict(row["result"]))
    return out


def level_line(lv, o, demand) -> str:
    t = o.samples("ttft")
    mean = sum(t) / len(t) if t else 0.0
    eng = o.engine_ttft_ms or 0.0
    sv = lv.server
    return (
        f"  {lv.kind:5} {lv.rate or lv.concurrency:6.1f} vLLM {'met' if lv.passed else 'MISS'}"
        f" | model: engine {eng:5.0f} outside {mean - eng:5.0f} req/s {o.throughput_req_s:5.1f}"
        f" p95 TTFT {o.value('ttft', 95) or 0:5.0f} {'met' if o.slo_met(demand.slos) else 'MISS'}"
        f" | vLLM: engine {(sv.queue_time_mean_ms or 0) + (sv.prefill_time_mean_ms or 0):5.0f}"
        f" outside {sv.outside_engine_ttft_ms or 0:5.0f} req/s {lv.throughput_req_s:5.1f}"
        f" p95 TTFT {lv.ttft_p95_ms or 0:5.0f}"
    )


def main() -> None:
    inp, ctx, model = study_model(STUDY, Path("/tmp/fit-split/scratch"))
    got = measured()
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    cal = model.calibrate([got["vLLM defaults"][0]], None)
    print(f"calibrated on this machine's defaults: {cal.costs}")
    for name, trials in got.items():
        (p,) = rank([candidate(trials[0].config, ctx)], cal, demand, workers=None, extrapolate_kv=True)
        rates = ", ".join(f"{r.best_rate:.3f}" for r in trials)
        mark = " (fp8: its KV reads scaled by bytes)" if p.extrapolated else ""
        print(f"== {name}: predicted {p.capacity_req_s:.3f}{mark}; measured {rates}")
        for obs, lv in zip(observed_levels(trials[0], demand, ctx.plan), trials[0].levels, strict=True):
            (o,) = replay_levels(obs, cal.costs)
            print(level_line(lv, o, demand))


if __name__ == "__main__":
    main()
