"""Offline, dev machine, written and run before the run it predicts: the landed model calibrated on the two-server
run's defaults (../cpu-predict-vs-grid-2026-12-03/two-servers/ trial 0, certified 14.117 on two servers) predicts the
five configurations run.sh then certifies (#24 G1: error and rank correlation on configurations not calibrated on).
They were chosen from explore.txt to spread the predictions from 7.7 to 18.6 req/s within the search space (its token
budgets start at 512, so the trusted low predictions of explore.txt, 128 and 256 tokens, cannot be tried): three of
the five fill max_num_seqs (flagged).

    ../../.venv/bin/python predict_before.py > predict-before.txt
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from explore import calibrated  # noqa: E402

REST = "max_model_len=1280,enable_chunked_prefill=true,enable_prefix_caching=false,speculative_method=off"
POINTS = {  # --try-first entries, every knob named
    "32 x 2048": f"max_num_seqs=32,max_num_batched_tokens=2048,{REST}",
    "64 x 512": f"max_num_seqs=64,max_num_batched_tokens=512,{REST}",
    "128 x 512": f"max_num_seqs=128,max_num_batched_tokens=512,{REST}",
    "256 x 512": f"max_num_seqs=256,max_num_batched_tokens=512,{REST}",
    "512 x 8192": f"max_num_seqs=512,max_num_batched_tokens=8192,{REST}",
}


def knobs(entry: str) -> dict[str, object]:
    def value(v: str) -> object:
        return {"true": True, "false": False, "off": None}.get(v, int(v) if v.isdigit() else v)

    return {k: value(v) for k, v in (kv.split("=") for kv in entry.split(","))}


def main() -> None:
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}", flush=True)
    model, cal, base = calibrated()
    for label, entry in POINTS.items():
        (p,) = model.rank([replace(base, **knobs(entry))], cal)
        flag = f"FLAGGED ({p.seq_bound})" if p.seq_bound else "trusted"
        print(f"{label:11} predicted {p.capacity_req_s or 0:7.3f} req/s  {flag}  [{entry}]", flush=True)


if __name__ == "__main__":
    main()
