import json, os, sys, time
from dataclasses import replace
from pathlib import Path
ROOT = Path(os.environ.get("ROOT", Path(__file__).resolve().parents[2]))  # a checkout with experiments.patch applied
HERE = ROOT / "results/cpu-predict-certify-each-2026-12-02"
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(HERE))
from tuner.inputs import load_inputs
from tuner.search.predict_model import perf_model
from tuner.search.study import open_study, results_of
from tuner.settings.tune_settings import TuneSettings
from tuner.tune_setup import base_config, trial_context

def main():
    doc = json.loads((HERE / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    settings = replace(settings, out="/tmp/cpu-form/scratch", resume=False)
    inp = load_inputs(settings)
    model = perf_model(trial_context(inp, Path("/tmp/cpu-form/scratch/logs")))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    res = {r.number: r for r in results_of(study)}
    t0 = time.monotonic()
    cal = model.calibrate([res[0]], None)
    print(f"form {os.environ.get('PM_FORM','A')}: {time.monotonic()-t0:.0f} s {cal.costs}", flush=True)
    base = base_config(inp)
    pts = [("defaults in-sample", res[0].config, 31.709), ("top pick (trial 1)", res[1].config, 36.822)]
    for kw, m in ((dict(max_num_seqs=16, enable_chunked_prefill=False, max_num_batched_tokens=2560), 9.784),
                  (dict(max_num_seqs=16, enable_chunked_prefill=True, max_num_batched_tokens=2048), 13.779),
                  (dict(max_num_seqs=32, enable_chunked_prefill=False, max_num_batched_tokens=2560), 17.640),
                  (dict(max_num_seqs=32, enable_chunked_prefill=True, max_num_batched_tokens=2048), 16.513)):
        pts.append((str(kw), replace(base, max_model_len=2560, enable_prefix_caching=True, **kw), m))
    for label, cfg, meas in pts:
        (p,) = model.rank([cfg], cal)
        print(f"  {label:70} predicted {p.capacity_req_s or 0:7.3f} certified {meas:7.3f} ({(p.capacity_req_s or 0)/meas*100-100:+.1f} %)", flush=True)

if __name__ == "__main__":
    main()
