"""How often a rate held: draws of one configuration at one rate, each a `vllm bench serve` run on its own fresh
server with its own seed (bench/vllm_bench_check.py --json), tallied per rate and duration with a 90 % exact
(Clopper-Pearson) interval for the chance that another draw holds.

    python bench/hold_tally.py results/<folder>/*.json [--confidence 0.9]

Near a configuration's edge one draw of prompts and arrivals decides a run's verdict (docs/certification.md, "How a
stated rate allows for the draw"): a rate that held 4 of 4 draws may still miss the fifth, and 4 of 4 bounds the
chance of a miss only at about 53 % (the 90 % interval for the chance it holds is [0.47, 1]). A run whose verdict is
null (its prompts came from the prefix cache) is counted apart.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from scipy.stats import binomtest


@dataclass(frozen=True)
class Draw:
    """One run's verdict: its nominal rate and seconds, whether it held (None: not judged), what it sent."""

    rate: float
    seconds: float
    held: bool | None
    sent_rate_req_s: float | None


@dataclass(frozen=True)
class Tally:
    """The draws at one rate and duration: how many held, and the interval for the chance that a draw holds."""

    rate: float
    seconds: float
    draws: int
    held: int
    unjudged: int
    low: float  # lower end of the interval for P(hold)
    high: float
    sent_min: float | None
    sent_max: float | None


def draw_of(path: Path) -> Draw:
    """A vllm_bench_check JSON as a Draw; a file of another shape is a ValueError naming it."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or "held" not in data or "rate" not in data:
        raise ValueError(f"{path}: not a bench/vllm_bench_check.py --json file (no 'rate' and 'held')")
    return Draw(float(data["rate"]), float(data["seconds"]), data["held"], data.get("sent_rate_req_s"))


def tally(draws: Iterable[Draw], confidence: float = 0.9) -> list[Tally]:
    """One Tally per (rate, seconds), ordered by rate then seconds."""
    groups: dict[tuple[float, float], list[Draw]] = defaultdict(list)
    for d in draws:
        groups[(d.rate, d.seconds)].append(d)
    out = []
    for (rate, seconds), ds in sorted(groups.items()):
        judged = [d for d in ds if d.held is not None]
        held = sum(1 for d in judged if d.held)
        low, high = _interval(held, len(judged), confidence)
        sent = [d.sent_rate_req_s for d in judged if d.sent_rate_req_s is not None]
        out.append(
            Tally(
                rate,
                seconds,
                len(judged),
                held,
                len(ds) - len(judged),
                low,
                high,
                min(sent, default=None),
                max(sent, default=None),
            )
        )
    return out


def _interval(held: int, draws: int, confidence: float) -> tuple[float, float]:
    if draws == 0:
        return 0.0, 1.0
    ci = binomtest(held, draws).proportion_ci(confidence_level=confidence, method="exact")
    return float(ci.low), float(ci.high)


def render(tallies: Sequence[Tally], confidence: float) -> str:
    pct = f"{confidence:.0%}"
    head = f"| rate | seconds | held / draws | P(hold), {pct} interval | sent at | unjudged |"
    lines = [head, "|---|---|---|---|---|---|"]
    for t in tallies:
        sent = "—" if t.sent_min is None else f"{t.sent_min:.3f}–{t.sent_max:.3f}"
        lines.append(
            f"| {t.rate:.3f} | {t.seconds:.0f} | {t.held} / {t.draws} | [{t.low:.2f}, {t.high:.2f}] | {sent} | "
            f"{t.unjudged} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", nargs="+", type=Path, help="bench/vllm_bench_check.py --json files")
    ap.add_argument("--confidence", type=float, default=0.9)
    args = ap.parse_args(argv)
    try:
        draws = [draw_of(p) for p in args.json]
    except (OSError, ValueError) as exc:
        print(f"hold_tally: {exc}", file=sys.stderr)
        return 2
    print(render(tally(draws, args.confidence), args.confidence))
    return 0


if __name__ == "__main__":
    sys.exit(main())
