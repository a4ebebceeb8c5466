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
With ``next_window_s`` the windows after the first are that long (the runner's are 30 s): a steady-state level
that runs past its span ends only where a window starts (``window_starts``, loadtest.level_end), so it sends the
nominal rate over every window it sends, the last included.
"""

from __future__ import annotations

import itertools
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
    next_window_s: float | None = None,
) -> list[float]:
    """Send offsets: the first at 0, then one gap after another, ``count`` of them or all before
    ``duration_s``; with ``rate_window_s``, each window of gaps scaled to the nominal rate, the windows after
    the first ``next_window_s`` long (default: ``rate_window_s``)."""
    if arrival not in ARRIVALS:
        raise ValueError(f"unknown arrival {arrival!r}; use one of {', '.join(ARRIVALS)}")
    if rate <= 0 or burstiness <= 0:
        raise ValueError(f"rate and burstiness must be > 0, got rate={rate}, burstiness={burstiness}")
    if (count is None) == (duration_s is None):
        raise ValueError("give exactly one of count and duration_s")
    for name, w in (("rate_window_s", rate_window_s), ("next_window_s", next_window_s)):
        if w is not None and not w > 0:
            raise ValueError(f"{name} must be > 0 seconds, got {w}")
    rng = random.Random(f"{seed}:arrivals")
    sizes = _window_sizes(rate, arrival, rate_window_s, next_window_s, _needed(rate, count, duration_s))
    gaps = _windowed(rng, rate, arrival, burstiness, sizes)
    out: list[float] = []
    t = 0.0
    while (count is not None and len(out) < count) or (duration_s is not None and t < duration_s):
        out.append(t)
        t += next(gaps)
    return out


def window_starts(
    rate: float,
    *,
    count: int | None = None,
    duration_s: float | None = None,
    arrival: str = "poisson",
    rate_window_s: float | None = None,
    next_window_s: float | None = None,
) -> list[int] | None:
    """The index of each window's first arrival in the ``schedule`` of the same arguments (0, n1, n1 + n2, …,
    up to the arrivals it may need); None where every gap is free (no window, or ``constant`` gaps)."""
    if _first_window(arrival, rate_window_s) is None:
        return None
    needed = _needed(rate, count, duration_s)
    sizes = _window_sizes(rate, arrival, rate_window_s, next_window_s, needed)
    starts = [0]
    while starts[-1] + (n := next(sizes)) <= needed:
        starts.append(starts[-1] + n)
    return starts


def _needed(rate: float, count: int | None, duration_s: float | None) -> int:
    """At most how many arrivals a schedule draws: ``count``, or one more than ``duration_s`` at ``rate``."""
    return count if count is not None else math.ceil(rate * (duration_s or 0)) + 1


def _first_window(arrival: str, window_s: float | None) -> float | None:
    """The first window's seconds; None where each gap stands alone: free gaps, or constant ones (already exact)."""
    return None if arrival == "constant" else window_s


def _window_sizes(
    rate: float, arrival: str, window_s: float | None, next_window_s: float | None, needed: int
) -> Iterator[int]:
    """Gaps per window, one window after another: ``round(rate × window_s)`` first, then ``round(rate ×
    next_window_s)`` each (no more than the run needs: a huge rate stays cheap); 1 where gaps stand alone."""
    first = _first_window(arrival, window_s)
    if first is None:
        yield from itertools.repeat(1)
        return
    yield max(1, min(round(rate * first), needed))
    later = first if next_window_s is None else next_window_s
    yield from itertools.repeat(max(1, min(round(rate * later), needed)))


def _windowed(
    rng: random.Random, rate: float, arrival: str, burstiness: float, sizes: Iterator[int]
) -> Iterator[float]:
    """Gaps one after another, drawn a window at a time (``sizes``) and scaled so that each window of ``n`` gaps
    spans ``n / rate`` seconds."""
    for n in sizes:
        window = [_gap(rng, rate, arrival, burstiness) for _ in range(n)]
        scale = 1.0 if n == 1 else n / rate / sum(window)
        yield from (g * scale for g in window)
