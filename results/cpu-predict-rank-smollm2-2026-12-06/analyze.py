"""Offline, dev machine, after run.sh: predicted (predict-before.txt, written before the run) against measured (the
run's study: each trial's search estimate, the highest level that held), per point and pooled: |error|, median,
and Spearman's rank correlation (SciPy); then the same points predicted from this run's own defaults (trial 0), the
calibration `tune --predict` would have used.

    VLLM_CPU_KVCACHE_SPACE=1 ../../.venv/bin/python analyze.py STUDY_DIR > analysis.txt
"""

from __future__ import annotations

import re
import statistics
import sys
from dataclasses import replace
from pathlib import Path

from scipy.stats import spearmanr

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from explore import calibrated  # noqa: E402
from predict_before import POINTS, knobs  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402

Row = tuple[str, float, bool, float]  # label, predicted, flagged, measured


def before() -> dict[str, tuple[float, bool]]:
    """label -> (predicted req/s, flagged) from predict-before.txt."""
    out = {}
    for line in (HERE / "predict-before.txt").read_text().splitlines():
        m = re.match(r"(\S+ x \S+)\s+predicted\s+([\d.]+) req/s\s+(FLAGGED|trusted)", line)
        if m:
            out[m[1]] = (float(m[2]), m[3] == "FLAGGED")
    return out


def score(title: str, rows: list[Row]) -> None:
    print(f"\n{title}")
    for label, pred, flagged, meas in rows:
        print(f"  {label:10} predicted {pred:6.3f}  measured {meas:6.3f}  {100 * (pred / meas - 1):+6.1f} %"
              f"{'  (flagged)' if flagged else ''}")  # fmt: skip
    errs = [abs(p / m - 1) for _, p, _, m in rows]
    rho = spearmanr([r[1] for r in rows], [r[3] for r in rows]).statistic if len(rows) > 2 else float("nan")
    print(f"  n={len(rows)}: median |error| {100 * statistics.median(errs):.1f} %, worst {100 * max(errs):.1f} %, "
          f"Spearman rho {rho:.2f}")  # fmt: skip


def main() -> None:
    study_dir = Path(sys.argv[1])
    results = {r.number: r for r in results_of(open_study(f"sqlite:///{study_dir / 'study.db'}", resume=True, seed=0))}
    by_label = {}
    for n, r in results.items():
        for label, entry in POINTS.items():
            if n and all(getattr(r.config, k) == v for k, v in knobs(entry).items() if k != "speculative_method"):
                by_label[label] = n
    print(f"defaults (trial 0): the search's estimate {results[0].best_rate or 0:.3f} req/s")
    for label, n in by_label.items():
        print(f"{label:10} trial {n}: the search's estimate {results[n].best_rate or 0:.3f} req/s")
    ok = {lab: n for lab, n in by_label.items() if results[n].best_rate}
    pre = before()
    score("predicted before the run (the thin-margin study's defaults)",
          [(lab, *pre[lab], results[n].best_rate) for lab, n in ok.items()])  # fmt: skip
    model, _, base = calibrated()
    cal = model.calibrate([results[0]], None)
    rows = []
    for lab, n in ok.items():
        (p,) = model.rank([replace(base, **knobs(POINTS[lab]))], cal)
        rows.append((lab, p.capacity_req_s or 0.0, p.seq_bound is not None, results[n].best_rate))
    score("predicted from this run's own defaults (trial 0)", rows)


if __name__ == "__main__":
    main()
