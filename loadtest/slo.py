"""Service-level objectives: ``ttft_p95=2s,tpot_p99=80ms`` parsed into frozen records.

Shared by ``loadtest`` (goodput) and ``tuner`` (constraints). Pure Python, no heavy imports.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

METRICS = ("ttft", "tpot", "itl", "e2e")
METRIC_HELP = {
    "ttft": "time to first token",
    "tpot": "time per output token after the first",
    "itl": "inter-token latency",
    "e2e": "end-to-end request latency",
}
_UNITS_MS = {"ms": 1.0, "s": 1000.0}
_PART = re.compile(r"^(?P<metric>[a-z0-9]+)_p(?P<pct>\d{1,2}(?:\.\d+)?)=(?P<value>\d+(?:\.\d+)?)(?P<unit>ms|s)$")
VALID_FORM = "METRIC_pNN=VALUE(s|ms), e.g. ttft_p95=2s,tpot_p99=80ms (metrics: ttft, tpot, itl, e2e; p50..p99.9)"


class SLOError(ValueError):
    """A malformed SLO string; the message names the bad part and the valid form."""


@dataclass(frozen=True)
class SLO:
    """One promise: ``percentile`` of ``metric`` stays at or under ``limit_ms``."""

    metric: str
    percentile: float
    limit_ms: float

    @property
    def key(self) -> str:
        """Name of this SLO as written by users, e.g. ``ttft_p95``."""
        return f"{self.metric}_p{_fmt_pct(self.percentile)}"

    def __str__(self) -> str:
        limit = f"{self.limit_ms / 1000:g}s" if self.limit_ms >= 1000 else f"{self.limit_ms:g}ms"
        return f"{self.key}={limit}"

    def met_by(self, value_ms: float | None) -> bool:
        """True when a measured value keeps this promise (a missing value never does)."""
        return value_ms is not None and value_ms <= self.limit_ms


def _fmt_pct(p: float) -> str:
    return f"{p:g}"


def parse_slos(text: str) -> tuple[SLO, ...]:
    """Parse ``ttft_p95=2s,tpot_p99=80ms``. Raises SLOError naming the bad part."""
    if not text or not text.strip():
        raise SLOError(f"empty SLO; expected {VALID_FORM}")
    slos: list[SLO] = []
    for raw in text.split(","):
        part = raw.strip()
        m = _PART.match(part)
        if not m:
            metric = part.split("_", 1)[0].split("=", 1)[0]
            if metric and metric not in METRICS:
                raise SLOError(f"unknown SLO metric {metric!r} in {part!r}; valid metrics: {', '.join(METRICS)}")
            raise SLOError(f"malformed SLO {part!r}; expected {VALID_FORM}")
        metric, pct = m["metric"], float(m["pct"])
        if metric not in METRICS:
            raise SLOError(f"unknown SLO metric {metric!r} in {part!r}; valid metrics: {', '.join(METRICS)}")
        if not 50 <= pct <= 99.9:
            raise SLOError(f"percentile p{m['pct']} in {part!r} is out of range; use p50..p99.9")
        limit = float(m["value"]) * _UNITS_MS[m["unit"]]
        if limit <= 0:
            raise SLOError(f"limit in {part!r} must be positive")
        slo = SLO(metric, pct, limit)
        if any(s.key == slo.key for s in slos):
            raise SLOError(f"SLO {slo.key} given twice")
        slos.append(slo)
    return tuple(slos)


def format_slos(slos: tuple[SLO, ...]) -> str:
    """Inverse of :func:`parse_slos`."""
    return ",".join(str(s) for s in slos)
