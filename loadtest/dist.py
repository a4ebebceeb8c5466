"""Percentiles and :class:`Dist`, the summary of one latency (loadtest.report's and every stored report's)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

PERCENTILES = (50.0, 90.0, 95.0, 99.0)


def percentile_position(n: int, pct: float) -> float:
    """Where the pct-th percentile of n sorted values sits (0 … n−1), linear interpolation's rank."""
    return (n - 1) * min(max(pct, 0.0), 100.0) / 100.0


def percentile(sorted_values: tuple[float, ...] | list[float], pct: float) -> float | None:
    """Linear-interpolated percentile (numpy's default) of already sorted values; None when empty.

    ``inf`` values are allowed (failed requests in SLO checks): a result touching one is ``inf``.
    """
    n = len(sorted_values)
    if n == 0:
        return None
    pos = percentile_position(n, pct)
    lo = math.floor(pos)
    hi = min(lo + 1, n - 1)
    a, b = sorted_values[lo], sorted_values[hi]
    frac = pos - lo
    if frac == 0.0:
        return a
    if math.isinf(a) or math.isinf(b):
        return math.inf
    return a + (b - a) * frac


@dataclass(frozen=True)
class Dist:
    """Summary of one latency, in milliseconds. All None when nothing was measured."""

    mean: float | None = None
    p50: float | None = None
    p90: float | None = None
    p95: float | None = None
    p99: float | None = None

    @classmethod
    def of(cls, sorted_ms: tuple[float, ...]) -> Dist:
        if not sorted_ms:
            return cls()
        ps = [percentile(sorted_ms, p) for p in PERCENTILES]
        return cls(math.fsum(sorted_ms) / len(sorted_ms), *ps)

    def to_dict(self) -> dict[str, float | None]:
        return {"mean": self.mean, "p50": self.p50, "p90": self.p90, "p95": self.p95, "p99": self.p99}

    @classmethod
    def from_dict(cls, d: Mapping[str, float | None] | None) -> Dist:
        """The stored form back (a missing or null one: nothing measured)."""
        d = d or {}
        return cls(d.get("mean"), d.get("p50"), d.get("p90"), d.get("p95"), d.get("p99"))
