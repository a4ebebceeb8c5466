"""The model's answers: the levels a measured trial ran, replayed; the short-level capacity search those
trials ran, replayed with the model as the server; and the steady-state capacity (the highest Poisson rate
whose SLOs hold once the server has run long enough for its queue to settle: at least JUDGED_LIFETIMES mean request
lifetimes, the length the tuner's levels and soaks need before they judge one, loadtest.level_end)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from loadtest.level_end import JUDGED_LIFETIMES
from loadtest.slo import SLO
from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.observed import ObservedTrial
from perfmodel.outcome import LevelOutcome, Served
from perfmodel.protocol import SearchTrace, ShortLevelSearch, run_search
from perfmodel.server import Server
from perfmodel.traffic import Demand

STEADY_FIRST_INDEX = 1_000_000  # steady-state levels use prompts no short level sends (no accidental hits)


def replay_levels(trial: ObservedTrial, costs: Costs) -> list[LevelOutcome]:
    """The trial's levels in the order it ran them, on one simulated server."""
    server = Server(trial.engine, costs)
    demand = trial.demand
    out: list[LevelOutcome] = []
    first_rate = True
    for lv in trial.levels:
        if lv.kind == "probe":
            assert lv.concurrency is not None
            out.append(server.run(demand.closed_level(lv.concurrency, lv.requests, trial.seed), demand.slos))
        else:
            assert lv.rate is not None
            level = demand.open_level(lv.rate, lv.requests, trial.seed)
            out.append(server.run(level, demand.slos, abandon=not first_rate))
            first_rate = False
    return out


@dataclass(frozen=True)
class SearchPrediction:
    trace: SearchTrace
    levels: tuple[LevelOutcome, ...]

    @property
    def best_rate(self) -> float | None:
        return self.trace.best_rate

    def goodput_req_s(self, slos: tuple[SLO, ...]) -> float:
        """Goodput at the best rate (0 when no rate met the SLO), as the tuner records it."""
        best = self.best_rate
        at = [o for s, o in zip(self.trace.steps, self.levels, strict=True) if s.kind == "rate" and s.rate == best]
        return at[-1].goodput_req_s(slos) if at and best is not None else 0.0


def predict_search(
    engine: EngineConfig, costs: Costs, demand: Demand, plan: ShortLevelSearch, seed: int
) -> SearchPrediction:
    """What the short-level capacity search would find on this configuration (one simulated server)."""
    server = Server(engine, costs)
    outcomes: list[LevelOutcome] = []
    slos = demand.slos
    running = max(1, min(engine.max_num_seqs, engine.num_blocks * engine.block_size // demand.longest_request))

    def probe(conc: int, n: int) -> float:
        outcomes.append(server.run(demand.closed_level(conc, n, seed), slos))
        return outcomes[-1].throughput_req_s

    def level(rate: float, n: int, may_abandon: bool) -> bool:
        outcomes.append(server.run(demand.open_level(rate, n, seed), slos, abandon=may_abandon))
        return outcomes[-1].slo_met(slos)

    trace = run_search(plan, running, probe, level)
    return SearchPrediction(trace, tuple(outcomes))


@dataclass(frozen=True)
class SteadyState:
    """Levels of ``duration_s`` at a constant Poisson rate, each on a fresh server with prompts never sent
    before; SLOs judged on the requests sent after ``settle_s`` (a queue that grows shows up there). A level that
    held but lasted under ``lifetimes`` of its mean request lifetime is run again that long (at most
    ``max_duration_s``, settling the same fraction): requests living 30 s hide a growing queue from a 60-s level."""

    duration_s: float = 60.0
    settle_s: float = 20.0
    rel_tolerance: float = 0.02  # the bisection stops when its bracket is this narrow
    seed: int = 0
    lifetimes: float = JUDGED_LIFETIMES
    max_duration_s: float = 600.0


def steady_outcome(engine: EngineConfig, costs: Costs, demand: Demand, rate: float, how: SteadyState) -> LevelOutcome:
    """One steady-state level at ``rate`` (lengthened to ``how.lifetimes`` request lifetimes where it held but was
    shorter): the requests sent after its settling time only."""
    out = _steady_level(engine, costs, demand, rate, how, how.duration_s)
    if not out.slo_met(demand.slos):
        return out
    e2e = out.samples("e2e")
    needed = min(how.max_duration_s, how.lifetimes * sum(e2e) / len(e2e) / 1e3) if e2e else 0.0
    return _steady_level(engine, costs, demand, rate, how, needed) if needed > how.duration_s else out


def _steady_level(
    engine: EngineConfig, costs: Costs, demand: Demand, rate: float, how: SteadyState, duration_s: float
) -> LevelOutcome:
    n = max(1, round(rate * duration_s))
    settle_s = how.settle_s * duration_s / how.duration_s
    full = Server(engine, costs).run(demand.open_level(rate, n, how.seed, first=STEADY_FIRST_INDEX), demand.slos)
    start = min(s.sent_s for s in full.served)
    kept = tuple(s for s in full.served if s.sent_s - start >= settle_s)
    return replace(full, served=kept or full.served, rate=rate)


def steady_capacity(engine: EngineConfig, costs: Costs, demand: Demand, how: SteadyState | None = None) -> float:
    """The highest rate whose steady-state level meets every SLO (0.0 when even a trickle misses)."""
    how = how or SteadyState()
    conc = max(1, min(engine.max_num_seqs, 1024))
    sat = Server(engine, costs).run(demand.closed_level(conc, 4 * conc, how.seed))
    hi = 1.1 * sat.throughput_req_s  # no rate above what the saturated server completes can hold for long
    lo = 0.05 * hi
    if not steady_outcome(engine, costs, demand, lo, how).slo_met(demand.slos):
        return 0.0
    while hi - lo > how.rel_tolerance * hi:
        mid = (lo + hi) / 2
        if steady_outcome(engine, costs, demand, mid, how).slo_met(demand.slos):
            lo = mid
        else:
            hi = mid
    return lo


def fills_seqs(engine: EngineConfig, costs: Costs, demand: Demand, rate: float, how: SteadyState | None = None) -> bool:
    """Whether a steady-state level at ``rate`` runs ``max_num_seqs`` sequences at once (new requests then wait
    for a slot, not for KV blocks)."""
    return steady_outcome(engine, costs, demand, rate, how or SteadyState()).running_peak >= engine.max_num_seqs


__all__ = [
    "SearchPrediction",
    "Served",
    "SteadyState",
    "fills_seqs",
    "predict_search",
    "replay_levels",
    "steady_capacity",
]
