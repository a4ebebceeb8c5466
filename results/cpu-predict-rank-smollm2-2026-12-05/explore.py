"""Offline, dev machine: the landed model calibrated on SmolLM2 sitting d's defaults
(../cpu-predict-smollm2-2026-12-05-d/predict/, trial 0, measured 2.176 on another host) predicts a spread of
configurations, to choose the ones measured for a rank correlation on a real model (#24 G1). Exploration only:
nothing here is a result.

    ../../.venv/bin/python explore.py > explore.txt
"""

from __future__ import annotations

import itertools
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import scratch_study  # noqa: E402

from tuner.tune_setup import base_config  # noqa: E402

STUDY = ROOT / "results" / "cpu-predict-smollm2-2026-12-05-d" / "predict"


def calibrated():
    inp, model, results = scratch_study(STUDY, Path("/tmp/predict-rank-smollm2/explore"))
    base = next(r for r in results.values() if r.is_baseline)
    return model, model.calibrate([base], None), base_config(inp)


def main() -> None:
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}", flush=True)
    model, cal, base = calibrated()
    (own,) = model.rank([base], cal)
    print(f"vLLM's defaults: {own.capacity_req_s or 0:7.3f}", flush=True)
    for seqs, tokens, chunked, mml in itertools.product((8, 16, 32, 64, 128, 256, 512), (512, 2048, 8192),
                                                       (True, False), (768, 3072)):  # fmt: skip
        if not chunked and tokens != max(mml, 2048):
            continue
        config = replace(base, max_num_seqs=seqs, max_num_batched_tokens=tokens, enable_chunked_prefill=chunked,
                         max_model_len=mml, enable_prefix_caching=False)  # fmt: skip
        ranked = model.rank([config], cal)
        if not ranked:
            print(f"{seqs:4} seqs {tokens:5} tok chunked={chunked!s:5} mml {mml:5}: dropped", flush=True)
            continue
        (p,) = ranked
        flag = f"FLAGGED {p.seq_bound}" if p.seq_bound else "trusted"
        print(f"{seqs:4} seqs {tokens:5} tok chunked={chunked!s:5} mml {mml:5}: {p.capacity_req_s or 0:7.3f}  {flag}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
