import json, os, sys, time
from dataclasses import replace
from pathlib import Path
ROOT = Path(os.environ.get("ROOT", Path(__file__).resolve().parents[2]))  # a checkout with experiments.patch applied
B = ROOT / "results/h200-llama-3-8b-a30-predict-2026-12-02-b-each"
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(B)); sys.path.insert(0, str(ROOT / "bench"))
import offline_check as oc
from launch.config import ServeConfig
from perfmodel.rank import rank
from perfmodel.traffic import Demand
from tuner.search.predict_model import candidate
from tuner.search.study import open_study, results_of
from tuner.tune_setup import base_config, trial_context

def main():
    model, inp = oc.model_for("h200")
    ctx = trial_context(inp, Path("/tmp/form-check/logs"))
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    study = open_study(f"sqlite:///{B / 'study.db'}", resume=True, seed=0)
    res = {r.number: r for r in results_of(study)}
    t0 = time.monotonic()
    cal = model.calibrate([res[0]], None)
    print(f"form {os.environ.get('PM_FORM','A')}: calibrated in {time.monotonic()-t0:.0f} s: {cal.costs}", flush=True)
    first = json.loads((B.parent / "h200-llama-3-8b-a30-predict" / "best.json").read_text())
    base = base_config(inp)
    pts = [("defaults (in-sample)", res[0].config, 57.239), ("b trial 1 fp8 128", res[1].config, 52.208),
           ("b trial 2 fp8 128", res[2].config, 52.631),
           ("point-63 auto 128 unchunked", replace(base, gpu_memory_utilization=0.92, max_model_len=5120, max_num_seqs=128,
              max_num_batched_tokens=5120, enable_chunked_prefill=False, enable_prefix_caching=True, kv_cache_dtype="auto"), 46.960),
           ("first run trial 1", ServeConfig.from_dict(first["best"]["config"]), 57.999),
           ("grid best 512 fp8", replace(base, max_num_seqs=512, kv_cache_dtype="fp8"), 64.27)]
    from tuner.trial.result import TrialResult  # this folder's four points, measured on another machine
    for line in (Path(__file__).resolve().parent / "grid.jsonl").read_text().splitlines():
        row = json.loads(line)
        pt = row["point"]
        pts.append((f"point {pt['max_num_seqs']} chunked={pt['enable_chunked_prefill']}",
                    TrialResult.from_dict(row["result"]).config, row["capacity_req_s"]))
    for label, cfg, meas in pts:
        c = candidate(cfg, ctx)
        (p,) = rank([c], cal, demand, extrapolate_kv=True, workers=1)
        print(f"  {label:30} predicted {p.capacity_req_s or 0:7.3f} measured {meas:7.3f} ({(p.capacity_req_s or 0)/meas*100-100:+.1f} %)", flush=True)

if __name__ == "__main__":
    main()
