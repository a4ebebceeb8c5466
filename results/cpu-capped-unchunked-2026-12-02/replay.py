"""The CPU grid points (capped, chunked or not) predicted before measuring and replayed level by level on the
calibration of today's CPU defaults (results/cpu-predict-certify-each-2026-12-02, trial 0 alone)."""
import json
import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
from perfmodel.capacity import replay_levels  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.search.predict_model import observed_levels, perf_model  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402
from tuner.tune_setup import trial_context  # noqa: E402

STUDY = ROOT / "results" / "cpu-predict-certify-each-2026-12-02"


def main() -> None:
    doc = json.loads((STUDY / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    ctx = trial_context(load_inputs(replace(settings, out="/tmp/capx/scratch", resume=False)), Path("/tmp/capx/l"))
    model, demand = perf_model(ctx), Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    study = open_study(f"sqlite:///{STUDY / 'study.db'}", resume=True, seed=0)
    cal = model.calibrate([next(r for r in results_of(study) if r.number == 0)], None)
    for line in (HERE / "grid.jsonl").read_text().splitlines():
        row = json.loads(line)
        r = TrialResult.from_dict(row["result"])
        (p,) = model.rank([r.config], cal)
        err = 100 * (p.capacity_req_s / r.best_rate - 1) if r.best_rate and p.capacity_req_s else float("nan")
        print(f"{row['point']}: predicted {p.capacity_req_s:.3f} req/s, measured {r.best_rate:.3f} ({err:+.1f} %)")
        for obs in observed_levels(r, demand, ctx.plan):
            lv, (out,) = obs.levels[0], replay_levels(obs, cal.costs)
            ttft = out.value("ttft", 95) or 0
            print(f"  {lv.kind:5} {lv.rate or lv.concurrency:6.2f}: measured ttft {lv.ttft_p95_ms or 0:6.0f} met "
                  f"{lv.slo_met!s:5} thr {lv.throughput_req_s:5.1f} | model ttft {ttft:6.0f} met "
                  f"{out.slo_met(demand.slos)!s:5} thr {out.throughput_req_s:5.1f} peak running {out.running_peak}")


if __name__ == "__main__":
    main()
