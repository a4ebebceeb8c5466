"""Offline, on the dev machine (nothing measured): the fp8 family of committed H200 `tune --predict` studies
calibrated on one fp8 launch three ways, each predicting every fp8 configuration that study (and, for run f, the
A30 grid's best point measured beside it on 2026-12-04) measured:
- "alone": all five fitted costs on that launch alone (tune --predict from 2026-12-05 until this change);
- "sibling": the auto family's costs with only the cost of a KV byte read fitted (perfmodel.kv_sibling, now);
- "bytes": no fp8 calibration, the auto family's costs with the KV reads halved by bytes (before 2026-12-05).
The auto family is fitted fresh, by this tree's code, on the study's auto trials launched before its first fp8 one.

    ../../.venv/bin/python kv_sibling_h200.py > kv-sibling-h200.txt
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from perfmodel.kv_sibling import kv_read_multiple  # noqa: E402
from perfmodel.rank import rank  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.search.predict_model import candidate  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.trial.result import TrialResult  # noqa: E402

RUNS = ("2026-12-02-b", "2026-12-03-f", "2026-12-05-g")
COSTS_SHOWN = ("fixed_s", "per_prefill_token_s", "per_seq_s", "per_kv_byte_s", "per_request_s", "per_token_s")
GRID_BEST_12_04 = ROOT / "results" / "h200-run-f-crosscheck-2026-12-04" / "grid-best" / "grid.jsonl"


def knobs(r: TrialResult) -> str:
    c = r.config
    return (
        f"gmu {c.gpu_memory_utilization or '-'} / len {c.max_model_len or '-'} / seqs {c.max_num_seqs or '-'} / "
        f"batched {c.max_num_batched_tokens or '-'}"
    )


def one_run(name: str, errors: dict[str, list[float]]) -> None:
    folder = ROOT / "results" / f"h200-llama-3-8b-a30-predict-{name}"
    _inp, ctx, model = study_model(folder, Path(f"/tmp/kv-sibling-{name}/scratch"))
    study = open_study(f"sqlite:///{folder / 'study.db'}", resume=True, seed=0)
    res = sorted((r for r in results_of(study) if r.best_rate), key=lambda r: r.number)
    points = {f"trial {r.number}": r for r in res}
    if name.endswith("-f"):
        points["grid point (12-04)"] = TrialResult.from_dict(json.loads(GRID_BEST_12_04.read_text().splitlines()[0])["result"])
    fp8 = {k: r for k, r in points.items() if r.config.kv_cache_dtype == "fp8"}
    first = min(r.number for r in fp8.values() if r.number < 1000)
    autos = [r for r in res if r.config.kv_cache_dtype != "fp8" and r.number < first]
    t0 = time.monotonic()
    auto = model.calibrate(autos, None)
    print(f"## run {name[-1]}: the auto family fitted on trials {[r.number for r in autos]} ({time.monotonic() - t0:.0f} s)")
    demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)

    def predicted(cal, r: TrialResult) -> float:
        (p,) = rank([candidate(r.config, ctx)], cal, demand, workers=None, extrapolate_kv=True)
        return p.capacity_req_s or 0.0

    for on, r in fp8.items():
        t0 = time.monotonic()
        cals = {"alone": model.calibrate([r], None), "sibling": model.calibrate([r], auto)}
        took = time.monotonic() - t0
        multiple = kv_read_multiple(cals["sibling"], auto)
        print(f"calibrated on {on} ({knobs(r)}; measured {r.best_rate:.3f}), {took:.0f} s for both: "
              f"sibling's KV read cost {multiple:.2f} x the auto family's a byte")
        for how, cal in (("auto family", auto), *cals.items()):
            print(f"    {how} costs: " + ", ".join(f"{n} {getattr(cal.costs, n):.3g}" for n in COSTS_SHOWN))
        for k, x in fp8.items():
            row = []
            for how, cal in (*cals.items(), ("bytes", auto)):
                v = predicted(cal, x)
                err = v / x.best_rate - 1
                inside = k == on and how != "bytes"
                row.append(f"{how} {v:.3f} ({100 * err:+.1f} %{', in sample' if inside else ''})")
                if not inside and (how != "bytes" or on == next(iter(fp8))):
                    errors[how].append(abs(err))
            print(f"  {k} ({knobs(x)}): measured {x.best_rate:.3f}; " + ", ".join(row))
    if name.endswith("-g"):
        base = points["trial 0"].config
        cal = model.calibrate([points["trial 2"]], auto)
        grid = replace(base, max_num_seqs=512, kv_cache_dtype="fp8")
        pairs = {"the A30 grid's best (512 seqs, fp8)": (grid, cal), "trial 1 (auto)": (points["trial 1"].config, auto)}
        for label, (config, c) in pairs.items():
            (p,) = rank([candidate(config, ctx)], c, demand, workers=None)
            print(f"  run g's calibrations predict {label}: {p.capacity_req_s:.3f}")


def main() -> None:
    errors: dict[str, list[float]] = {"alone": [], "sibling": [], "bytes": []}
    for name in RUNS:
        one_run(name, errors)
    print("## out of sample (each fp8 point predicted from a calibration on another; bytes: each point once)")
    for how, errs in errors.items():
        print(f"  {how}: median |error| {100 * statistics.median(errs):.1f} % over {len(errs)}, "
              f"worst {100 * max(errs):.1f} %")


if __name__ == "__main__":
    main()
