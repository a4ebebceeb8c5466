"""What a measured trial tells the model: its configuration, the KV blocks vLLM really had, and each load
level it ran (rate or probe concurrency, request count, outcome, p95s, throughput), read from the
``TrialResult`` the study stores. The request counts are not stored; the plan the trial ran under gives them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel.config import EngineConfig
from perfmodel.protocol import ShortLevelSearch
from perfmodel.traffic import Demand

if TYPE_CHECKING:
    from launch.config import ServeConfig
    from loadtest.summary import ReportSummary
    from tuner.trial.level import Level
    from tuner.trial.result import TrialResult


ENGINE_TTFT_MODES = ("off", "all", "unqueued")  # which levels' engine-side TTFT a calibration fits


@dataclass(frozen=True)
class ObservedLevel:
    kind: str  # "probe" | "rate"
    rate: float | None
    concurrency: int | None
    requests: int
    slo_met: bool
    throughput_req_s: float
    ttft_p95_ms: float | None
    tpot_p95_ms: float | None
    # vLLM's own mean from a request reaching the engine to its first token (queue + prefill, /metrics), where kept
    engine_ttft_ms: float | None = None
    engine_itl_ms: float | None = None  # vLLM's own mean inter-token latency, where kept


@dataclass(frozen=True)
class ObservedTrial:
    number: int
    demand: Demand  # the workload and SLOs it was measured with
    config: ServeConfig  # what was launched
    engine: EngineConfig
    seed: int  # the load generator's seed for every level of the trial
    levels: tuple[ObservedLevel, ...]
    best_rate: float | None  # the highest rate whose level met the SLO (the measured capacity)
    goodput_req_s: float
    best: ReportSummary | None  # the loadtest report at best_rate (percentiles, server metrics)


def observe(
    result: TrialResult,
    demand: Demand,
    plan: ShortLevelSearch,
    seed: int,
    *,
    readback: bool = True,
    engine_ttft: str = "off",
) -> ObservedTrial:
    """``readback``: the KV blocks vLLM reported (what the server had), else the budget's prediction.
    ``engine_ttft``: keep vLLM's engine-side mean TTFT of each level, so that calibration fits it too: "all", or
    "unqueued" (only where vLLM's mean queue time was under its prefill time: the steps, not a queue at the edge).
    "off" (the default, what ``tune --predict`` fits): none."""
    if engine_ttft not in ENGINE_TTFT_MODES:
        raise ValueError(f"engine_ttft {engine_ttft!r}: one of {', '.join(ENGINE_TTFT_MODES)}")
    config = result.launched or result.config
    if result.budget is None:
        raise ValueError(f"trial {result.number} has no KV budget: it was not launched")
    blocks = result.readback.num_gpu_blocks if readback and result.readback else None
    engine = EngineConfig.of(config, result.budget, blocks)
    levels = tuple(_level(lv, plan, engine_ttft) for lv in result.levels)
    return ObservedTrial(
        result.number, demand, config, engine, seed, levels, result.best_rate, result.goodput_req_s, result.report
    )


def _level(lv: Level, plan: ShortLevelSearch, engine_ttft: str) -> ObservedLevel:
    if lv.kind == "probe":
        assert lv.concurrency is not None, "a probe level has its concurrency"
        conc = lv.concurrency
        if conc == plan.probe_concurrency:
            n = plan.probe_requests
        else:  # a probe fitted to a server running fewer sequences (ShortLevelSearch.probe_for)
            n = max(2 * conc, round(plan.probe_requests * conc / plan.probe_concurrency))
    else:
        assert lv.rate is not None, "a rate level has its rate"
        conc, n = None, plan.level_requests(lv.rate)
    queue, prefill = lv.server.queue_time_mean_ms, lv.server.prefill_time_mean_ms
    engine = None
    if queue is not None and prefill is not None:
        if engine_ttft == "all" or (engine_ttft == "unqueued" and queue <= prefill):
            engine = queue + prefill
    return ObservedLevel(
        lv.kind, lv.rate, conc, n, lv.slo_met, lv.throughput_req_s, lv.ttft_p95_ms, lv.tpot_p95_ms, engine
    )
