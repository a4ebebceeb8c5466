"""Predict, before measuring, capped/unchunked configurations on vLLM-CPU from today's CPU defaults' calibration."""
import sys
from dataclasses import replace
from pathlib import Path
HERE = Path("/work/main/results/cpu-predict-certify-each-2026-12-02")
sys.path.insert(0, str(HERE.parents[1]))
sys.path.insert(0, str(HERE))
import offline_check as oc  # noqa
import json
from tuner.inputs import load_inputs
from tuner.search.predict_model import perf_model
from tuner.search.study import open_study, results_of
from tuner.settings.tune_settings import TuneSettings
from tuner.tune_setup import base_config, trial_context

def main():
    doc = json.loads((HERE / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    settings = replace(settings, out="/tmp/capc/scratch", resume=False)
    inp = load_inputs(settings)
    model = perf_model(trial_context(inp, Path("/tmp/capc/scratch/logs")))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    cal = model.calibrate([results[0]], None)
    base = base_config(inp)
    for kw in (dict(max_num_seqs=16, enable_chunked_prefill=False, max_num_batched_tokens=2560, max_model_len=2560, enable_prefix_caching=True),
               dict(max_num_seqs=16, enable_chunked_prefill=True, max_num_batched_tokens=2048, max_model_len=2560, enable_prefix_caching=True),
               dict(max_num_seqs=32, enable_chunked_prefill=False, max_num_batched_tokens=2560, max_model_len=2560, enable_prefix_caching=True),
               dict(max_num_seqs=32, enable_chunked_prefill=True, max_num_batched_tokens=2048, max_model_len=2560, enable_prefix_caching=True)):
        (p,) = model.rank([replace(base, **kw)], cal)
        print(kw, "predicted", p.capacity_req_s, p.unseen)

if __name__ == "__main__":
    main()
