"""Offline (nothing measured): SmolLM2 sitting b's first ranking again with this tree's model: the configurations its
`tune --predict` sampled, predicted from the defaults' calibration as the search ranks them, the top five and vLLM's
defaults' own prediction, with the time the ranking took on this host.

    ../../.venv/bin/python first_ranking.py > first-ranking.txt
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from tuner.search.predict_model import sample_space  # noqa: E402
from tuner.search.predict_search import _knobs  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config, space_context  # noqa: E402

STUDY = ROOT / "results" / "cpu-predict-smollm2-2026-12-05-b" / "predict"


def main() -> None:
    scratch = Path("/tmp/steady-lifetimes/first-ranking")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir(parents=True)
    shutil.copy(STUDY / "study.db", scratch / "study.db")
    inp, _ctx, model = study_model(STUDY, scratch / "out")
    study = open_study(f"sqlite:///{scratch / 'study.db'}", resume=True, seed=0, must_exist=True)
    base = next(r for r in results_of(study) if r.is_baseline)
    cal = model.calibrate([base], None)
    configs = list(sample_space(space_context(inp, base_config(inp), None), inp.settings.predict_sample, inp.settings.seed))
    t0 = time.monotonic()
    ranked = [p for p in model.rank(configs, cal) if p.capacity_req_s is not None]
    print(f"{len(configs)} sampled, {len(ranked)} predicted in {time.monotonic() - t0:.0f} s; the top five:")
    for p in ranked[:5]:
        print(f"  {p.capacity_req_s:.3f} req/s{' (FLAGGED)' if p.seq_bound else ''}: {_knobs(p)}")
    (own,) = model.rank([base.config], cal)
    print(f"vLLM's defaults (measured {base.best_rate:.3f}): predicted {own.capacity_req_s:.3f} req/s")


if __name__ == "__main__":
    main()
