"""Offline, on the dev machine (nothing measured): run e's trials 0 and 1, level by level, replayed by the model under
calibration A (the defaults only, as the search began) and A' (the study's stored refit on the defaults and trial 1),
beside vLLM's /metrics over each level (study.db's Level.server): preemptions, running peak, mean inter-token latency,
mean TTFT (vLLM's from a request's arrival in the API server; the model's from the engine's), throughput, p95 TTFT,
and whether the level passed (vLLM: its SLOs and steadiness, as the search judged it; the model: its SLOs).

    ../../.venv/bin/python levels_vs_vllm.py > levels-vs-vllm.txt
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from perfmodel.capacity import replay_levels  # noqa: E402
from perfmodel.rank import Calibration  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.search.predict_model import observed_levels  # noqa: E402
from tuner.search.predict_search import CALIBRATION_ATTR  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402

HEADER = (
    "  level         passed      | model: preempt running ITL ms TTFT ms req/s p95TTFT"
    " | vLLM: preempt running ITL ms TTFT ms req/s p95TTFT"
)


def row(lv: Any, o: Any, demand: Demand) -> str:
    sv = lv.server
    what = f"{lv.kind:5} {lv.rate or lv.concurrency:6.1f}"
    passed = f"{'yes' if lv.passed else 'no':>3}/{'yes' if o.slo_met(demand.slos) else 'no':<3}"
    model = (
        f"{o.preemptions:7d} {o.running_peak:7d} {o.engine_itl_ms or 0:6.1f} {o.engine_ttft_ms or 0:7.0f}"
        f" {o.throughput_req_s:5.1f} {o.value('ttft', 95) or 0:7.0f}"
    )
    vllm = (
        f"{sv.preemptions or 0:7d} {sv.requests_running_peak or 0:7.0f} {sv.server_itl_mean_ms or 0:6.1f}"
        f" {sv.server_ttft_mean_ms or 0:7.0f} {lv.throughput_req_s:5.1f} {lv.ttft_p95_ms or 0:7.0f}"
    )
    return f"  {what} {passed:11} |        {model} |       {vllm}"


def main() -> None:
    inp, ctx, model = study_model(HERE, Path("/tmp/levels-vs-vllm/scratch"))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    calibrations = (
        ("A: the defaults only", model.calibrate([results[0]], None)),
        ("A': the stored refit (defaults and trial 1)", Calibration.from_dict(study.user_attrs[CALIBRATION_ATTR])),
    )
    for name, cal in calibrations:
        print(f"== {name}: {cal.costs}")
        for number in (0, 1):
            print(f" trial {number} (passed: vLLM/model)")
            print(HEADER)
            levels = observed_levels(results[number], demand, ctx.plan)
            for observed, lv in zip(levels, results[number].levels, strict=True):
                (outcome,) = replay_levels(observed, cal.costs)
                print(row(lv, outcome, demand))


if __name__ == "__main__":
    main()
