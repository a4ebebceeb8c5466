"""Offline, on the dev machine (nothing measured): how the model that run d's search used ranks the A30 grid's best
point (512 seqs, fp8 KV, the rest vLLM's defaults) beside run d's fp8 winner, (A) calibrated on run d's defaults as
the search was (fp8 is then an unseen family, ranked by its KV reads scaled by bytes), and (B) calibrated on run d's
fp8 trial itself (what a refit on an unseen family's first launch would know); then (C) the sample the search
ranks: its 60 configurations (run d's --predict-sample) and 200 (tune's default), seed 0, under A: the best
prediction of each KV dtype; and (D) the sample of 60 refined around its best (tuner.search.refine, since this
run). The measured figures are in remeasure.jsonl and grid.jsonl beside this file.

    ../../.venv/bin/python predict_fp8.py > predict-fp8.txt
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
STUDY = ROOT / "results" / "h200-llama-3-8b-a30-predict-2026-12-03-d"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import print_predictions, study_model  # noqa: E402

from perfmodel.rank import rank  # noqa: E402
from perfmodel.traffic import Demand  # noqa: E402
from tuner.search.predict_model import candidate, sample_space  # noqa: E402
from tuner.search.refine import refined, seeds  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config, space_context  # noqa: E402


def main() -> None:
    print(f"written {datetime.now(UTC):%Y-%m-%d %H:%M:%SZ}")
    inp, ctx, model = study_model(STUDY, Path("/tmp/predict-fp8/scratch"))
    results = {r.number: r for r in results_of(open_study(f"sqlite:///{STUDY / 'study.db'}", resume=True, seed=0))}
    configs = {
        "run d trial 2 (the fp8 winner: 0.81 / 1280 / 512 / 2048 / unchunked / no prefix caching)": results[2].config,
        "the A30 grid's best (512 seqs, fp8, the rest vLLM's defaults)": replace(
            base_config(inp), max_num_seqs=512, kv_cache_dtype="fp8"
        ),
        "run d trial 1 (auto KV: 0.92 / 5120 / 512 / 5120 / unchunked)": results[1].config,
    }
    for label, trials in (("A: run d's defaults (trial 0)", [results[0]]), ("B: run d's fp8 trial 2", [results[2]])):
        t0 = time.monotonic()
        cal = model.calibrate(trials, None)
        print(f"\n{label}: calibrated in {time.monotonic() - t0:.0f} s (family {cal.family})")
        print_predictions(configs, ctx, cal)
        demand = Demand(ctx.workload, ctx.slos, ctx.output_tokens)
        if trials[0].is_baseline:
            sampled(inp, ctx, cal, demand)
            climbed(inp, ctx, model, cal, demand)


def sampled(inp, ctx, cal, demand) -> None:  # type: ignore[no-untyped-def]
    """(C) the search's own sample, ranked with every KV dtype's figure kept (fp8 extrapolated)."""
    sctx = space_context(inp, base_config(inp), None)
    for n in (60, 200):
        t0 = time.monotonic()
        found = [c for c in (candidate(cfg, ctx) for cfg in sample_space(sctx, n, 0)) if c is not None]
        preds = rank(found, cal, demand, workers=None, extrapolate_kv=True)
        took = time.monotonic() - t0
        print(f"\nC: a sample of {n} (seed 0): {len(found)} within the KV budget, ranked in {took:.0f} s")
        for dtype in ("auto", "fp8"):
            for p in [q for q in preds if (q.config.kv_cache_dtype or "auto") == dtype][:3]:
                c = p.config
                knobs = (
                    f"{c.gpu_memory_utilization} / {c.max_model_len} / {c.max_num_seqs} / {c.max_num_batched_tokens}"
                    f" / chunked {c.enable_chunked_prefill} / prefix {c.enable_prefix_caching}"
                )
                flag = f"; FLAGGED: {p.seq_bound}" if p.seq_bound else ""
                print(f"  {dtype}: predicted {p.capacity_req_s or 0:.3f} req/s: {knobs}{flag}", flush=True)


def climbed(inp, ctx, model, cal, demand) -> None:  # type: ignore[no-untyped-def]
    """(D) what tune --predict ranks now: run d's sample of 60, refined around its best; each family's best."""
    sctx = space_context(inp, base_config(inp), None)
    configs = sample_space(sctx, 60, 0)
    t0 = time.monotonic()
    out, known = refined(model, cal, model.rank(list(configs), cal), configs, sctx, print)
    print(f"\nD: the sample of 60 refined: {len(known)} configurations, {time.monotonic() - t0:.0f} s with its ranking")
    for s in seeds(out):
        c = s.config
        (p,) = rank([candidate(c, ctx)], cal, demand, workers=None, extrapolate_kv=True)
        knobs = (
            f"{c.gpu_memory_utilization} / {c.max_model_len} / {c.max_num_seqs} / {c.max_num_batched_tokens}"
            f" / chunked {c.enable_chunked_prefill} / prefix {c.enable_prefix_caching} / {c.kv_cache_dtype}"
        )
        how = " (extrapolated: KV reads scaled by bytes)" if p.extrapolated else ""
        print(f"  the best of its family: predicted {p.capacity_req_s or 0:.3f} req/s{how}: {knobs}", flush=True)


if __name__ == "__main__":
    main()
