"""Does the model improve as a study goes? (issue #24; prints figures, not a test)

    python bench/perfmodel_sequential.py --study h200-llama-3-8b-h200 [--window 3] [--evaluations 80]

Replays a committed study in trial order the way the search would use the model: before each launch of
the defaults' engine family, predict it (the study's own short-level search replayed) from the calibration
so far; then refit on the defaults plus the last ``--window`` launches, warm-started from the previous
calibration, which keeps the checks (predicted before, measured after). Prints each trial's error and the
demonstrated error so far, and compares the online errors with those from the defaults alone.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from perfmodel_rows import study_inputs  # noqa: E402
from perfmodel_studies import ROOT, STUDIES  # noqa: E402

from perfmodel.family import family_of  # noqa: E402
from perfmodel.rank import Candidate, Check, calibrate, predict  # noqa: E402


def sequential(folder: str, window: int, evaluations: int) -> list[str]:
    study = next(s for s in STUDIES if s.folder == folder)
    _, gpu, spec, results, observed = study_inputs(study)
    base = observed[next(r for r in results if r.is_baseline).number]
    t0 = time.monotonic()
    first = cal = calibrate([base], spec, gpu)
    lines = [f"## {folder}: defaults calibrated in {time.monotonic() - t0:.0f} s; then, in trial order:"]
    launched = []
    online, alone = [], []
    for r in results:
        obs = observed[r.number]
        if r.is_baseline or family_of(obs.config) != cal.family or not r.best_rate:
            continue
        cand = Candidate(obs.config, obs.engine)
        pred = predict(cand, cal, obs.demand, study.plan, seed=obs.seed).capacity_req_s or 0.0
        ref = predict(cand, first, obs.demand, study.plan, seed=obs.seed).capacity_req_s or 0.0
        check = Check(r.number, pred, r.best_rate)
        online.append(abs(check.rel_error))
        alone.append(abs(ref - r.best_rate) / r.best_rate)
        launched.append(obs)
        t0 = time.monotonic()
        cal = calibrate(
            [base, *launched[-window:]], spec, gpu, max_evaluations=evaluations, previous=cal.checked(check)
        )
        lines.append(
            f"  trial {r.number}: measured {r.best_rate:.1f}, predicted {pred:.1f} ({100 * check.rel_error:+.1f} %; "
            f"from the defaults alone {ref:.1f}); demonstrated error now {100 * (cal.demonstrated_error or 0):.1f} %"
            f" (refit {time.monotonic() - t0:.0f} s)"
        )
    if online:
        lines.append(
            f"  median |error| online {100 * statistics.median(online):.1f} %, from the defaults alone "
            f"{100 * statistics.median(alone):.1f} % over {len(online)} launches"
        )
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--study", action="append", required=True)
    ap.add_argument("--window", type=int, default=3, help="launches refitted besides the defaults")
    ap.add_argument("--evaluations", type=int, default=80, help="objective evaluations per refit")
    ap.add_argument("--out", default=str(ROOT / "results" / "perfmodel-validation" / "sequential.txt"))
    args = ap.parse_args()
    lines = [f"# python bench/perfmodel_sequential.py {' '.join(sys.argv[1:])}"]
    for folder in args.study:
        more = sequential(folder, args.window, args.evaluations)
        lines += more
        print("\n".join(more), flush=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
