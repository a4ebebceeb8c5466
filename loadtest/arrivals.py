"""Arrival schedules for open-loop load: offsets in seconds from the start, reproducible by seed.

- ``constant``: exactly ``1 / rate`` apart.
- ``poisson``: exponential gaps with mean ``1 / rate``.
- ``gamma``: gamma gaps with shape ``burstiness`` and mean ``1 / rate``; burstiness 1 is Poisson,
  below 1 burstier (clustered), above 1 more regular.
"""

from __future__ import annotations

import random

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
) -> list[float]:
    """Send offsets: the first at 0, then one gap after another, ``count`` of them or all before
    ``duration_s``."""
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival {arrival!r}; use one of {', '.join(ARRIVALS)}")
    if rate <= 0 or burstiness <= 0:
        raise ValueError(f"rate and burstiness must be > 0, got rate={rate}, burstiness={burstiness}")
    if (count is None) == (duration_s is None):
        raise ValueError("give exactly one of count and duration_s")
    rng = random.Random(f"{seed}:arrivals")
    out: list[float] = []
    t = 0.0
    while (count is not None and len(out) < count) or (duration_s is not None and t < duration_s):
        out.append(t)
        t += _gap(rng, rate, arrival, burstiness)
    return out
