"""Offline, on the dev machine (nothing measured): how run e's model ranks the A30 grid's best point (512 seqs, fp8
KV, the rest vLLM's defaults) beside run e's two launches, (A) calibrated on run e's defaults only, as the search
began; (A') with the calibration the study stored after its refit on trial 1 (the one call 6 ranked with); and (B)
calibrated on run e's fp8 trial 2 itself (what a refit on an unseen family's first launch would know). The grid
point's measurements are in ../h200-a30-grid-best-remeasured-2026-12-03/ (another machine, another sitting).

    ../../.venv/bin/python predict_grid_point.py > predict-grid-point.txt
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import print_predictions, study_model  # noqa: E402

from perfmodel.rank import Calibration  # noqa: E402
from tuner.search.predict_search import CALIBRATION_ATTR  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config  # noqa: E402


def main() -> None:
    print(f"written {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}")
    inp, ctx, model = study_model(HERE, Path("/tmp/predict-grid/scratch"))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    configs = {
        "trial 1 (auto KV: 0.92 / 2560 / 512 / 512 / chunked / prefix caching), measured 69.862": results[1].config,
        "trial 2 (fp8: 0.92 / 1280 / 512 / 2048 / unchunked / no prefix caching), measured 68.231": results[2].config,
        "the A30 grid's best (512 seqs, fp8, the rest vLLM's defaults)": replace(
            base_config(inp), max_num_seqs=512, kv_cache_dtype="fp8"
        ),
        "the grid's best with auto KV (512 seqs, the rest vLLM's defaults)": replace(
            base_config(inp), max_num_seqs=512
        ),
    }
    stored = Calibration.from_dict(study.user_attrs[CALIBRATION_ATTR])
    for label, cal in (
        ("A: run e's defaults (trial 0) only", lambda: model.calibrate([results[0]], None)),
        ("A': the study's stored calibration (defaults and trial 1)", lambda: stored),
        ("B: run e's fp8 trial 2 only", lambda: model.calibrate([results[2]], None)),
    ):
        t0 = time.monotonic()
        c = cal()
        print(f"\n{label}: calibrated in {time.monotonic() - t0:.0f} s (family {c.family})")
        print_predictions(configs, ctx, c)


if __name__ == "__main__":
    main()
