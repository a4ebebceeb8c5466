"""Offline, dev machine, after run.sh: predicted (predict-before.txt, written before the run) against certified (the
run's study), per point and pooled: |error|, median, and Spearman's rank correlation (SciPy); then the same points
predicted from this run's own defaults (trial 0), the calibration tune --predict would have used.

    ../../.venv/bin/python analyze.py STUDY_DIR > analysis.txt
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
from tuner.certify.certified import stored  # noqa: E402
from tuner.search.study import open_study, results_of  # noqa: E402


def before() -> dict[str, tuple[float, bool]]:
    """label -> (predicted req/s, flagged) from predict-before.txt."""
    out = {}
    for line in (HERE / "predict-before.txt").read_text().splitlines():
        m = re.match(r"(\S+ x \S+)\s+predicted\s+([\d.]+) req/s\s+(FLAGGED|trusted)", line)
        if m:
            out[m[1]] = (float(m[2]), m[3] == "FLAGGED")
    return out


def score(title: str, rows: list[tuple[str, float, bool, float]]) -> None:
    print(f"\n{title}")
    for label, pred, flagged, cert in rows:
        print(f"  {label:11} predicted {pred:7.3f}  certified {cert:7.3f}  {100 * (pred / cert - 1):+6.1f} %"
              f"{'  (flagged)' if flagged else ''}")  # fmt: skip
    for name, subset in (("all", rows), ("trusted", [r for r in rows if not r[2]])):
        errs = [abs(p / c - 1) for _, p, _, c in subset]
        rho = spearmanr([r[1] for r in subset], [r[3] for r in subset]).statistic if len(subset) > 2 else float("nan")
        print(f"  {name:8} n={len(subset)}: median |error| {100 * statistics.median(errs):.1f} %, "
              f"worst {100 * max(errs):.1f} %, Spearman rho {rho:.2f}")  # fmt: skip


def main() -> None:
    study_dir = Path(sys.argv[1])
    study = open_study(f"sqlite:///{study_dir / 'study.db'}", resume=True, seed=0)
    results, certs = {r.number: r for r in results_of(study)}, stored(study)
    by_label = {}
    for n, r in results.items():
        for label, entry in POINTS.items():
            if n and all(getattr(r.config, k) == v for k, v in knobs(entry).items() if k != "speculative_method"):
                by_label[label] = n
    print(f"defaults (trial 0): certified {certs[0].certified_rate:.3f} on {certs[0].servers} servers")
    for label, n in by_label.items():
        c = certs.get(n)
        print(f"{label:11} trial {n}: search held {results[n].best_rate or 0:.3f}; "
              f"certified {c.certified_rate if c else None} ({c.servers if c else '-'} servers)")  # fmt: skip
    ok = {lab: n for lab, n in by_label.items() if (c := certs.get(n)) and c.certified_rate}
    pre = before()
    score("predicted before the run (the two-server run's defaults, 14.117)",
          [(lab, *pre[lab], certs[n].certified_rate) for lab, n in ok.items()])  # fmt: skip
    model, _, base = calibrated()
    cal = model.calibrate([results[0]], None)
    rows = []
    for lab, n in ok.items():
        (p,) = model.rank([replace(base, **knobs(POINTS[lab]))], cal)
        rows.append((lab, p.capacity_req_s or 0.0, p.seq_bound is not None, certs[n].certified_rate))
    score("predicted from this run's own defaults (trial 0)", rows)


if __name__ == "__main__":
    main()
