"""perfmodel.engine + server: queueing sanity checks with known answers, the KV block accounting against
tuner.budget.kv_budget, preemption, and prefix-cache hits across repeated levels."""

from __future__ import annotations

import math
import statistics

import pytest

from launch.config import ServeConfig
from loadtest.abandon import allowed_misses
from loadtest.lengths import LengthDist
from loadtest.slo import parse_slos
from loadtest.workload import Workload, load_workload
from perfmodel.config import NULL_BLOCKS, EngineConfig
from perfmodel.costs import Costs
from perfmodel.server import Server
from perfmodel.traffic import ClosedLoad, OpenLoad, Request, closed_load, poisson_load
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import estimate_budget
from tuner.model.spec import ModelSpec
from tuner.synthetic import shape_config


def fixed_step(step_s: float) -> Costs:
    """Every step lasts ``step_s`` whatever it holds; the front end is free."""
    return Costs(step_s, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


def engine(seqs: int = 256, blocks: int = 100_000, *, chunked: bool = True, caching: bool = False) -> EngineConfig:
    return EngineConfig(seqs, 8192, chunked, caching, blocks, 16, 8192, 0)


def test_one_sequence_at_a_time_is_an_md1_queue():
    """max_num_seqs 1 and one-token answers: a single server with deterministic service D under Poisson
    arrivals, whose mean time in system is D + ρD / (2(1 − ρ)) (Pollaczek–Khinchine)."""
    d, rho, n = 0.01, 0.7, 20_000
    w = Workload("tiny", LengthDist("fixed", 8, 8), LengthDist("fixed", 1, 1))
    out = Server(engine(seqs=1), fixed_step(d)).run(poisson_load(w, rho / d, n, seed=3))
    mean_e2e = statistics.mean(out.samples("e2e")) / 1e3
    expected = d + rho * d / (2 * (1 - rho))
    assert math.isclose(mean_e2e, expected, rel_tol=0.05), (mean_e2e, expected)


def test_a_request_of_n_tokens_alone_takes_n_steps():
    """Prefill emits the first token, then one decode step per token: E2E = N·D, TPOT = D exactly."""
    d = 0.004
    reqs = tuple(Request(("x", i), 100, n) for i, n in enumerate((1, 2, 17, 64)))
    server = Server(engine(), fixed_step(d))
    for r in reqs:
        out = server.run(OpenLoad((0.0,), (r,)))
        (s,) = out.served
        assert math.isclose((s.end_s - s.sent_s), r.output_tokens * d, rel_tol=1e-9)
        if r.output_tokens > 1:
            assert math.isclose(s.latency_ms("tpot"), d * 1e3, rel_tol=1e-9)


def test_a_machine_slower_by_a_factor_serves_a_lone_request_that_much_slower():
    """Costs.slowed scales every time coefficient and keeps the ratios, so a request alone (no queue, no
    preemption) lasts exactly ``factor`` times as long; a non-positive factor is refused."""
    costs = Costs(0.005, 2e-5, 3e-5, 1e-13, 0.4, 1e-3, 2e-5)
    slower = costs.slowed(1.5)
    assert slower.attn_ratio == costs.attn_ratio
    req = Request(("x", 0), 300, 40)
    (fast,) = Server(engine(), costs).run(OpenLoad((0.0,), (req,))).served
    (slow,) = Server(engine(), slower).run(OpenLoad((0.0,), (req,))).served
    assert math.isclose(slow.end_s - slow.sent_s, 1.5 * (fast.end_s - fast.sent_s), rel_tol=1e-9)
    with pytest.raises(ValueError, match="slowdown factor 0"):
        costs.slowed(0)


def test_a_closed_loop_completes_its_clients_over_their_latency():
    """Little's law for a closed system without think time: throughput = clients / mean E2E."""
    w = load_workload("chat")
    costs = Costs(0.005, 2e-5, 3e-5, 1e-13, 0.0, 1e-3, 2e-5)
    out = Server(engine(), costs).run(closed_load(w, 16, 800, seed=1))
    little = 16 / (statistics.mean(out.samples("e2e")) / 1e3)
    assert math.isclose(out.throughput_req_s, little, rel_tol=0.05), (out.throughput_req_s, little)


def test_kv_blocks_hold_as_many_longest_requests_as_the_budget_predicts():
    """Requests of max_model_len tokens: the simulated engine runs exactly as many at once as the blocks
    tuner.budget.kv_budget predicts can hold (vLLM's 'Maximum concurrency'), less vLLM's null block."""
    spec = ModelSpec.from_config(shape_config("llama-3-8b"))
    config = ServeConfig(
        "/m", max_model_len=1280, max_num_seqs=512, max_num_batched_tokens=65536, enable_chunked_prefill=False
    )
    budget = estimate_budget(spec, GPUProfile.load("a30"), config, vllm_version="0.26.0")
    cfg = EngineConfig.of(config, budget)
    per_request = math.ceil(1280 / budget.block_size)
    fit = (budget.num_blocks - NULL_BLOCKS) // per_request
    assert fit == math.floor((budget.num_blocks - NULL_BLOCKS) / budget.num_blocks * budget.max_concurrency)
    reqs = tuple(Request(("long", i), 1279, 1) for i in range(fit + 10))
    server = Server(cfg, fixed_step(0.01))
    out = server.run(OpenLoad((0.0,) * len(reqs), reqs))
    assert out.running_peak == fit
    assert out.kv_usage_peak == fit * per_request / cfg.num_blocks  # those requests' blocks, as vLLM's gauge reads
    assert all(s.ok for s in out.served)
    assert server.engine.pool.used == 0


def test_preempted_requests_are_recomputed_and_all_finish_with_their_tokens():
    d = 0.002
    reqs = tuple(Request(("p", i), 200, 300) for i in range(40))
    cfg = engine(blocks=200)  # 40 × (200 + 300) tokens need ~1,260 blocks
    server = Server(cfg, fixed_step(d))
    out = server.run(OpenLoad((0.0,) * len(reqs), reqs))
    assert out.preemptions > 0
    assert out.kv_usage_peak > 0.98  # preempted for want of blocks: the cache ran full
    assert all(s.ok for s in out.served)
    assert not server.engine.running and not server.engine.waiting and server.engine.pool.used == 0
    # recomputation costs steps: the last request ends later than 40 requests in perfect batches would
    assert max(s.end_s for s in out.served) > 300 * d


def test_a_repeated_level_hits_every_cached_full_block():
    """The tuner sends request i of a seed again at every level: with room for all of them, the second
    level's hit rate is exactly Σ⌊(L−1)/16⌋·16 / ΣL over its prompts."""
    w = load_workload("chat")
    server = Server(engine(caching=True), fixed_step(0.005))
    server.run(poisson_load(w, 20.0, 100, seed=7))
    second = server.run(poisson_load(w, 20.0, 100, seed=7))
    prompts = [r.prompt_tokens for r in poisson_load(w, 20.0, 100, seed=7).requests]
    assert second.prefix_hit_rate is not None
    assert math.isclose(second.prefix_hit_rate, sum((p - 1) // 16 * 16 for p in prompts) / sum(prompts))


def test_a_cache_smaller_than_the_level_hits_nothing_when_the_level_repeats():
    """Least-recently-used eviction against a cyclic pattern: what the A30-memory studies measured (0.0)."""
    w = load_workload("chat")
    server = Server(engine(blocks=600, caching=True), fixed_step(0.005))
    server.run(poisson_load(w, 20.0, 200, seed=7))  # ~48k prompt tokens through ~9.6k tokens of cache
    second = server.run(poisson_load(w, 20.0, 200, seed=7))
    assert second.prefix_hit_rate == 0.0


def test_requests_longer_than_max_model_len_fail_at_once():
    cfg = EngineConfig(8, 512, True, False, 1000, 16, 256, 0)
    out = Server(cfg, fixed_step(0.01)).run(OpenLoad((0.0, 0.0), (Request(1, 200, 100), Request(2, 100, 100))))
    assert [s.ok for s in out.served] == [False, True]


def test_a_closed_load_sends_each_request_once():
    w = load_workload("chat")
    out = Server(engine(), fixed_step(0.003)).run(ClosedLoad(4, closed_load(w, 4, 30, seed=0).requests))
    assert len(out.served) == 30 and all(s.ok for s in out.served)
    assert len({s.sent_s for s in out.served}) > 4  # later requests were sent as earlier ones ended


def test_a_level_is_abandoned_once_its_slo_is_certainly_lost():
    """loadtest's MissCounter: of 50 planned requests at most 3 may miss a p95 (allowed_misses); the fourth
    failure ends the level and what is still in flight is cancelled (failed)."""
    cfg = EngineConfig(8, 512, True, False, 1000, 16, 256, 0)
    assert allowed_misses(50, 95) == 3
    reqs = tuple(Request(i, 300 if i < 4 else 50, 20) for i in range(50))  # the first four are too long
    load = OpenLoad(tuple(0.01 * i for i in range(50)), reqs)
    out = Server(cfg, fixed_step(0.01)).run(load, parse_slos("ttft_p95=2s"), abandon=True)
    assert out.abandoned
    assert sum(s.ok for s in out.served) < 46
    kept = Server(cfg, fixed_step(0.01)).run(load, parse_slos("ttft_p95=2s"))
    assert not kept.abandoned and sum(s.ok for s in kept.served) == 46
