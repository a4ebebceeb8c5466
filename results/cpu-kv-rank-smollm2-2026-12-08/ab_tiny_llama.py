"""Offline, after the runs of 2026-12-05 (cpu-kv-limited-steady-2026-12-05): the landed calibration and the engine-TTFT
candidate, each fitted on that sitting's defaults alone, predict the steady-state capacity uncut and with the KV cache
cut, as that folder's phase 2 did; its vllm bench serve brackets are the measurement.
    python ab_tiny_llama.py CODE STUDY 16384,8192,6144 [MODE] > ab-tiny-llama[-MODE].txt
MODE: which levels' engine TTFT the candidate fits, "all" (default) or "unqueued" (perfmodel.observed.observe)."""
import sys
from dataclasses import replace
from pathlib import Path
code = Path(sys.argv[1]); study = Path(sys.argv[2]); sizes = [int(x) for x in sys.argv[3].split(",")]
mode = sys.argv[4] if len(sys.argv) > 4 else "all"
sys.path[:0] = [str(code), str(code / "scripts/gpu")]
def main():
    from offline_model import scratch_study_context
    from perfmodel.rank import Candidate, calibrate, predict
    from tuner.search.predict_demand import demand_of
    from tuner.search.predict_model import FIRST_EVALUATIONS, candidate, observed_levels
    _inp, ctx, model, results = scratch_study_context(study, Path("/tmp/kvs2/scratch-ab"))
    base = results[min(results)]
    demand = demand_of(ctx)
    landed = model.calibrate([base], None)
    obs = observed_levels(base, demand, ctx.plan, engine_ttft=mode)
    print("levels with engine TTFT:", [o.levels[0].engine_ttft_ms for o in obs])
    cand = calibrate(obs, ctx.spec, ctx.speed_gpu, max_evaluations=FIRST_EVALUATIONS, workers=None)
    c = candidate(base.config, ctx)
    for tokens in [None, *sizes]:
        e = c.engine if tokens is None else replace(c.engine, num_blocks=tokens // c.engine.block_size)
        a, b = (predict(Candidate(base.config, e), cal, demand).capacity_req_s for cal in (cand, landed))
        print(f"KV {tokens}: candidate {a:.3f} landed {b:.3f} ({(a-b)/b:+.1%}); measured defaults {base.best_rate}", flush=True)
if __name__ == "__main__":
    main()
