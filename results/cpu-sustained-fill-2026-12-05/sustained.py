"""Offline, after run.sh: each run's sustained rate counted from the first answer (as until 2026-12-05) and once the
batch has filled (loadtest.metrics.sustained_rate now), beside the rate that arrived and the mean request lifetime.

    ../../.venv/bin/python sustained.py held.jsonl.gz over.jsonl.gz > sustained.txt
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from loadtest.metrics import sustained_rate  # noqa: E402
from loadtest.records import Chunk, RequestRecord  # noqa: E402


def records(path: Path) -> list[RequestRecord]:
    out = []
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    for line in text.splitlines():
        d = json.loads(line)
        d["chunks"] = tuple(Chunk(t, k) for t, k in d["chunks"])
        out.append(RequestRecord(**d))
    return out


def from_first_answer(recs: list[RequestRecord], skip: float | None = None) -> float:
    """The estimator as it was: tokens streamed from the first answer to the last send, in requests; with ``skip``,
    from that many seconds after the first send instead."""
    recs = [r for r in recs if not r.warmup]
    done = [r.done_at for r in recs if r.ok and r.done_at is not None]
    end = min(max(r.scheduled_at for r in recs), max(done))
    chunks = [c for r in recs for c in r.chunks]
    start = min(c.t for c in chunks) if skip is None else min(r.scheduled_at for r in recs) + skip
    per_request = [sum(c.tokens or 0 for c in r.chunks) for r in recs if r.ok]
    streamed = sum(c.tokens or 0 for c in chunks if start < c.t <= end)
    return streamed / (end - start) / (sum(per_request) / len(per_request))


def main() -> None:
    for arg in sys.argv[1:]:
        recs = [r for r in records(Path(arg)) if not r.warmup]
        sent = [r.scheduled_at for r in recs]
        lives = [r.done_at - r.scheduled_at for r in recs if r.ok and r.done_at is not None]
        print(f"{Path(arg).name.split('.')[0]}: {len(recs)} requests over {max(sent) - min(sent):.0f} s of arrivals "
              f"({(len(recs) - 1) / (max(sent) - min(sent)):.3f} req/s arrived), {len(recs) - len(lives)} failed, "
              f"mean lifetime {sum(lives) / len(lives):.1f} s")  # fmt: skip
        print(f"  sustained from the first answer: {from_first_answer(recs):.3f} req/s")
        print(f"  sustained once the batch filled: {sustained_rate(recs):.3f} req/s")
        later = ", ".join(f"{skip} s: {from_first_answer(recs, skip):.3f}" for skip in (10, 20, 30, 40, 50, 60))
        print(f"  counted from this long after the first send: {later}")


if __name__ == "__main__":
    main()
