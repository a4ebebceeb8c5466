"""Offline, on the dev machine, BEFORE the one-machine run's figures came back: the landed model's predictions of
the four configurations measured in this folder, calibrated on the third machine's defaults of 2026-12-02
(../h200-capped-points-2026-12-02/same-machine/defaults). Written to predict-before.txt with its time.

    ../../.venv/bin/python predict_before.py > predict-before.txt
"""
import json
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
B = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-02-b-each"
sys.path.insert(0, str(ROOT)); sys.path.insert(0, str(B)); sys.path.insert(0, str(ROOT / "bench"))
import offline_check as oc  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402

PICK_REST = dict(enable_prefix_caching=True, kv_cache_dtype="auto", gpu_memory_utilization=0.92, max_model_len=5120)
POINTS = {
    "k1-pick: 128 seqs, unchunked, 5120 tokens": dict(max_num_seqs=128, enable_chunked_prefill=False,
                                                      max_num_batched_tokens=5120, **PICK_REST),
    "k2: 128 seqs, chunked, 2048 tokens": dict(max_num_seqs=128, enable_chunked_prefill=True,
                                               max_num_batched_tokens=2048, **PICK_REST),
    "k3: 256 seqs, chunked, 5120 tokens": dict(max_num_seqs=256, enable_chunked_prefill=True,
                                               max_num_batched_tokens=5120, **PICK_REST),
}


def main() -> None:
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}, before any figure of this run was read")
    model, _ = oc.model_for("h200")
    row = json.loads((ROOT / "results/h200-capped-points-2026-12-02/same-machine/defaults/grid.jsonl").read_text())
    defaults = TrialResult.from_dict(row["result"])
    t0 = time.monotonic()
    cal = model.calibrate([defaults], None)
    print(f"calibrated on the third machine's defaults (measured {row['capacity_req_s']:.3f}) in "
          f"{time.monotonic() - t0:.0f} s: {cal.costs}")
    configs = {"k0: vLLM's defaults (in-sample there)": defaults.config}
    configs |= {label: replace(defaults.config, **knobs) for label, knobs in POINTS.items()}
    for label, config in configs.items():
        (p,) = model.rank([config], cal)
        print(f"  {label:42} predicted {p.capacity_req_s:7.3f} req/s", flush=True)


if __name__ == "__main__":
    main()
