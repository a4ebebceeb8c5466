"""Replay the soak beside the defaults (tuner.certify.gain_check) on every committed study that states a certified gain:
what its headline would say of the gain from the soaks it already holds. Nothing is measured.

    python bench/gain_replay.py [results] > results/gain-beside-replay-2026-12-06/replay.md

"not shown": the defaults missed no rate above what they held, up to the best's certified rate, so no soak could show
the gain. "soak due at R": the best would soak at R beside the defaults' miss there (not run for these studies).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tuner.certify.certification import Certification  # noqa: E402
from tuner.certify.gain_check import beside, verdict  # noqa: E402
from tuner.document.study import StudyDocument  # noqa: E402


def certified_gain(doc: StudyDocument) -> tuple[Certification, Certification, float] | None:
    """(best's, defaults' certification, gain) where the headline states a certified gain above zero."""
    head = doc.headline
    if head is None or head.gain_basis != "certified" or (head.gain_over_baseline or 0) <= 0:
        return None
    best = next((c for c in doc.certifications if c.trial == head.best_trial), None)
    want = head.baseline_certified_rate_req_s
    base = next((c for c in doc.certifications if c.trial != head.best_trial and c.certified_rate == want), None)
    return (best, base, head.gain_over_baseline or 0.0) if best is not None and base is not None else None


def row(study: str, best: Certification, base: Certification, gain: float) -> str:
    said = verdict(best, base)
    where = beside(best, base)
    if said is not None and said.unshown is not None:
        now = "**not shown**: " + said.unshown.removeprefix("but ").split(":")[0]
    elif said is not None and said.check is not None:
        now = said.check.phrase().split(":")[0] + f" ({said.check.soak.rate:.3f}; shown: {said.shown})"
    elif where is not None:
        now = f"soak due at {where.rate_req_s:.3f} (the defaults' soak {where.attempt + 1} missed it)"
    else:
        now = "no gain claimed"
    misses = ", ".join(f"{s.rate:.3f}" for s in base.soaks if not s.holds) or "none"
    return (
        f"| {study} | {gain * 100:+.0f} % | {best.certified_rate:.3f} | {base.certified_rate:.3f} | {misses} | {now} |"
    )


def main(results: Path) -> None:
    print("| study | certified gain | best | defaults | the defaults' missed soaks | under the soak beside them |")
    print("|---|---|---|---|---|---|")
    shown = due = 0
    for path in sorted(results.glob("**/best.json")):
        found = certified_gain(StudyDocument.from_json(path))
        if found is None:
            continue
        line = row(str(path.parent.relative_to(results)), *found)
        shown, due = shown + ("not shown" in line), due + ("not shown" not in line)
        print(line)
    print(f"\n{shown + due} certified gains: {shown} not shown without a soak; {due} where a soak beside the defaults")
    print("can show it (run for one of them only, by a later tune call)")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "results")
