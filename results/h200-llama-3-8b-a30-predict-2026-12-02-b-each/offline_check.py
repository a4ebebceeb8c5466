"""Offline, on the dev machine (no GPU): run b's launches predicted again with the emulated A30 timed at the H200's
speed (the fix of 2026-12-02: tuner.trial.context.TrialContext.speed_gpu), against what they measured — the search's
estimate and, where a soak certified it, the certified rate (this folder's study.db: run b's study, each launch
certified with --certify each).

    cd results/h200-llama-3-8b-a30-predict-2026-12-02-b-each && ../../.venv/bin/python offline_check.py > offline-check.txt

offline-check.txt and offline-check-a30-speed.txt (SPEED=a30) were written by commit 6a2087e, when an fp8 KV cache
was still predicted from the calibrated dtype with its bytes halved; offline-check-kv-family.txt by 83468eb, where
it is an engine family of its own: not predicted, its launch chosen by the bytes-scaled prediction.

Run b's own model timed the H200's steps at the A30's speed (its calibration's per_kv_byte_s 1.07e-12 s, the A30's
933 GB/s): fitting trial 0 again with SPEED=a30 reproduces its 72.127 for trial 1. Inputs are rebuilt as run b's
offline_check.py does (vLLM 0.26.0's recorded --help, the config-only model).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUN_B = HERE.parent / "h200-llama-3-8b-a30-predict-2026-12-02-b"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from launch.config import ServeConfig  # noqa: E402
from gpu_study import study_inputs  # noqa: E402
from tuner.certify.certified import stored  # noqa: E402
from tuner.search.predict_model import perf_model, sample_space  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config, space_context, trial_context  # noqa: E402


def model_for(speed: str):  # noqa: ANN201 - the Model of tuner.search.predict_model, and the Inputs
    inp = study_inputs(RUN_B, "/tmp/offline-check-b-each")
    ctx = trial_context(inp, Path("/tmp/offline-check-b-each/logs"))
    if speed == "a30":  # run b's own (wrong) timing: the emulated GPU's speed
        ctx = replace(ctx, actual_gpu=None)
    return perf_model(ctx), inp


def main() -> None:
    speed = os.environ.get("SPEED", "h200")
    model, inp = model_for(speed)
    study = open_study(f"sqlite:///{HERE / 'study.db'}", resume=True, seed=0)
    results = {r.number: r for r in results_of(study)}
    certs = stored(study)
    first_run = json.loads((HERE.parent / "h200-llama-3-8b-a30-predict" / "best.json").read_text())
    points = [
        ("trial 0 (defaults; calibrated on)", results[0].config, results[0].best_rate, certs.get(0)),
        ("trial 1", results[1].config, results[1].best_rate, certs.get(1)),
        ("trial 2", results[2].config, results[2].best_rate, certs.get(2)),
        ("first run's trial 1 (other host)", ServeConfig.from_dict(first_run["best"]["config"]), 57.999, None),
        ("grid best, 512 seqs fp8 (other host)", replace(base_config(inp), max_num_seqs=512, kv_cache_dtype="fp8"),
         64.27, None),
    ]  # fmt: skip
    t0 = time.monotonic()
    cal = model.calibrate([results[0]], None)
    print(f"timed at the {speed}'s speed; calibration on trial 0 alone in {time.monotonic() - t0:.0f} s: {cal.costs}")
    errors: dict[str, list[float]] = {"search": [], "certified": []}
    for label, config, estimate, cert in points:
        (p,) = model.rank([config], cal)
        rate = cert.certified_rate if cert is not None else None
        if p.capacity_req_s is None:  # since 0553413 an fp8 KV cache is another engine family
            print(f"{label:38} not predicted ({p.unseen}); search {estimate:7.3f}, certified {rate or '-'}")
            continue
        line = f"{label:38} predicted {p.capacity_req_s:7.3f} req/s; search {estimate:7.3f} ({_err(p, estimate)})"
        line += f"; certified {rate:7.3f} ({_err(p, rate)})" if rate else "; not certified"
        print(line)
        if not label.startswith("trial 0"):
            errors["search"].append(abs(p.capacity_req_s / estimate - 1))
            if rate:
                errors["certified"].append(abs(p.capacity_req_s / rate - 1))
    for what, errs in errors.items():
        if errs:
            print(f"median |error| against the {what} figures, {len(errs)} launches not calibrated on: "
                  f"{100 * statistics.median(errs):.1f} %")  # fmt: skip
    # what run b's first ranking (the same sample: --predict-sample 60, the study's seed) puts first now
    configs = list(sample_space(space_context(inp, base_config(inp), None), 60, inp.settings.seed))
    ranked = model.rank(configs, cal)
    print(f"run b's first ranking again ({len(ranked)} of {len(configs)} sampled configurations feasible), top 5:")
    for p in ranked[:5]:
        print(f"  {p.capacity_req_s or 0:7.3f} req/s  {_knobs(p.config)}" if p.capacity_req_s else f"  {p.unseen}")
    unseen = [p for p in ranked if p.capacity_req_s is None]
    if unseen:
        print(f"  ... {len(unseen)} not predicted, the first: {_knobs(unseen[0].config)} ({unseen[0].unseen})")


def _knobs(config: ServeConfig) -> str:
    keys = ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens",
            "enable_chunked_prefill", "enable_prefix_caching", "kv_cache_dtype", "block_size")  # fmt: skip
    return ", ".join(f"{k}={getattr(config, k)}" for k in keys if getattr(config, k) is not None)


def _err(p, measured: float | None) -> str:  # noqa: ANN001
    return f"{100 * (p.capacity_req_s / measured - 1):+.1f} %" if measured else "-"


if __name__ == "__main__":
    main()
