"""Offline, dev machine: the landed model (tune --predict's), calibrated on one study's trial 0 (vLLM's defaults),
predicts the 2026-12-02 winner's configuration without speculation (128 sequences, max length 1,536, no chunked
prefill, prefix caching on), before twin/ measures it (#24: predict, then measure).

    nice -n 19 ../../.venv/bin/python predict_twin.py STUDY_DIR >> predict-before.txt
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
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

TWIN = {"max_model_len": 1536, "max_num_seqs": 128, "enable_chunked_prefill": False, "enable_prefix_caching": True}


def main() -> None:
    study = Path(sys.argv[1])
    scratch = Path(tempfile.mkdtemp(prefix="predict-twin-"))
    shutil.copy(study / "study.db", scratch / "study.db")  # a running tune may be writing the original
    doc = json.loads((study / "best.json").read_text()) if (study / "best.json").exists() else None
    settings = TuneSettings(model="/tmp/smollm2", gpu="cpu", slo="ttft_p95=2s", workload="edit", output_tokens=64)
    if doc is not None:
        fields = TuneSettings.__dataclass_fields__
        settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in fields})
    settings = replace(settings, out=str(scratch / "out"), resume=False, vllm_python=str(ROOT / ".venv/bin/python"))
    inp = load_inputs(settings)
    model = perf_model(trial_context(inp, scratch / "logs"))
    results = {r.number: r for r in results_of(open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0))}
    print(f"written {datetime.now(timezone.utc):%Y-%m-%d %H:%M:%SZ}; calibrated on {study}'s trial 0 "
          f"(the search's estimate {results[0].best_rate or 0:.3f} req/s)", flush=True)  # fmt: skip
    cal = model.calibrate([results[0]], None)
    base = base_config(inp)
    for label, config in (("vLLM's defaults", base), ("the twin", replace(base, **TWIN))):
        ranked = model.rank([config], cal)
        if not ranked:
            print(f"  {label}: not predicted (dropped)")
            continue
        (p,) = ranked
        flag = f"FLAGGED {p.seq_bound}" if p.seq_bound else "trusted"
        print(f"  {label:16} predicted {p.capacity_req_s or 0:.3f} req/s  {flag}", flush=True)


if __name__ == "__main__":
    main()
