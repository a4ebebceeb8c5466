"""Offline, on the dev machine (nothing measured): each study's launched trials of vLLM's defaults' engine family,
predicted from the defaults alone as `tune --predict` predicts them, with the steady state judged on a fixed 60-s
level (before 2026-12-05, ``SteadyState(lifetimes=0)``) and on a level of at least five request lifetimes (now).

    ../../.venv/bin/python steady_lifetimes.py STUDY_DIR... > steady-lifetimes.txt
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from perfmodel.capacity import SteadyState  # noqa: E402
from perfmodel.family import family_of  # noqa: E402
from perfmodel.rank import rank  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.report.predict_report import measured_rate  # noqa: E402
from tuner.search.predict_model import candidate  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402

HOWS = (("60 s", SteadyState(lifetimes=0.0)), ("5 lifetimes", SteadyState()))


def one(folder: str) -> None:
    here = ROOT / "results" / folder
    scratch = Path("/tmp/steady-lifetimes") / folder.replace("/", "_")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(here / "study.db", scratch / "study.db")  # the committed file stays as the run left it
    _inp, ctx, model = study_model(here, scratch / "out")
    study = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    results = sorted(results_of(study), key=lambda r: r.number)
    base = next(r for r in results if r.is_baseline)
    cal = model.calibrate([base], None)
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
    print(f"## {folder} (calibrated on trial {base.number}, vLLM's defaults)", flush=True)
    for r in results:
        cand, measured = candidate(r.config, ctx), measured_rate(r)
        if not measured or cand is None or family_of(r.config) != cal.family:
            continue
        parts = []
        for name, how in HOWS:
            (p,) = rank([cand], cal, demand, how, workers=None)
            cap = p.capacity_req_s or 0.0
            parts.append(f"{name}: {cap:.3f} ({100 * (cap - measured) / measured:+.1f} %)")
        role = "defaults" if r.is_baseline else "trial"
        print(f"  {role} {r.number}: measured {measured:.3f}; predicted, {'; '.join(parts)}", flush=True)


if __name__ == "__main__":
    for folder in sys.argv[1:]:
        one(folder)
