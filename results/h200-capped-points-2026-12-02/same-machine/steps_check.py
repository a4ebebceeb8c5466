"""Diagnostic, on the dev machine: in the model's replay of each level (calibrated on the third machine's defaults),
the share of engine steps holding more tokens than vLLM 0.26 captures CUDA graphs for: min(2 x max_num_seqs, 512,
max_num_batched_tokens) (vllm/config/vllm.py), 512 for the defaults and 256 for the capped pick. A spy on the
engine's step records each step's tokens and duration (a diagnostic: nothing in the model changes).

    ../../../.venv/bin/python steps_check.py > steps-check.txt
"""
import json, sys
from pathlib import Path
R = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(R.parents[1])); sys.path.insert(0, str(R.parent / "h200-llama-3-8b-a30-predict-2026-12-02-b-each"))
import offline_check as oc
import perfmodel.engine as E
from perfmodel.capacity import replay_levels
from perfmodel.traffic import Demand
from tuner.search.predict_model import observed_levels
from tuner.trial.result import TrialResult
from tuner.tune_setup import trial_context
LOG = []
orig = E.Engine._finish_step
def spy(self, chunks):
    st = orig(self, chunks)
    LOG.append((len(self.dec) + sum(n for _, n in chunks), st.duration_s))
    return st
E.Engine._finish_step = spy
def load(p): return [TrialResult.from_dict(json.loads(l)["result"]) for l in open(p)]
def main():
    model, inp = oc.model_for("h200")
    ctx = trial_context(inp, Path("/tmp/diag3/logs"))
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    (d,) = load(R / "same-machine/defaults/grid.jsonl"); (p0,) = load(R / "same-machine/p0/grid.jsonl")
    cal = model.calibrate([d], None)
    for name, r, cap in (("defaults", d, 512), ("p0", p0, 256)):
        print(name, r.config.max_num_seqs, r.config.max_num_batched_tokens)
        for obs in observed_levels(r, demand, ctx.plan):
            lv = obs.levels[0]
            LOG.clear(); replay_levels(obs, cal.costs)
            n = len(LOG); over = [t for t, _ in LOG if t > cap]; over512 = [t for t, _ in LOG if t > 512]
            tw = sum(d for t, d in LOG if t > cap) / sum(d for _, d in LOG)
            print(f"  {lv.kind} {lv.rate or lv.concurrency:7.2f}: steps {n}, > {cap} tokens {len(over)/n*100:5.1f} % (time share {tw*100:5.1f} %), > 512 {len(over512)/n*100:5.1f} %, mean tokens {sum(t for t,_ in LOG)/n:6.1f}")
if __name__ == "__main__":
    main()
