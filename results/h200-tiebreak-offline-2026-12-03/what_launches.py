"""Offline, on the dev machine (nothing measured): what today's ``tune --predict`` launches first in a committed H200
study, with and without the tie-break of tuner.search.departures. Calibrated on the study's defaults only (as its
search began), a sample of 200 (tune's default) ranked and refined as tune does, then the queue's picks: the trusted
pick and one launch per engine family not calibrated (fp8 KV here, ordered by its KV reads scaled by bytes).

    ../../.venv/bin/python what_launches.py ../h200-llama-3-8b-a30-predict-2026-12-03-e > what-launches-e.txt
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import study_model  # noqa: E402

from perfmodel.rank import Prediction  # noqa: E402
from tuner.search.departures import UNRESOLVED  # noqa: E402
from tuner.search.predict_model import sample_space  # noqa: E402
from tuner.search.predict_queue import Queue  # noqa: E402
from tuner.search.refine import refined  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402
from tuner.tune_setup import base_config, space_context  # noqa: E402

KNOBS = ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens",
         "enable_chunked_prefill", "enable_prefix_caching", "kv_cache_dtype")  # fmt: skip


def line(p: Prediction, moved: int) -> str:
    figure = p.capacity_req_s if p.capacity_req_s is not None else p.scaled_req_s
    kind = "predicted" if p.capacity_req_s is not None else "bytes-scaled" if figure is not None else "not predicted"
    knobs = " ".join(f"{k}={getattr(p.config, k)}" for k in KNOBS)
    knobs += f" speculative_method={p.config.speculative_method}" if p.config.speculative_method else ""
    rate = f" {figure:.3f} req/s" if figure is not None else ""
    return f"{kind}{rate}, {moved} off vLLM's defaults: {knobs}"


def main() -> None:
    study_dir = Path(sys.argv[1]).resolve()
    inp, ctx, model = study_model(study_dir, Path("/tmp/what-launches/scratch"))
    sctx = space_context(inp, base_config(inp), None)
    study = open_study(f"sqlite:///{study_dir / 'study.db'}", resume=True, seed=0)
    base = next(r for r in results_of(study) if r.is_baseline)
    cal = model.calibrate([base], None)
    print(f"study {study_dir.name}: calibrated on its defaults (trial {base.number}, measured {base.best_rate:.3f})")
    configs = sample_space(sctx, 200, inp.settings.seed)
    ranked, _ = refined(model, cal, model.rank(list(configs), cal), configs, sctx, print)
    moved = model.departures
    tie = f"the tie-break (ties within {100 * UNRESOLVED:.0f} %)"
    for name, queue in (("the ranking's order", Queue.of(ranked, {base.config})),
                        (tie, Queue.of(ranked, {base.config}, moved))):  # fmt: skip
        first = queue.next(0, None)
        print(f"== {name}")
        print(f"  first launch: {line(first, moved(first.config))}" if first else "  first launch: none")
        for p in queue.unseen:
            print(f"  its family's launch: {line(p, moved(p.config))}")
    print("== the ties: predictions within the model's resolution of each family's best")
    for fam in ("auto", "fp8"):
        preds = [p for p in ranked if (p.config.kv_cache_dtype or "auto") == fam and p.seq_bound is None]
        figures = [(p.capacity_req_s or p.scaled_req_s or 0.0, p) for p in preds if not p.config.speculative_method]
        if not figures:
            continue
        top = max(f for f, _ in figures)
        for f, p in sorted(figures, key=lambda x: -x[0]):
            if f >= top * (1 - UNRESOLVED):
                print(f"  {fam}: {line(p, moved(p.config))}")


if __name__ == "__main__":
    main()
