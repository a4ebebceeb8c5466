"""tuner.search.predict_model: a trial measured by today's tuner as what perfmodel learns from — each level replayed
apart with the seed it was measured under and the requests its rate sent over its length."""

from __future__ import annotations

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.slo import parse_slos
from loadtest.summary import ReportSummary
from loadtest.workload import load_workload
from perfmodel.traffic import Demand
from tests.records import kv_budget
from tuner.search.predict_model import observed_levels, short_levels
from tuner.trial.capacity import MeasurePlan
from tuner.trial.level import Level
from tuner.trial.measuring import level_seed
from tuner.trial.result import COMPLETE, TrialResult

PLAN = MeasurePlan(probe_requests=48, probe_concurrency=32, level_duration_s=6.0, min_level_requests=12, seed=3)
BUDGET = kv_budget(
    max_num_seqs=16, max_num_batched_tokens=2048, num_blocks=1000, block_size=16, max_model_len=2048,
    kv_bytes_per_token=4096,
)  # fmt: skip


def level(kind, rate=None, conc=None, met=True, duration=None, steady=True):
    return Level(
        kind=kind,
        rate=rate,
        concurrency=conc,
        slo_met=met,
        goodput_req_s=0.0,
        throughput_req_s=5.0,
        ttft_p95_ms=100.0,
        tpot_p95_ms=10.0,
        duration_s=duration,
        steady_holds=steady,
    )


def test_each_level_is_its_own_trial_with_its_seed_and_sent_requests():
    levels = (
        level("probe", conc=32),
        level("rate", rate=2.0, duration=30.0),
        level("rate", rate=6.0, met=True, steady=False, duration=40.0),
        level("rate", rate=4.0, duration=50.0),
    )
    result = TrialResult(
        7,
        COMPLETE,
        False,
        ServeConfig(model="/m", max_num_seqs=16),
        slo_met=True,
        goodput_req_s=4.0,
        best_rate=4.0,
        report=ReportSummary(ttft_ms=Dist(p50=50.0)),
        levels=levels,
        budget=BUDGET,
    )
    demand = Demand(load_workload("chat"), parse_slos("ttft_p95=2s"))
    out = observed_levels(result, demand, PLAN)
    assert [o.seed for o in out] == [level_seed(3, 7, k) for k in range(4)]
    assert [o.levels[0].requests for o in out] == [48, 54, 216, 180]  # rate x length x (1 - 1/10 lifetimes)
    assert [o.levels[0].slo_met for o in out] == [True, True, False, True]  # an unsteady level did not pass
    assert [o.best_rate for o in out] == [None, None, None, 4.0] and out[3].best == result.report
    assert out[0].engine.max_num_seqs == 16 and out[0].engine.num_blocks == 999  # vLLM's null block


def test_short_levels_carry_the_plans_sizes():
    s = short_levels(PLAN)
    assert (s.probe_requests, s.probe_concurrency, s.min_level_requests) == (48, 32, 12)
    assert s.level_requests(2.0) == PLAN.level_requests(2.0)


def test_an_emulated_gpu_is_timed_at_the_speed_of_the_device_emulating_it(tmp_path):
    """A30 memory emulated on an H200 runs at the H200's speed: the model's KV reads cost the H200's bandwidth
    (run b on 2026-12-02 timed them at the A30's, 5x slower, and over-predicted its fp8 launches)."""
    from pathlib import Path

    from tuner.budget.gpu import GPUProfile
    from tuner.model.spec import ModelSpec
    from tuner.search.predict_model import perf_model
    from tuner.synthetic import shape_config
    from tuner.trial.context import TrialContext

    a30, h200 = GPUProfile.load("a30"), GPUProfile.load("h200")
    levels = (level("probe", conc=8), level("rate", rate=2.0, duration=6.0))
    result = TrialResult(0, COMPLETE, True, ServeConfig(model="/m"), slo_met=True, goodput_req_s=2.0,
                         best_rate=2.0, report=ReportSummary(ttft_ms=Dist(p50=50.0)), levels=levels,
                         budget=BUDGET)  # fmt: skip
    spec = ModelSpec.from_config(shape_config("llama-tiny"))
    ctx = TrialContext(spec, a30, parse_slos("ttft_p95=2s"), load_workload("chat"), PLAN, "py", Path(tmp_path),
                       actual_gpu=h200)  # fmt: skip
    assert ctx.speed_gpu is h200
    cal = perf_model(ctx).calibrate([result], None)
    assert cal.costs.per_kv_byte_s == 1.0 / h200.bandwidth_bytes_s != 1.0 / a30.bandwidth_bytes_s


def test_a_level_keeps_vllms_engine_side_ttft_queue_and_prefill_when_asked():
    """vLLM's engine times a request from reaching the engine to its first token (queue + prefill), the span the
    model's engine TTFT covers; the API server's TTFT also holds the front end, so it is not the one kept."""
    from dataclasses import replace

    from loadtest.server_metrics import ServerSummary

    timed = ServerSummary(queue_time_mean_ms=20.0, prefill_time_mean_ms=230.0, server_ttft_mean_ms=400.0)
    levels = (
        replace(level("probe", conc=32), server=timed),
        replace(level("rate", rate=2.0, duration=30.0), server=ServerSummary(prefill_time_mean_ms=230.0)),
        level("rate", rate=4.0, duration=50.0),
    )
    result = TrialResult(7, COMPLETE, False, ServeConfig(model="/m", max_num_seqs=16), slo_met=True,
                         goodput_req_s=4.0, best_rate=4.0, levels=levels, budget=BUDGET)  # fmt: skip
    demand = Demand(load_workload("chat"), parse_slos("ttft_p95=2s"))
    kept = observed_levels(result, demand, PLAN, engine_ttft="all")
    assert [o.levels[0].engine_ttft_ms for o in kept] == [250.0, None, None]
    plain = observed_levels(result, demand, PLAN, engine_ttft="off")
    assert [o.levels[0].engine_ttft_ms for o in plain] == [None, None, None]
    queued = replace(timed, queue_time_mean_ms=400.0)  # a queue at the edge: its mean says little of the steps
    result = replace(result, levels=(replace(levels[0], server=queued), *levels[1:]))
    assert observed_levels(result, demand, PLAN, engine_ttft="all")[0].levels[0].engine_ttft_ms == 630.0
    assert observed_levels(result, demand, PLAN, engine_ttft="unqueued")[0].levels[0].engine_ttft_ms is None
