"""Offline, dev machine, written and run before the run it predicts (#24 G1 on a real model, a second sitting): five
configurations not measured before, spread over the model's range, predicted by the landed model calibrated on the
first sitting's defaults (../cpu-predict-rank-smollm2-2026-12-05, trial 0, this host type). They place the points;
the judged predictions come from this run's own defaults (analyze.py).

    ../../.venv/bin/python predict_before.py > predict-before.txt
"""

from __future__ import annotations

import importlib.util
import sys
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import scratch_study  # noqa: E402

from tuner.tune_setup import base_config  # noqa: E402

FIRST_SITTING = ROOT / "results" / "cpu-predict-rank-smollm2-2026-12-05"
FIRST = FIRST_SITTING / "rank"


def first_sitting(name: str):  # noqa: ANN201 (a module)
    """The first sitting's script ``name`` (predict_before, analyze), loaded from its folder by path."""
    spec = importlib.util.spec_from_file_location(f"first_{name}", FIRST_SITTING / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


knobs = first_sitting("predict_before").knobs  # one way to read a --try-first entry (the first sitting's)
REST = "max_model_len=3072,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
POINTS = {  # --try-first entries, every knob named; none measured in the first sitting
    "8 x 2048": f"max_num_seqs=8,max_num_batched_tokens=2048,{REST}",
    "32 x 512": f"max_num_seqs=32,max_num_batched_tokens=512,{REST}",
    "64 x 4096": f"max_num_seqs=64,max_num_batched_tokens=4096,{REST}",
    "256 x 1024": f"max_num_seqs=256,max_num_batched_tokens=1024,{REST}",
    "512 x 2048": f"max_num_seqs=512,max_num_batched_tokens=2048,{REST}",
}


def main() -> None:
    print(f"written {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}", flush=True)
    inp, model, results = scratch_study(FIRST, Path("/tmp/predict-rank-smollm2-b/before"))
    cal = model.calibrate([results[0]], None)
    base = base_config(inp)
    for label, entry in POINTS.items():
        (p,) = model.rank([replace(base, **knobs(entry))], cal)
        flag = f"FLAGGED ({p.seq_bound})" if p.seq_bound else "trusted"
        print(f"{label:11} predicted {p.capacity_req_s or 0:7.3f} req/s  {flag}  [{entry}]", flush=True)


if __name__ == "__main__":
    main()
