"""Phase 2 (offline): the model calibrated on this sitting's defaults predicts their steady-state capacity with the
KV cache pinned at several sizes (the rest unchanged)."""
import json, sys
from dataclasses import replace
from pathlib import Path
ROOT = Path("/work/main"); sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(ROOT / "scripts/gpu"))
from offline_model import study_model
from perfmodel.capacity import steady_capacity, steady_outcome, SteadyState
from perfmodel.rank import Calibration
from perfmodel.traffic import Demand
from tuner.search.predict_model import candidate
from tuner.search.study import open_study, results_of

def main():
    study_dir = Path(sys.argv[1]); sizes = [int(x) for x in sys.argv[2].split(",")]
    inp, ctx, model = study_model(study_dir, Path("/tmp/kvexp/scratch"))
    study = open_study(f"sqlite:///{study_dir/'study.db'}", resume=True, seed=0)
    base = min(results_of(study), key=lambda r: r.number)
    cal = model.calibrate([base], None)
    Path("/tmp/kvexp/calibration.json").write_text(json.dumps(cal.to_dict(), indent=1))
    print("calibrated on", cal.trials, "costs", cal.costs, flush=True)
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    eng = candidate(base.config, ctx).engine
    print("defaults' engine", eng, "measured", base.best_rate, flush=True)
    out = {}
    for tokens in [None, *sizes]:
        e = eng if tokens is None else replace(eng, num_blocks=tokens // eng.block_size)
        for how in (SteadyState(), SteadyState(duration_s=120.0, settle_s=0.0)):
            cap = steady_capacity(e, cal.costs, demand, how)
            o = steady_outcome(e, cal.costs, demand, cap, how)
            print(f"KV {tokens or eng.num_blocks * eng.block_size} tokens ({e.num_blocks} blocks), steady {how.duration_s:.0f}s/settle {how.settle_s:.0f}: "
                  f"capacity {cap:.3f} req/s; there preemptions {o.preemptions}, running peak {o.running_peak}", flush=True)
            out[f"{tokens}-{how.duration_s:.0f}"] = cap
    Path("/tmp/kvexp/predictions.json").write_text(json.dumps(out, indent=1))

if __name__ == "__main__":
    main()
