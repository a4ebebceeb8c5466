"""Offline, on the dev machine (nothing measured): run b's two fp8 launches (128 sequences each), the fp8 family
calibrated on one predicting the other, as tune --predict now calibrates a family on its first launch.

    ../../.venv/bin/python fp8_pair_run_b.py > fp8-pair-run-b.txt
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from tuner.search.study import open_study, results_of  # noqa: E402

RUN_B = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-02-b"


def main() -> None:
    _inp, _ctx, model = study_model(RUN_B, Path("/tmp/family-calibration-b/scratch"))
    study = open_study(f"sqlite:///{RUN_B / 'study.db'}", resume=True, seed=0)
    res = {r.number: r for r in results_of(study)}
    fp8 = [n for n, r in res.items() if r.config.kv_cache_dtype == "fp8" and r.best_rate]
    for on in fp8:
        t0 = time.monotonic()
        cal = model.calibrate([res[on]], None)
        for other in (n for n in fp8 if n != on):
            (p,) = model.rank([res[other].config], cal)
            measured = res[other].best_rate
            flag = " (its rate fills max_num_seqs: not trusted)" if p.seq_bound else ""
            print(
                f"calibrated on trial {on} (measured {res[on].best_rate:.3f}; {time.monotonic() - t0:.0f} s): trial "
                f"{other} predicted {p.capacity_req_s:.3f}, measured {measured:.3f} "
                f"({100 * (p.capacity_req_s / measured - 1):+.1f} %){flag}"
            )


if __name__ == "__main__":
    main()
