"""Stand-ins for certification's tests: a soak of a given outcome, and a server that only counts its starts."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from loadtest.summary import ReportSummary
from tuner.certify.certification import Soak


def soak(rate: float, holds: bool, sustained: float | None = None) -> Soak:
    return Soak(rate, 30.0, holds, () if holds else ("last half missed ttft_p95 2,400 ms",), rate, 10 * rate,
                rate if sustained is None else sustained, {"ttft_p95": 900.0 if holds else 2400.0}, {},
                ReportSummary())  # fmt: skip


@dataclass
class FakeServer:
    url: str = "http://fake:1"
    started: list[str] = field(default_factory=list)


def serving(server: FakeServer):
    @contextlib.contextmanager
    def serve():
        server.started.append("start")
        yield server
        server.started.append("stop")

    return serve


def numbered_servers():
    """A fresh server per start, its url the start's number ("0", "1", ...): who held which soak."""
    starts = iter(range(1000))

    @contextlib.contextmanager
    def serve():
        yield FakeServer(url=str(next(starts)))

    return serve
