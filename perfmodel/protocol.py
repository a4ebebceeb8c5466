"""The capacity search the committed studies were measured with, replayable against any oracle: the real
server (their recorded outcomes) or the model.

It is ``tuner.trial.capacity.capacity_search`` as it stood before steady-state levels (issue #22), with its
``MeasurePlan``: a closed-loop probe of ``probe_concurrency`` (at most twice the sequences the server
runs at once) estimates the saturation throughput; a level at ``low_rate_fraction`` of it must meet the
SLO; a level at ``high_rate_factor`` × saturation, widened ×1.5 up to ``max_expansions`` times while it
passes; then ``bisection_steps`` halvings. Each level sends ``level_requests(rate)`` Poisson requests and
ends when they have: arrivals stop after about ``level_duration_s``, so a level over capacity shows only
the start of a growing queue. Kept here, not imported, so that old studies stay replayable when the
tuner's own protocol changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

MIN_LEVEL_FLOOR = 8
MIN_PROBE_CONCURRENCY = 4


@dataclass(frozen=True)
class ShortLevelSearch:
    probe_requests: int = 48
    probe_concurrency: int = 32
    level_duration_s: float = 12.0
    min_level_requests: int = 24
    max_level_requests: int = 2000
    low_rate_fraction: float = 0.15
    high_rate_factor: float = 1.1
    bisection_steps: int = 4
    max_expansions: int = 2
    max_level_stretch: float | None = 4.0  # None: levels before the stretch cap (2026-11-30, 9ffeeb7)
    fit_probe: bool = True  # probe fitted to the running capacity (9ffeeb7); False: always probe_concurrency
    abandon: bool = True  # levels stop once their SLO is certainly lost (41da7b4)

    def level_requests(self, rate: float) -> int:
        n = max(self.min_level_requests, round(rate * self.level_duration_s))
        if self.max_level_stretch is not None:
            cap = round(rate * self.level_duration_s * self.max_level_stretch)
            n = min(n, max(MIN_LEVEL_FLOOR, cap))
        return min(self.max_level_requests, n)

    def probe_for(self, running: int | None) -> tuple[int, int]:
        """(concurrency, requests) of the probe for a server running at most ``running`` sequences at once."""
        if not self.fit_probe or running is None or 2 * running >= self.probe_concurrency:
            return self.probe_concurrency, self.probe_requests
        conc = max(MIN_PROBE_CONCURRENCY, 2 * running)
        return conc, max(2 * conc, round(self.probe_requests * conc / self.probe_concurrency))

    def with_levels(self, seconds: float) -> ShortLevelSearch:
        return replace(self, level_duration_s=seconds)


@dataclass(frozen=True)
class SearchStep:
    kind: str  # "probe" | "rate"
    rate: float | None  # the level's rate (probe: None)
    concurrency: int | None  # the probe's
    requests: int
    slo_met: bool
    saturation_req_s: float | None = None  # the probe's throughput


@dataclass(frozen=True)
class SearchTrace:
    steps: tuple[SearchStep, ...]

    @property
    def best_rate(self) -> float | None:
        met = [s.rate for s in self.steps if s.kind == "rate" and s.slo_met and s.rate is not None]
        return max(met) if met else None

    @property
    def saturation_req_s(self) -> float | None:
        return next((s.saturation_req_s for s in self.steps if s.kind == "probe"), None)


def run_search(
    plan: ShortLevelSearch,
    running: int | None,
    probe: Callable[[int, int], float],
    level: Callable[[float, int, bool], bool],
) -> SearchTrace:
    """``probe(concurrency, requests) -> throughput``; ``level(rate, requests, may_abandon) -> slo_met``."""
    conc, n = plan.probe_for(running)
    saturation = probe(conc, n)
    steps = [SearchStep("probe", None, conc, n, True, saturation)]
    if saturation <= 0:
        return SearchTrace(tuple(steps))

    def measure(rate: float, may_abandon: bool = True) -> bool:
        requests = plan.level_requests(rate)
        met = level(rate, requests, may_abandon and plan.abandon)
        steps.append(SearchStep("rate", rate, None, requests, met))
        return met

    lo = plan.low_rate_fraction * saturation
    if measure(lo, may_abandon=False):
        hi = plan.high_rate_factor * saturation
        expansions = 0
        while measure(hi):
            lo = hi
            if expansions == plan.max_expansions:
                break
            hi *= 1.5
            expansions += 1
        else:
            for _ in range(plan.bisection_steps):
                mid = (lo + hi) / 2
                if measure(mid):
                    lo = mid
                else:
                    hi = mid
    return SearchTrace(tuple(steps))
