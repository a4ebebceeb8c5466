"""Offline, after run.sh: the second sitting (levels past their cap for at most 120 s) beside this one (180 s), per
configuration: the search estimate (trials.csv), the levels that missed (marked where a window of fewer than four
lifetimes was among the reasons), and the trial's note on a level that met the SLO but ended unjudged (tune.log).

    python3 compare_windows.py > compare-windows.txt
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITTINGS = {"b (120 s)": HERE.parent / "cpu-predict-rank-smollm2-2026-12-05-b" / "rank", "c (180 s)": HERE / "rank"}
LEVEL = re.compile(r"\[trial (\d+)\] rate ([\d.]+)/s for (\d+) s: (met|missed) \((.*)")
UNJUDGED = re.compile(r"\[trial (\d+)\] a level at ([\d.]+) req/s met the SLO but ended unjudged")


def trials(study: Path) -> dict[int, tuple[str, float]]:
    """trial -> (max_num_seqs x batched tokens, search estimate)."""
    out = {}
    with (study / "trials.csv").open() as f:
        for row in csv.DictReader(f):
            label = f"{row['max_num_seqs'] or 'default'} x {row['max_num_batched_tokens'] or 'default'}"
            out[int(row["number"])] = (label, float(row["best_rate_req_s"] or 0))
    return out


def levels(study: Path) -> dict[int, list[str]]:
    """trial -> its missed levels, each 'RATE (S s[, window])', and its unjudged notes."""
    out: dict[int, list[str]] = {}
    for line in (study / "tune.log").read_text().splitlines():
        if (m := LEVEL.search(line)) and m[4] == "missed":
            window = ", <4 lifetimes" if "fewer than 4" in m[5] else ""
            out.setdefault(int(m[1]), []).append(f"{m[2]} ({m[3]} s{window})")
        elif m := UNJUDGED.search(line):
            out.setdefault(int(m[1]), []).append(f"UNJUDGED {m[2]}")
    return out


def main() -> None:
    for name, study in SITTINGS.items():
        print(f"sitting {name}: {study.relative_to(HERE.parent)}")
        missed = levels(study)
        for n, (label, estimate) in trials(study).items():
            print(f"  trial {n} {label:17} estimate {estimate:6.3f}  missed: {', '.join(missed.get(n, [])) or '-'}")


if __name__ == "__main__":
    main()
