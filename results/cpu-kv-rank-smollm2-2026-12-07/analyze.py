"""Phase 4 (offline): each configuration's bracket from its vllm bench serve runs, the figure the plan's rule gives,
and G1's median |error| and Spearman rho against the phase-2 predictions.
    python analyze.py OUT [--plan-only] > analysis.txt   (OUT: predictions.txt and one folder per configuration)
--plan-only: only the plan's steps (0.7, 0.9, 1.1 and 1.3 x the prediction), not the 1.6 x steps added after them."""

import json
import math
import re
import sys
from itertools import pairwise
from pathlib import Path
from statistics import median

from scipy.stats import spearmanr


def runs(folder: Path, top: float) -> list[tuple[float, bool, dict]]:
    out = []
    for f in sorted(folder.glob("bench-*.json")):
        d = json.loads(f.read_text())
        if d["rate"] <= top:
            out.append((d["rate"], bool(d["held"]), d))
    return sorted(out, key=lambda r: r[0])


def figure(held: list[float], missed: list[float]) -> tuple[float, str]:
    lo, hi = max(held, default=None), min(missed, default=None)
    if lo is not None and hi is not None and lo < hi:
        return math.sqrt(lo * hi), f"[{lo:.3f}, {hi:.3f})"
    if lo is not None and hi is not None:  # straddled the wrong way: held above a miss
        return math.sqrt(lo * hi), f"straddled: held {lo:.3f}, missed {hi:.3f} (marked)"
    if lo is not None:
        return lo, f"[{lo:.3f}, open) (marked: its lower bound)"
    return hi, f"(open, {hi:.3f}) (marked: its upper bound)"


def main() -> None:
    out = Path(sys.argv[1])
    preds = dict(re.findall(r"^([a-e]-\S+): predicted ([0-9.]+)", (out / "predictions.txt").read_text(), re.M))
    rows = []
    for name, pred in preds.items():
        rs = runs(out / name, 1.31 * float(pred) if "--plan-only" in sys.argv else math.inf)
        if not rs:
            print(f"{name}: not measured")
            continue
        held = [r for r, ok, _ in rs if ok]
        missed = [r for r, ok, _ in rs if not ok]
        fig, bracket = figure(held, missed)
        err = (float(pred) - fig) / fig
        rows.append((name, float(pred), fig, err, held, missed))
        print(f"{name}: predicted {float(pred):.3f}; measured {bracket}, figure {fig:.3f}; error {err:+.1%}")
        for rate, ok, d in rs:
            s, sv = d["steady"], d["server"]
            why = "; ".join(s["reasons"]) if s["reasons"] else ""
            print(
                f"    {rate:.3f}: {'held' if ok else 'missed'}; p95 TTFT {d['slo_values']['ttft_p95']:.0f} ms, "
                f"{d['completed']}/{d['requests']} answered, {s['lifetimes']:.1f} lifetimes, "
                f"preemptions {sv.get('preemptions')}, KV tokens {sv.get('kv_cache_tokens')}, "
                f"KV peak {100 * (sv.get('kv_cache_usage_peak') or 0):.0f} %{'; ' + why if why else ''}"
            )
    if len(rows) >= 3:
        errs = [abs(r[3]) for r in rows]
        rho = spearmanr([r[1] for r in rows], [r[2] for r in rows]).statistic
        print(f"\nn = {len(rows)}: median |error| {median(errs):.1%}, worst {max(errs):.1%}, Spearman rho {rho:.2f}")
    order = sorted(rows, key=lambda r: -r[1])
    for hi, lo in pairwise(order):
        shown = bool(hi[4]) and bool(lo[5]) and max(hi[4]) >= min(lo[5])
        print(f"{hi[0]} above {lo[0]}: {'shown (brackets apart)' if shown else 'not shown by brackets'}")


if __name__ == "__main__":
    main()
