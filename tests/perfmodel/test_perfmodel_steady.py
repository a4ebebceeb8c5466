"""perfmodel.capacity's steady state: a level judged once it has lasted JUDGED_LIFETIMES request lifetimes, as the
tuner's levels and soaks are (loadtest.level_end); a 60-s level of requests that live 15 s hides a growing queue."""

from __future__ import annotations

import statistics

import pytest

from loadtest.lengths import LengthDist
from loadtest.level_end import JUDGED_LIFETIMES
from loadtest.slo import parse_slos
from loadtest.workload import Workload, load_workload
from perfmodel.capacity import SteadyState, steady_outcome
from perfmodel.config import EngineConfig
from perfmodel.costs import Costs
from perfmodel.outcome import LevelOutcome
from perfmodel.traffic import Demand

ENGINE = EngineConfig(512, 8192, True, True, 1300, 16, 4096, 131072)
SLOW = Costs(0.15, 0.0, 0.004, 0.0, 0.0, 0.0, 0.0)  # ~0.3-s steps over 100 output tokens: lifetimes of ~15 s
LONG = Demand(Workload("long", LengthDist("fixed", 100, 100), LengthDist("fixed", 100, 100)), parse_slos("ttft_p95=2s"))
SIXTY = SteadyState(lifetimes=0.0)  # the fixed 60-s level, not lengthened


def sent_span_s(out: LevelOutcome) -> float:
    sent = [s.sent_s for s in out.served]
    return max(sent) - min(sent)


def test_a_level_of_long_lived_requests_lasts_five_lifetimes():
    short = steady_outcome(ENGINE, SLOW, LONG, 1.6, SIXTY)
    lifetime_s = statistics.mean(short.samples("e2e")) / 1e3
    assert short.slo_met(LONG.slos) and JUDGED_LIFETIMES * lifetime_s > SIXTY.duration_s
    long = steady_outcome(ENGINE, SLOW, LONG, 1.6, SteadyState())
    # the requests judged are those sent after the settling third; Poisson arrivals spread the span by ~15 %
    assert sent_span_s(long) == pytest.approx(2 / 3 * JUDGED_LIFETIMES * lifetime_s, rel=0.25)
    assert sent_span_s(short) < 0.85 * sent_span_s(long)


def test_a_level_of_short_lived_requests_keeps_its_sixty_seconds():
    chat = Demand(load_workload("chat"), parse_slos("ttft_p95=2s,tpot_p95=60ms"))
    fast = Costs(0.004, 2e-5, 5e-5, 1e-13, 0.0, 1e-3, 2e-5)
    assert steady_outcome(ENGINE, fast, chat, 20.0, SteadyState()) == steady_outcome(ENGINE, fast, chat, 20.0, SIXTY)


def test_a_level_that_missed_is_not_run_longer():
    missed = steady_outcome(ENGINE, SLOW, LONG, 20.0, SteadyState())
    assert not missed.slo_met(LONG.slos)
    assert missed == steady_outcome(ENGINE, SLOW, LONG, 20.0, SIXTY)
