"""Offline, on the dev machine (nothing measured): how run f's model, calibrated on run f's defaults only (as its
search began), figures the A30 grid's best point (512 seqs, fp8 KV, the rest vLLM's defaults) beside run f's two
launches, and how many engine settings each moves from vLLM's (the tie-break's count). An fp8 configuration's
figure is its KV reads scaled by bytes: it only ranks the unseen family.

    ../../.venv/bin/python rank_grid_point.py > rank-grid-point.txt
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config  # noqa: E402


def main() -> None:
    inp, _ctx, model = study_model(HERE, Path("/tmp/rank-grid-f/scratch"))
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    cal = model.calibrate([results[0]], None)
    print(f"calibrated on run f's defaults (trial 0, measured {results[0].best_rate:.3f}); family {cal.family}")
    configs = {
        f"trial 1 (256 x 512, auto KV), measured {results[1].best_rate:.3f}": results[1].config,
        f"trial 2 (fp8, 256 x 512, gmu 0.85, len 5120), measured {results[2].best_rate:.3f}": results[2].config,
        "the A30 grid's best (512 seqs, fp8, the rest vLLM's defaults)": replace(
            base_config(inp), max_num_seqs=512, kv_cache_dtype="fp8"
        ),
    }
    by_config = {p.config: p for p in model.rank(list(configs.values()), cal)}
    for label, config in configs.items():
        p = by_config[config]
        figure = p.capacity_req_s if p.capacity_req_s is not None else p.scaled_req_s
        kind = "predicted" if p.capacity_req_s is not None else "bytes-scaled (ranks only)"
        print(f"{label}: {kind} {figure:.3f} req/s, {model.departures(p.config)} settings off vLLM's defaults")


if __name__ == "__main__":
    main()
