"""GPU time to a certified winner (#24 G3), from a study's tune.log: the seconds of each launch, of the
certification and of everything else the tune calls did (their start, the model's rankings and refits).

    python bench/time_to_certified.py results/<study>/tune.log [--against 2707]

A launch is its trial's first line (config, then vLLM starting) to its last (its last level); the certification is
every ``[trial certify N]`` line's span per tune call; a tune call runs from its first timestamped line to its
last. A device call's own start (staging vLLM) and any waiting between calls is not in the log and not counted.
"""

from __future__ import annotations

import argparse
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

LINE = re.compile(r"^\[(\d\d):(\d\d):(\d\d)\] \[trial ([^\]]+)\] (.*)$")


@dataclass(frozen=True)
class Event:
    call: int  # which tune call of the log (a "resolved settings" line starts one)
    t: float  # seconds since the log's first line (a wrap past midnight adds a day)
    tag: str  # the trial's tag: "0", "1", "predict", "certify 1", "-"
    text: str


def events(log: str) -> list[Event]:
    out: list[Event] = []
    call, last, day = -1, None, 0.0
    for raw in log.splitlines():
        m = LINE.match(raw)
        if not m:
            continue
        h, mi, s, tag, text = m.groups()
        t = int(h) * 3600 + int(mi) * 60 + int(s) + day
        if last is not None and t < last - 3600:  # past midnight
            day += 86400.0
            t += 86400.0
        last = t
        if text.startswith("resolved settings"):
            call += 1
        out.append(Event(max(call, 0), t, tag, text))
    return out


def spans(evs: list[Event]) -> dict[str, float]:
    """Seconds per phase: launch N (per trial), certification, tune calls in all, and the rest of them."""
    first: dict[tuple[int, str], float] = {}
    last: dict[tuple[int, str], float] = {}
    calls: dict[int, list[float]] = defaultdict(list)
    for e in evs:
        key = (e.call, e.tag)
        first.setdefault(key, e.t)
        last[key] = e.t
        calls[e.call].append(e.t)
    out: dict[str, float] = defaultdict(float)
    for (_call, tag), t0 in first.items():
        span = last[(_call, tag)] - t0
        if tag.isdigit():
            out[f"launch {tag}"] += span
        elif tag.startswith("certify"):
            out["certification"] += span
    out["tune calls"] = sum(max(ts) - min(ts) for ts in calls.values())
    counted = sum(v for k, v in out.items() if k.startswith("launch") or k == "certification")
    out["rest (call starts, rankings, refits)"] = out["tune calls"] - counted
    return dict(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", type=Path)
    ap.add_argument("--against", type=float, help="seconds of the study compared with (G3: the 10-trial study's)")
    args = ap.parse_args()
    evs = events(args.log.read_text())
    res = spans(evs)
    for k, v in sorted(res.items(), key=lambda kv: (not kv[0].startswith("launch"), kv[0])):
        print(f"{k:40s} {v:7.0f} s")
    print(f"{'(tune calls in the log)':40s} {len({e.call for e in evs}):7d}")
    if args.against:
        print(f"tune calls / {args.against:.0f} s = {res['tune calls'] / args.against:.2f}")


if __name__ == "__main__":
    main()
