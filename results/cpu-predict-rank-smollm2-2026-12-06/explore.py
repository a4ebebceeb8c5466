"""Offline, dev machine: the landed model calibrated on the SmolLM2 thin-margin study's defaults
(../cpu-thin-margin-smollm2-2026-12-06/, trial 0: vLLM's defaults, `edit`, ttft_p95=2s) predicts a spread of
configurations, to choose the ones to measure for a rank correlation on the real model (#24 G1). Exploration only.

    ../../.venv/bin/python explore.py > explore.txt
"""

from __future__ import annotations

import itertools
import json
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tuner.inputs import load_inputs  # noqa: E402
from tuner.search.predict_model import perf_model  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402
from tuner.tune_setup import base_config, trial_context  # noqa: E402

STUDY = HERE.parent / "cpu-thin-margin-smollm2-2026-12-06"
SCRATCH = Path("/tmp/predict-rank-smollm2/scratch")


def calibrated():
    doc = json.loads((STUDY / "best.json").read_text())
    fields = TuneSettings.__dataclass_fields__
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in fields})
    settings = replace(settings, out=str(SCRATCH), resume=False, vllm_python=str(ROOT / ".venv/bin/python"))
    inp = load_inputs(settings)
    model = perf_model(trial_context(inp, SCRATCH / "logs"))
    results = {r.number: r for r in results_of(open_study(f"sqlite:///{STUDY / 'study.db'}", resume=True, seed=0))}
    return model, model.calibrate([results[0]], None), base_config(inp)


def main() -> None:
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}", flush=True)
    model, cal, base = calibrated()
    print(f"base {base}", flush=True)
    for seqs, tokens, chunked in itertools.product((2, 4, 8, 16, 32, 64, 256), (512, 2048, 8192), (True, False)):
        if tokens < seqs:
            continue
        config = replace(base, max_num_seqs=seqs, max_num_batched_tokens=tokens, enable_chunked_prefill=chunked)
        ranked = model.rank([config], cal)
        if not ranked:
            print(f"{seqs:4} seqs {tokens:5} tok chunked={chunked!s:5}: not predicted (dropped)", flush=True)
            continue
        (p,) = ranked
        flag = f"FLAGGED {p.seq_bound}" if p.seq_bound else "trusted"
        print(f"{seqs:4} seqs {tokens:5} tok chunked={chunked!s:5}: {p.capacity_req_s or 0:7.3f}  {flag}", flush=True)


if __name__ == "__main__":
    main()
