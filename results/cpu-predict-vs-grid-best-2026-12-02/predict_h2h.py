"""Offline, on the dev machine: the landed model calibrated on grid-exact's defaults (trial 0, 2026-12-03) predicts
the grid's four exact points (measured already: how far to trust it here) and the configurations of the
head-to-head run (h2h/; predicted before that run's figures are read). A prediction that fills max_num_seqs
is flagged seq-bound: not trusted (docs/perfmodel.md).

    ../../.venv/bin/python predict_h2h.py > predict-h2h.txt
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tuner.certify.certified import stored  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.search.predict_model import perf_model  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402
from tuner.tune_setup import base_config, trial_context  # noqa: E402

STUDY = HERE / "grid-exact"
REST = dict(max_model_len=4096, enable_chunked_prefill=True, enable_prefix_caching=True)
WINNER_12_02 = dict(max_num_seqs=512, max_num_batched_tokens=8192, max_model_len=1280, enable_chunked_prefill=True,
                    enable_prefix_caching=False)  # fmt: skip


def main() -> None:
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}")
    doc = json.loads((STUDY / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    inp = load_inputs(replace(settings, out="/tmp/predict-h2h/scratch", resume=False))
    model = perf_model(trial_context(inp, Path("/tmp/predict-h2h/scratch/logs")))
    study = open_study(f"sqlite:///{STUDY / 'study.db'}", resume=True, seed=0)
    results, certs = {r.number: r for r in results_of(study)}, stored(study)
    t0 = time.monotonic()
    cal = model.calibrate([results[0]], None)
    print(f"calibrated on grid-exact trial 0 (defaults, certified {certs[0].certified_rate:.3f}) in "
          f"{time.monotonic() - t0:.0f} s")  # fmt: skip
    base = base_config(inp)
    rows = [(f"grid-exact trial {n}", results[n].config, certs[n].certified_rate) for n in range(1, 5)]
    rows.append(("12-02 winner: 512 x 8192, mml 1280, no prefix caching", replace(base, **WINNER_12_02), None))
    rows.append(("grid best again: 256 x 2048", replace(base, max_num_seqs=256, max_num_batched_tokens=2048, **REST),
                 certs[1].certified_rate))  # fmt: skip
    for label, config, certified in rows:
        (p,) = model.rank([config], cal)
        line = f"{label:55} predicted {p.capacity_req_s or 0:7.3f} req/s"
        if certified:
            line += f"; certified {certified:7.3f} ({100 * (p.capacity_req_s / certified - 1):+.1f} %)"
        print(line + (f"; FLAGGED: {p.seq_bound}" if p.seq_bound else "; trusted"), flush=True)


if __name__ == "__main__":
    main()
