"""vLLM's own view of a level (its /metrics: mean inter-token latency and TTFT at the engine, before the front end
streams the tokens) in the model, beside the client's: they split a latency between the engine's steps and the
front end's work, which the client's percentiles alone do not."""

from __future__ import annotations

import math

import pytest

from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.server import Server
from perfmodel.traffic import OpenLoad, Request


def engine() -> EngineConfig:
    return EngineConfig(256, 8192, True, False, 100_000, 16, 8192, 0)


def test_alone_a_request_sees_the_step_at_the_engine_and_the_front_ends_delay_at_the_client():
    """One request alone: each token comes one step after the last at the engine; the front end's per-token work
    delays every token the client sees by the same amount, so the client's TPOT equals the engine's ITL, and its
    TTFT exceeds the engine's by the front end's work on the request and on the first token."""
    step, per_request, per_token = 0.004, 0.002, 0.0005
    costs = Costs(step, 0.0, 0.0, 0.0, 0.0, per_request, per_token)
    out = Server(engine(), costs).run(OpenLoad((0.0,), (Request("a", 100, 20),)))
    (s,) = out.served
    assert out.engine_itl_ms == pytest.approx(step * 1e3)
    assert s.latency_ms("tpot") == pytest.approx(step * 1e3)
    assert out.engine_ttft_ms == pytest.approx(step * 1e3)  # the prefill step, from the engine's arrival
    assert s.latency_ms("ttft") == pytest.approx((per_request + step + per_token) * 1e3)


def test_a_busier_engine_shows_in_its_itl_and_a_busier_front_end_does_not():
    reqs = tuple(Request(("r", i), 200, 100) for i in range(40))
    load = OpenLoad(tuple(0.01 * i for i in range(40)), reqs)
    base = Server(engine(), Costs(0.004, 0.0, 2e-5, 0.0, 0.0, 0.0, 0.0)).run(load)
    heavier_host = Server(engine(), Costs(0.004, 0.0, 4e-4, 0.0, 0.0, 0.0, 0.0)).run(load)
    heavier_front = Server(engine(), Costs(0.004, 0.0, 2e-5, 0.0, 0.0, 0.0, 1e-4)).run(load)
    assert base.engine_itl_ms and heavier_host.engine_itl_ms and heavier_front.engine_itl_ms
    assert heavier_host.engine_itl_ms > 1.5 * base.engine_itl_ms
    assert math.isclose(heavier_front.engine_itl_ms, base.engine_itl_ms, rel_tol=1e-9)
