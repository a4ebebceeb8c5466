"""Offline, dev machine, after run.sh: each configuration predicted from this run's own defaults (trial 0, the
calibration tune --predict would have used) against what the run measured (its search estimate: the highest rate
that held, and the lowest that missed above it), per point and pooled: |error|, median, Spearman's rank correlation
(SciPy); then the figures of predict-before.txt (another host's defaults) beside them; then each point left out of a
calibration on the defaults and the four others (what the search's refits would know).

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
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "scripts" / "gpu"))

from offline_model import scratch_study  # noqa: E402
from predict_before import POINTS, knobs  # noqa: E402

from tuner.tune_setup import base_config  # noqa: E402

Row = tuple[str, float, bool, float]  # label, predicted, flagged, measured


def before(here: Path) -> dict[str, tuple[float, bool]]:
    """label -> (predicted req/s, flagged) from ``here``'s predict-before.txt."""
    out = {}
    for line in (here / "predict-before.txt").read_text().splitlines():
        m = re.match(r"(\S+ x \S+)\s+predicted\s+([\d.]+) req/s\s+(FLAGGED|trusted)", line)
        if m:
            out[m[1]] = (float(m[2]), m[3] == "FLAGGED")
    return out


def missed_above(result) -> float | None:
    """The lowest rate level that missed above the search estimate (None: none did)."""
    held = result.best_rate or 0.0
    misses = [lv.rate for lv in result.levels if lv.kind == "rate" and not lv.passed and lv.rate and lv.rate > held]
    return min(misses) if misses else None


def score(title: str, rows: list[Row]) -> None:
    print(f"\n{title}")
    for label, pred, flagged, meas in rows:
        print(f"  {label:11} predicted {pred:7.3f}  measured {meas:7.3f}  {100 * (pred / meas - 1):+6.1f} %"
              f"{'  (flagged)' if flagged else ''}")  # fmt: skip
    for name, subset in (("all", rows), ("trusted", [r for r in rows if not r[2]])):
        if not subset:
            continue
        errs = [abs(p / m - 1) for _, p, _, m in subset]
        rho = spearmanr([r[1] for r in subset], [r[3] for r in subset]).statistic if len(subset) > 2 else float("nan")
        print(f"  {name:8} n={len(subset)}: median |error| {100 * statistics.median(errs):.1f} %, "
              f"worst {100 * max(errs):.1f} %, Spearman rho {rho:.2f}")  # fmt: skip


def main() -> None:
    analyze(Path(sys.argv[1]), POINTS, "sitting d's defaults, another host", Path("/tmp/predict-rank-smollm2/analyze"))


def analyze(study_dir: Path, points: dict[str, str], before_label: str, scratch: Path, here: Path = HERE) -> None:
    """The figures of analysis.txt for a sitting that measured ``points`` (label -> --try-first entry) in
    ``study_dir``, whose predict-before.txt lies in ``here`` (another sitting's analyze.py calls this)."""
    inp, model, results = scratch_study(study_dir, scratch)
    base = results[0]
    print(f"defaults (trial 0): held {base.best_rate or 0:.3f}, missed {missed_above(base)}")
    by_label = {}
    for n, r in results.items():
        for label, entry in points.items():
            if n and all(getattr(r.config, k) == v for k, v in knobs(entry).items() if k != "speculative_method"):
                by_label[label] = n
    for label, n in by_label.items():
        r = results[n]
        print(f"{label:11} trial {n}: {r.state}, held {r.best_rate or 0:.3f}, missed {missed_above(r)}")
    measured = {lab: results[n].best_rate for lab, n in by_label.items() if results[n].best_rate}
    cal = model.calibrate([base], None)
    (own,) = model.rank([base.config], cal)
    print(f"vLLM's defaults predicted in-sample: {own.capacity_req_s or 0:.3f}")
    rows = []
    for lab, meas in measured.items():
        (p,) = model.rank([replace(base_config(inp), **knobs(points[lab]))], cal)
        rows.append((lab, p.capacity_req_s or 0.0, p.seq_bound is not None, meas))
    score("predicted from this run's own defaults (trial 0), against the search estimates", rows)
    pre = before(here)
    score(f"predict-before.txt ({before_label}), against the same",
          [(lab, *pre[lab], meas) for lab, meas in measured.items()])  # fmt: skip
    rows = []
    for lab, meas in measured.items():  # as tune --predict refits: on the defaults and every other launch
        others = [results[n] for other, n in by_label.items() if other != lab and other in measured]
        config = replace(base_config(inp), **knobs(points[lab]))
        (p,) = model.rank([config], model.calibrate([base, *others], cal))
        rows.append((lab, p.capacity_req_s or 0.0, p.seq_bound is not None, meas))
    score("left out: calibrated on the defaults and the four other points", rows)


if __name__ == "__main__":
    main()
