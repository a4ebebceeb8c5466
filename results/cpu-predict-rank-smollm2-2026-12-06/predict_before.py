"""Offline, dev machine, written and run before the run it predicts: the landed model calibrated on the SmolLM2
thin-margin study's defaults (../cpu-thin-margin-smollm2-2026-12-06/, trial 0) predicts the five configurations
run.sh then measures (#24 G1 on the real model: error and rank correlation on configurations not calibrated on).
Chosen from explore.txt to spread the predictions from ~0.3 to ~1.4 req/s; four of the five fill max_num_seqs
(flagged, not trusted).

    VLLM_CPU_KVCACHE_SPACE=1 ../../.venv/bin/python predict_before.py > predict-before.txt
"""

from __future__ import annotations

import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from explore import calibrated  # noqa: E402

REST = "max_model_len=3072,enable_chunked_prefill=true,enable_prefix_caching=true,speculative_method=off"
POINTS = {  # --try-first entries, every knob of the space named
    "4 x 2048": f"max_num_seqs=4,max_num_batched_tokens=2048,{REST}",
    "8 x 512": f"max_num_seqs=8,max_num_batched_tokens=512,{REST}",
    "16 x 8192": f"max_num_seqs=16,max_num_batched_tokens=8192,{REST}",
    "32 x 2048": f"max_num_seqs=32,max_num_batched_tokens=2048,{REST}",
    "64 x 512": f"max_num_seqs=64,max_num_batched_tokens=512,{REST}",
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
        print(f"{label:10} predicted {p.capacity_req_s or 0:7.3f} req/s  {flag}  [{entry}]", flush=True)


if __name__ == "__main__":
    main()
