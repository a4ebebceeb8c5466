"""Arrival schedules for open-loop load: offsets in seconds from the start, reproducible by seed.

- ``constant``: exactly ``1 / rate`` apart.
- ``poisson``: exponential gaps with mean ``1 / rate``.
- ``gamma``: gamma gaps with shape ``burstiness`` and mean ``1 / rate``; burstiness 1 is Poisson,
  below 1 burstier (clustered), above 1 more regular.

With ``rate_window_s``, the random gaps come in windows of ``round(rate × rate_window_s)`` arrivals, each window's
gaps scaled to span exactly its count / rate: every window sends the nominal rate, and within it the arrivals keep
their shape (Poisson gaps so scaled are a Poisson process given its count). Free gaps send a count that varies by
about 1/√n with the draw (7 % over 180 s at 2.5 req/s), so a run tests another rate than it names. vLLM's own
benchmark client scales its gaps to its run's span; ``loadtest.spec.rate_window_s`` gives a run its planned span.
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator

ARRIVALS = ("poisson", "constant", "gamma")


def _gap(rng: random.Random, rate: float, arrival: str, burstiness: float) -> float:
    if arrival == "constant":
        return 1.0 / rate
    if arrival == "poisson" or burstiness == 1.0:
        return rng.expovariate(rate)
    return rng.gammavariate(burstiness, 1.0 / (rate * burstiness))


def schedule(
    rate: float,
    *,
    count: int | None = None,
    duration_s: float | None = None,
    arrival: str = "poisson",
    burstiness: float = 1.0,
    seed: int = 0,
    rate_window_s: float | None = None,
) -> list[float]:
    """Send offsets: the first at 0, then one gap after another, ``count`` of them or all before
    ``duration_s``; with ``rate_window_s``, each window of gaps scaled to the nominal rate."""
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival {arrival!r}; use one of {', '.join(ARRIVALS)}")
    if rate <= 0 or burstiness <= 0:
        raise ValueError(f"rate and burstiness must be > 0, got rate={rate}, burstiness={burstiness}")
    if (count is None) == (duration_s is None):
        raise ValueError("give exactly one of count and duration_s")
    if rate_window_s is not None and not rate_window_s > 0:
        raise ValueError(f"rate_window_s must be > 0 seconds, got {rate_window_s}")
    rng = random.Random(f"{seed}:arrivals")
    needed = count if count is not None else math.ceil(rate * (duration_s or 0)) + 1
    gaps = _windowed(rng, rate, arrival, burstiness, rate_window_s, needed)
    out: list[float] = []
    t = 0.0
    while (count is not None and len(out) < count) or (duration_s is not None and t < duration_s):
        out.append(t)
        t += next(gaps)
    return out


def _windowed(
    rng: random.Random, rate: float, arrival: str, burstiness: float, window_s: float | None, needed: int
) -> Iterator[float]:
    """Gaps one after another; with ``window_s``, drawn a window at a time and scaled so that each window of
    ``n`` gaps spans ``n / rate`` seconds (no more gaps a window than the run needs: a huge rate stays cheap)."""
    n = 1 if window_s is None or arrival == "constant" else max(1, min(round(rate * window_s), needed))
    while True:
        window = [_gap(rng, rate, arrival, burstiness) for _ in range(n)]
        scale = 1.0 if n == 1 else n / rate / sum(window)
        yield from (g * scale for g in window)
