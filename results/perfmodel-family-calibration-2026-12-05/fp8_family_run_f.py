"""Offline, on the dev machine (nothing measured): the fp8 family calibrated on run f's fp8 launch (trial 2) alone,
as tune --predict now calibrates a family on its first launch, and what it predicts for the A30 grid's fp8 points,
vLLM's defaults with fp8, and trial 1's settings with fp8.

    ../../.venv/bin/python fp8_family_run_f.py > fp8-family-run-f.txt
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config  # noqa: E402

RUN_F = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-03-f"


def main() -> None:
    inp, _ctx, model = study_model(RUN_F, Path("/tmp/family-calibration-f/scratch"))
    study = open_study(f"sqlite:///{RUN_F / 'study.db'}", resume=True, seed=0)
    res = {r.number: r for r in results_of(study)}
    base = base_config(inp)
    configs = {
        "vLLM's defaults with fp8 (256 seqs; the A30 grid measured 64.9)": replace(base, kv_cache_dtype="fp8"),
        "the grid's 128 seqs, fp8 (56.2)": replace(base, max_num_seqs=128, kv_cache_dtype="fp8"),
        "the grid's best, 512 seqs, fp8 (65.9)": replace(base, max_num_seqs=512, kv_cache_dtype="fp8"),
        "the grid's 1024 seqs, fp8 (57.5)": replace(base, max_num_seqs=1024, kv_cache_dtype="fp8"),
        f"trial 2 itself (in sample; measured {res[2].best_rate:.3f})": res[2].config,
        f"trial 1's settings with fp8 (trial 1 measured {res[1].best_rate:.3f})": replace(
            res[1].config, kv_cache_dtype="fp8"
        ),
    }
    t0 = time.monotonic()
    cal = model.calibrate([res[2]], None)
    print(f"fp8 family calibrated on run f's trial 2 alone in {time.monotonic() - t0:.0f} s: {cal.family}")
    print(f"  costs: {cal.costs}")
    for p in model.rank(list(configs.values()), cal):
        name = next(k for k, v in configs.items() if v == p.config)
        flag = " (its rate fills max_num_seqs: not trusted)" if p.seq_bound else ""
        print(f"  {name}: predicted {p.capacity_req_s:.3f} req/s{flag}")
    print("the grid's figures are goodput on short levels (results/grid-h200-llama-3-8b-a30/grid.jsonl)")


if __name__ == "__main__":
    main()
