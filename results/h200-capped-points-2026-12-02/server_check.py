import json, os, sys, time
from pathlib import Path
ROOT = Path(os.environ.get("ROOT", Path(__file__).resolve().parents[2]))  # a checkout with experiments.patch applied
B = ROOT / "results/h200-llama-3-8b-a30-predict-2026-12-02-b-each"
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(B)); sys.path.insert(0, str(ROOT / "bench"))
import offline_check as oc
from tuner.trial.result import TrialResult
from tuner.search.study import open_study, results_of

def main():
    model, inp = oc.model_for("h200")
    rows = [json.loads(l) for l in open(Path(__file__).resolve().parent / "grid.jsonl")]
    pts = [TrialResult.from_dict(r["result"]) for r in rows]
    cal_on = int(os.environ.get("CAL_ON", "3"))
    study = open_study(f"sqlite:///{B / 'study.db'}", resume=True, seed=0)
    b0 = next(r for r in results_of(study) if r.number == 0)
    t0 = time.monotonic()
    cal = model.calibrate([pts[cal_on]], None)
    print(f"form {os.environ.get('PM_FORM','A')} server {'off' if os.environ.get('PM_NO_SERVER') else 'on'} cal on point {cal_on} ({time.monotonic()-t0:.0f} s): {cal.costs}", flush=True)
    errs = []
    for i, (row, r) in enumerate(zip(rows, pts)):
        (p,) = model.rank([r.config], cal)
        e = p.capacity_req_s / row["capacity_req_s"] - 1
        if i != cal_on: errs.append(abs(e))
        print(f"  point {i} {row['point']['max_num_seqs']} chunked={row['point']['enable_chunked_prefill']}: predicted {p.capacity_req_s:.3f} measured {row['capacity_req_s']:.3f} ({e*100:+.1f} %){' (calibrated on)' if i == cal_on else ''}", flush=True)
    (p,) = model.rank([b0.config], cal)
    print(f"  run b defaults (other machine): predicted {p.capacity_req_s:.3f}; search 64.218 ({(p.capacity_req_s/64.218-1)*100:+.1f} %), certified 57.239 ({(p.capacity_req_s/57.239-1)*100:+.1f} %)")
    errs.sort(); print(f"  median |error| over the other points: {errs[len(errs)//2]*100:.1f} %")

if __name__ == "__main__":
    main()
