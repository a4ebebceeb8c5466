"""Offline, after analyze.py: both SmolLM2 sittings' configurations together (ten, each predicted from its own
sitting's defaults, the first block of each analysis.txt): median |error| and Spearman's rank correlation. One
model, workload and host type, so the ten share one scale; the sittings' own noise (~18 % between two measurements
of one configuration) is in it.

    ../../.venv/bin/python pooled.py > pooled.txt
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

from scipy.stats import spearmanr

HERE = Path(__file__).resolve().parent
SITTINGS = (HERE.parent / "cpu-predict-rank-smollm2-2026-12-05", HERE)
ROW = re.compile(r"\s+(\d+ x \d+)\s+predicted\s+([\d.]+)\s+measured\s+([\d.]+)\s+([+-][\d.]+) %(\s+\(flagged\))?")


def first_block(path: Path) -> list[tuple[str, float, float, bool]]:
    """The rows predicted from that run's own defaults (the block before the first blank line after its title)."""
    text = path.read_text().split("predicted from this run's own defaults", 1)[1].split("\n\n", 1)[0]
    return [(m[1], float(m[2]), float(m[3]), bool(m[5])) for m in map(ROW.match, text.splitlines()) if m]


def main() -> None:
    rows = []
    for sitting in SITTINGS:
        for label, pred, meas, flagged in first_block(sitting / "analysis.txt"):
            rows.append((f"{sitting.name}: {label}", pred, meas, flagged))
            print(f"{sitting.name:40} {label:11} predicted {pred:7.3f} measured {meas:7.3f} "
                  f"{100 * (pred / meas - 1):+6.1f} %{'  (flagged)' if flagged else ''}")  # fmt: skip
    for name, subset in (("all", rows), ("trusted", [r for r in rows if not r[3]])):
        errs = [abs(p / m - 1) for _, p, m, _ in subset]
        rho = spearmanr([r[1] for r in subset], [r[2] for r in subset]).statistic
        print(f"{name:8} n={len(subset)}: median |error| {100 * statistics.median(errs):.1f} %, "
              f"worst {100 * max(errs):.1f} %, Spearman rho {rho:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
