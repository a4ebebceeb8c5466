"""The steady-state model against the committed studies whose levels were judged steady (issue #24 G1; prints
figures, not a test). For each study: calibrate on its defaults (trial 0) alone, as ``tune --predict`` does
before its first launch, predict every other measured configuration of that engine family at steady state,
and compare with the trial's search estimate (its best rate). Per study: median and worst |error| and
Spearman's rank correlation (SciPy); pooled: the errors only. Nothing is measured; the study's own model is rebuilt
offline (scripts/gpu/offline_model.py).

    python bench/perfmodel_steady_studies.py [--engine-ttft[=unqueued]] results/STUDY [...] > OUT.txt
--engine-ttft: calibrate with vLLM's engine-side TTFT of each level as well; =unqueued: only of levels where vLLM's
queue time was under its prefill time (perfmodel.observed.observe; tried 2026-12-08, neither landed).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

Row = tuple[str, int, float, float, bool]  # study, trial, predicted, measured, flagged (seq-bound)


def study_rows(study: Path, scratch: Path, engine_ttft: str = "off") -> list[Row]:
    from offline_model import scratch_study

    _inp, model, results = scratch_study(study, scratch, engine_ttft=engine_ttft)
    base = results.get(0)
    if base is None or not base.best_rate:
        print(f"{study}: no measured defaults (trial 0), skipped", flush=True)
        return []
    cal = model.calibrate([base], None)
    others = {n: r for n, r in sorted(results.items()) if n and r.best_rate}
    preds = {p.config: p for p in model.rank([r.config for r in others.values()], cal)}
    (own,) = model.rank([base.config], cal)
    print(f"{study}: defaults measured {base.best_rate:.3f}, predicted in-sample {own.capacity_req_s or 0:.3f}")
    rows = []
    for n, r in others.items():
        p = preds.get(r.config)
        if p is None or p.capacity_req_s is None:
            print(f"  trial {n}: not predicted ({p.unseen if p else 'no KV budget'})", flush=True)
            continue
        err = 100 * (p.capacity_req_s / r.best_rate - 1)
        flag = "  (flagged)" if p.seq_bound else ""
        print(f"  trial {n}: predicted {p.capacity_req_s:7.3f} measured {r.best_rate:7.3f} {err:+6.1f} %{flag}")
        rows.append((study.name, n, p.capacity_req_s, r.best_rate, bool(p.seq_bound)))
    return rows


def score(title: str, rows: list[Row], *, rank: bool = True) -> None:
    """Median and worst |error|; with ``rank``, Spearman's rho (within one study only: pooled over studies it
    would mostly rank the machines)."""
    from scipy.stats import spearmanr

    if not rows:
        return
    errs = [abs(p / m - 1) for _, _, p, m, _ in rows]
    rho = spearmanr([r[2] for r in rows], [r[3] for r in rows]).statistic if rank and len(rows) > 2 else None
    ranked = f", Spearman rho {rho:.2f}" if rho is not None else ""
    print(f"{title}: n={len(rows)} median |error| {100 * statistics.median(errs):.1f} %, worst "
          f"{100 * max(errs):.1f} %{ranked}", flush=True)  # fmt: skip


def main() -> None:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    flags = [a for a in sys.argv[1:] if a.startswith("--engine-ttft")]
    engine_ttft = (flags[-1].partition("=")[2] or "all") if flags else "off"
    print(f"code {head.stdout.strip()} (perfmodel at {ROOT}) engine TTFT fitted: {engine_ttft}", flush=True)
    every: list[Row] = []
    for k, arg in enumerate(a for a in sys.argv[1:] if not a.startswith("--engine-ttft")):
        rows = study_rows(Path(arg), Path(f"/tmp/perfmodel-steady-studies/{k}"), engine_ttft)
        score("  this study", rows)
        every += rows
    print()
    score("all studies (each from its own defaults)", every, rank=False)
    score("trusted only (not seq-bound)", [r for r in every if not r[4]], rank=False)


if __name__ == "__main__":
    main()
