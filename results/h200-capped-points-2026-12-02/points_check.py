"""Offline, on the dev machine (no GPU): the H200 grid points of this folder (grid.jsonl, every level kept, vLLM's
/metrics per level included) against the model calibrated on run b's defaults alone at the H200's speed, as
../h200-llama-3-8b-a30-predict-2026-12-02-b-each/offline_check.py fits it. Per point: the steady-state prediction
against the search's estimate; per level: the measured p95 TTFT/TPOT and SLO verdict, the model's, the peak of
running sequences, preemptions and completed req/s, and the means vLLM's /metrics timed at the engine (TTFT from
the request's arrival, inter-token latency), each beside the model's.

    cd results/h200-capped-points-2026-12-02 && ../../.venv/bin/python points_check.py > points-check.txt
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
B_EACH = HERE.parent / "h200-llama-3-8b-a30-predict-2026-12-02-b-each"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(B_EACH))

import offline_check as oc  # noqa: E402
from perfmodel.capacity import replay_levels  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402
from tuner.search.predict_model import observed_levels  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import trial_context  # noqa: E402


def level_lines(result: TrialResult, cal, demand, plan) -> list[str]:  # noqa: ANN001
    lines = []
    for obs, raw in zip(observed_levels(result, demand, plan), result.levels, strict=True):
        lv = obs.levels[0]
        (out,) = replay_levels(obs, cal.costs)
        s = raw.server
        lines.append(
            f"  {lv.kind:5} {lv.rate or lv.concurrency:7.2f}: measured ttft {lv.ttft_p95_ms or 0:6.0f} tpot "
            f"{lv.tpot_p95_ms or 0:5.1f} passed {lv.slo_met!s:5} thr {lv.throughput_req_s:5.1f} | model ttft "
            f"{out.value('ttft', 95) or 0:6.0f} tpot {out.value('tpot', 95) or 0:5.1f} met "
            f"{out.slo_met(demand.slos)!s:5} thr {out.throughput_req_s:5.1f} | running peak {s.requests_running_peak} "
            f"vs {out.running_peak}, preempt {s.preemptions} vs {out.preemptions}, kv peak {s.kv_cache_usage_peak}, "
            f"waiting peak {s.requests_waiting_peak}, queue mean {_ms(s.queue_time_mean_ms)}; at the engine (vLLM vs "
            f"model): ttft mean {_ms(s.server_ttft_mean_ms)} vs {_ms(out.engine_ttft_ms)}, itl mean "
            f"{_ms(s.server_itl_mean_ms)} vs {_ms(out.engine_itl_ms)}"
        )
    return lines


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f} ms"


def main() -> None:
    model, inp = oc.model_for("h200")
    ctx = trial_context(inp, Path("/tmp/points-check/logs"))
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    study = open_study(f"sqlite:///{B_EACH / 'study.db'}", resume=True, seed=0)
    defaults = next(r for r in results_of(study) if r.number == 0)
    cal = model.calibrate([defaults], None)
    print(f"calibrated on run b's trial 0 (defaults) alone, at the H200's speed: {cal.costs}")
    for line in (HERE / "grid.jsonl").read_text().splitlines():
        row = json.loads(line)
        result = TrialResult.from_dict(row["result"])
        (p,) = model.rank([result.config], cal)
        est = row["capacity_req_s"]
        err = f"{(p.capacity_req_s / est - 1) * 100:+.1f} %" if p.capacity_req_s and est else "-"
        print(f"\n{row['point']}\n  predicted (steady state) {p.capacity_req_s or 0:.3f} req/s; search estimate "
              f"{est or 0:.3f} ({err}); {p.unseen or ''}")
        print("\n".join(level_lines(result, cal, demand, ctx.plan)))


if __name__ == "__main__":
    main()
