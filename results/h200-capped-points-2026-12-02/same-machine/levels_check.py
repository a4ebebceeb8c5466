"""Diagnostic, on the dev machine: the levels of vLLM's defaults and of the capped pick, both measured on the third
machine, replayed on the model calibrated on those defaults alone; per level the client's p95s and vLLM's engine means
beside the model's (../points_check.py's columns).

    ../../../.venv/bin/python levels_check.py > levels-check.txt
"""
import json, sys
from pathlib import Path
R = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(R.parents[1])); sys.path.insert(0, str(R)); sys.path.insert(0, str(R.parent / "h200-llama-3-8b-a30-predict-2026-12-02-b-each"))
import offline_check as oc
from points_check import level_lines
from perfmodel.traffic import Demand
from tuner.trial.result import TrialResult
from tuner.tune_setup import trial_context
def load(p): return [TrialResult.from_dict(json.loads(l)["result"]) for l in open(p)]
def main():
    model, inp = oc.model_for("h200")
    ctx = trial_context(inp, Path("/tmp/diag3/logs"))
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    (d,) = load(R / "same-machine/defaults/grid.jsonl"); (p0,) = load(R / "same-machine/p0/grid.jsonl")
    cal = model.calibrate([d], None)
    for name, r in (("defaults", d), ("p0", p0)):
        print(name); print("\n".join(level_lines(r, cal, demand, ctx.plan)))
if __name__ == "__main__":
    main()
