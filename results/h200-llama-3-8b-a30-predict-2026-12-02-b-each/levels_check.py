"""Diagnostic, on the dev machine: each level of run b's three trials replayed on the model calibrated on trial 0
alone at the H200's speed (as offline_check.py fits it; the fp8 trials with their KV reads scaled by bytes, as
the model did before 0553413), per level: the measured p95 TTFT and TPOT, the model's, its peak of running
sequences, its preemptions, and the throughput the model and the server completed.

    cd results/h200-llama-3-8b-a30-predict-2026-12-02-b-each && ../../.venv/bin/python levels_check.py > levels-check.txt
"""
import sys
from pathlib import Path
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))
import offline_check as oc
from perfmodel.capacity import replay_levels
from perfmodel.traffic import Demand
from tuner.search.predict_model import observed_levels
from tuner.search.study import open_study, results_of
from tuner.tune_setup import trial_context

def main():
    model, inp = oc.model_for("h200")
    ctx = trial_context(inp, Path("/tmp/offline-check-b-each/logs"))
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    study = open_study(f"sqlite:///{oc.HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    cal = model.calibrate([results[0]], None)
    for n in (0, 1, 2):
        print(f"trial {n}: {results[n].config.max_num_seqs} seqs, kv {results[n].config.kv_cache_dtype}")
        for obs in observed_levels(results[n], demand, ctx.plan):
            lv = obs.levels[0]
            (out,) = replay_levels(obs, cal.costs)
            ttft, tpot = out.value("ttft", 95), out.value("tpot", 95)
            print(f"  {lv.kind:5} {lv.rate or lv.concurrency:7.2f}: measured ttft {lv.ttft_p95_ms or 0:7.0f} tpot {lv.tpot_p95_ms or 0:5.1f} "
                  f"met {lv.slo_met!s:5} | model ttft {ttft or 0:7.0f} tpot {tpot or 0:5.1f} met {out.slo_met(demand.slos)!s:5} "
                  f"peak running {out.running_peak} preempt {out.preemptions} thr {out.throughput_req_s:.1f} vs {lv.throughput_req_s:.1f}")

if __name__ == "__main__":
    main()
