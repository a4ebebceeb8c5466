"""Offline, dev machine: the landed model calibrated on the two-server run's defaults
(../cpu-predict-vs-grid-2026-12-03/two-servers/, trial 0, certified 14.117) predicts a spread of configurations,
to choose the ones to certify for a rank correlation (#24 G1). Exploration only: nothing here is a result.

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

STUDY = HERE.parent / "cpu-predict-vs-grid-2026-12-03" / "two-servers"


def calibrated():
    doc = json.loads((STUDY / "best.json").read_text())
    fields = TuneSettings.__dataclass_fields__
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in fields})
    inp = load_inputs(replace(settings, out="/tmp/predict-rank/scratch", resume=False, vllm_python=str(ROOT / ".venv/bin/python")))
    model = perf_model(trial_context(inp, Path("/tmp/predict-rank/scratch/logs")))
    results = {r.number: r for r in results_of(open_study(f"sqlite:///{STUDY / 'study.db'}", resume=True, seed=0))}
    return model, model.calibrate([results[0]], None), base_config(inp)


def main() -> None:
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}", flush=True)
    model, cal, base = calibrated()
    for seqs, tokens, chunked, mml in itertools.product((16, 32, 64, 128, 256, 512), (128, 256, 512, 1024, 2048, 8192),
                                                       (True, False), (1280, 4096)):  # fmt: skip
        if (not chunked and tokens < mml) or tokens < seqs or (mml == 4096 and seqs not in (64, 256)):
            continue
        config = replace(base, max_num_seqs=seqs, max_num_batched_tokens=tokens, enable_chunked_prefill=chunked,
                         max_model_len=mml, enable_prefix_caching=False)  # fmt: skip
        (p,) = model.rank([config], cal)
        flag = f"FLAGGED {p.seq_bound}" if p.seq_bound else "trusted"
        print(f"{seqs:4} seqs {tokens:5} tok chunked={chunked!s:5} mml {mml:5}: {p.capacity_req_s or 0:7.3f}  {flag}",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
