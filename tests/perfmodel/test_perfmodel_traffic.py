"""perfmodel.traffic builds the very requests loadtest sends: lengths from PromptFactory's random stream,
send times from loadtest.arrivals."""

from __future__ import annotations

import pytest

from loadtest import arrivals
from loadtest.prompts import PromptFactory
from loadtest.slo import parse_slos
from loadtest.workload import load_workload
from perfmodel.traffic import Demand, closed_load, poisson_load, requests_of, trace_load


@pytest.mark.parametrize("name", ["chat", "code", "longdoc"])
@pytest.mark.parametrize("seed", [0, 5])
def test_lengths_are_the_load_generators(name, seed):
    w = load_workload(name)
    factory = PromptFactory(w, seed=seed)
    for r, i in zip(requests_of(w, seed, 40), range(40), strict=True):
        spec = factory.make(i)
        assert (r.prompt_tokens, r.output_tokens) == (spec.input_tokens, spec.output_tokens)
        assert r.key == (seed, i)


def test_an_output_override_is_every_requests_length():
    w = load_workload("chat")
    assert {r.output_tokens for r in requests_of(w, 1, 20, output_tokens=64)} == {64}


def test_poisson_send_times_are_the_load_generators():
    w = load_workload("chat")
    load = poisson_load(w, 12.5, 200, seed=3)
    assert list(load.offsets_s) == arrivals.schedule(12.5, count=200, seed=3)
    assert load.rate == 12.5 and len(load.requests) == 200


def test_the_same_seed_and_index_are_the_same_prompt_across_levels():
    w = load_workload("chat")
    low, high = poisson_load(w, 5.0, 50, seed=2), poisson_load(w, 50.0, 400, seed=2)
    assert high.requests[:50] == low.requests
    assert closed_load(w, 8, 50, seed=2).requests == low.requests


def test_a_trace_keeps_its_order_and_lengths():
    load = trace_load([(0.5, 100, 10), (0.0, 200, 20)])
    assert load.offsets_s == (0.0, 0.5)
    assert [(r.prompt_tokens, r.output_tokens) for r in load.requests] == [(200, 20), (100, 10)]


def test_an_itl_slo_is_refused_by_name():
    with pytest.raises(ValueError, match="itl_p99"):
        Demand(load_workload("chat"), parse_slos("ttft_p95=2s,itl_p99=80ms"))


def test_a_prompt_overhead_lengthens_every_prompt_and_nothing_else():
    w = load_workload("edit")
    plain = Demand(w, parse_slos("ttft_p95=2s"))
    longer = Demand(w, parse_slos("ttft_p95=2s"), prompt_overhead_tokens=30)
    a, b = plain.open_level(2.0, 50, seed=4), longer.open_level(2.0, 50, seed=4)
    assert a.offsets_s == b.offsets_s
    assert [r.prompt_tokens + 30 for r in a.requests] == [r.prompt_tokens for r in b.requests]
    assert [r.output_tokens for r in a.requests] == [r.output_tokens for r in b.requests]
    closed = longer.closed_level(4, 10, seed=4).requests
    assert [r.prompt_tokens for r in closed] == [r.prompt_tokens for r in b.requests[:10]]
    assert longer.longest_request == plain.longest_request + 30
