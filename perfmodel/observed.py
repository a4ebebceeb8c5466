"""What a measured trial tells the model: its configuration, the KV blocks vLLM really had, and each load
level it ran (rate or probe concurrency, request count, outcome, p95s, throughput), read from the
``TrialResult`` the study stores. The request counts are not stored; the plan the trial ran under gives them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perfmodel.config import EngineConfig
from perfmodel.protocol import ShortLevelSearch
from perfmodel.traffic import Demand

if TYPE_CHECKING:
    from launch.config import ServeConfig
    from tuner.trial.result import TrialResult


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
    best: dict[str, Any] | None  # the loadtest report at best_rate (percentiles, server metrics)


def observe(
    result: TrialResult, demand: Demand, plan: ShortLevelSearch, seed: int, *, readback: bool = True
) -> ObservedTrial:
    """``readback``: the KV blocks vLLM reported (what the server had), else the budget's prediction."""
    config = result.launched or result.config
    if result.budget is None:
        raise ValueError(f"trial {result.number} has no KV budget: it was not launched")
    blocks = (result.readback or {}).get("num_gpu_blocks") if readback else None
    engine = EngineConfig.from_budget_dict(config, result.budget, blocks)
    levels = tuple(_level(d, plan) for d in result.levels)
    return ObservedTrial(
        result.number, demand, config, engine, seed, levels, result.best_rate, result.goodput_req_s, result.report
    )


def _level(d: dict[str, Any], plan: ShortLevelSearch) -> ObservedLevel:
    if d["kind"] == "probe":
        conc = int(d["concurrency"])
        if conc == plan.probe_concurrency:
            n = plan.probe_requests
        else:  # a probe fitted to a server running fewer sequences (ShortLevelSearch.probe_for)
            n = max(2 * conc, round(plan.probe_requests * conc / plan.probe_concurrency))
    else:
        conc, n = None, plan.level_requests(float(d["rate"]))
    return ObservedLevel(
        d["kind"],
        d.get("rate"),
        conc,
        n,
        bool(d["slo_met"]),
        float(d["throughput_req_s"]),
        d.get("ttft_p95_ms"),
        d.get("tpot_p95_ms"),
    )
