"""Offline simulation (nothing measured): where should a certification's second soak go after its first missed?
Reads every committed best.json certification whose first soak missed and which certified a rate. Each case's
unknown edge is put between its certified rate and the lowest rate it missed above that (at fraction 0, 0.5, 0.99 of
the way); a soak holds when its rate is at or under the edge. The ladder of tuner/certify/confirming.py (STEP 0.9,
MAX_SOAKS 5, bisection after a hold) is replayed with three rules for the second soak, counting soaks before the
confirmation and the certified rate over the edge. A later miss is assumed to have kept up with 0.8 x its rate.

    python sim.py > sim.txt
"""

from __future__ import annotations

import glob
import json
import statistics
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1]
STEP = 0.9
MAX_SOAKS = 5
Case = tuple[str, float, float, float, float]  # study, first rate, what it kept up with, certified, lowest miss above


def cases() -> list[Case]:
    out = []
    for b in sorted(glob.glob(str(RESULTS / "**" / "best.json"), recursive=True)):
        for c in json.loads(Path(b).read_text()).get("certifications") or []:
            soaks, cert = c.get("soaks") or [], c.get("certified_rate_req_s")
            if not soaks or soaks[0].get("holds") or not cert:
                continue
            r1 = soaks[0]["rate_req_s"]
            s1 = soaks[0].get("sustained_req_s") or soaks[0].get("throughput_req_s") or r1
            above = [s["rate_req_s"] for s in soaks if not s["holds"] and s["rate_req_s"] > cert]
            out.append((str(Path(b).parent.relative_to(RESULTS)), r1, s1, cert, min(above) if above else r1))
    return out


def eligible(soaks: list[tuple[float, bool, float]]) -> list[float]:
    return [r for r, h, _ in soaks if h and all(m > r for m, held, _ in soaks if not held)]


def ladder(r1: float, s1: float, edge: float, second: Callable[[float, float], float]) -> tuple[int, float]:
    """Soaks before the confirmation, and the rate certified, for one case under one rule for the second soak."""
    soaks = [(r1, False, s1)]
    while len(soaks) < MAX_SOAKS:
        held = eligible(soaks)
        if not held:
            last_r, _, last_s = soaks[-1]
            r = second(r1, s1) if len(soaks) == 1 else STEP * min(last_r, last_s)
        else:
            lo = max(held)
            hi = min((r for r, h, _ in soaks if not h and r > lo), default=None)
            if hi is None or lo >= STEP * hi:
                break
            r = (lo + hi) / 2
        ok = r <= edge
        soaks.append((r, ok, r if ok else 0.8 * r))
    return len(soaks), max(eligible(soaks), default=0.0)


RULES: dict[str, Callable[[float, float], float]] = {
    "A (today): 0.9 x min(rate, kept up with)": lambda r, s: STEP * min(r, s),
    "B: max(A, 0.81 x rate)": lambda r, s: max(STEP * min(r, s), STEP * STEP * r),
    "C: 0.86 x rate": lambda r, s: 0.86 * r,
}


def main() -> None:
    found = cases()
    print(f"{len(found)} certifications whose first soak missed")
    for frac in (0.0, 0.5, 0.99):
        print(f"edge = certified + {frac} x (lowest miss above - certified)")
        for name, rule in RULES.items():
            runs = [ladder(r1, s1, cert + frac * (m - cert), rule) for _, r1, s1, cert, m in found]
            edges = [cert + frac * (m - cert) for _, _, _, cert, m in found]
            ratios = [got / edge for edge, (_, got) in zip(edges, runs, strict=True)]
            n = [k for k, _ in runs]
            print(f"  {name:42s} soaks mean {statistics.mean(n):.2f}, median {statistics.median(n)}; "
                  f"certified / edge median {statistics.median(ratios):.3f}, min {min(ratios):.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
