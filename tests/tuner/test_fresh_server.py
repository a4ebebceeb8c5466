"""A rate level after a lost one runs on a fresh server (MeasurePlan.fresh_server_after_lost, the CPU plan):
the search against a scripted server that a lost level leaves slower, as vLLM-CPU was measured to be, and the
trial runner's server slot that replaces the server (FakeLauncher: nothing under test starts a process)."""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from tests.tuner.test_measure import SLOS, FakeReport
from tuner.budget.gpu import GPUProfile
from tuner.inputs import measure_plan
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.capacity import CapacityResult, MeasurePlan
from tuner.trial.device_rules import Cancelled, DeviceRules
from tuner.trial.level import Level
from tuner.trial.measuring import measure_capacity
from tuner.trial.result import COMPLETE, FAIL
from tuner.trial.runner import run_trial
from tuner.trial.server_slot import ServerSlot
from tuner.trial.testing import FakeLauncher, FakeServer, fake_context

CONFIG = ServeConfig(model="/m", max_num_seqs=8)


@dataclass
class HangoverServers:
    """Servers by URL, each meeting the 1-s TTFT limit below 0.8 x ``capacity``; one that has missed a level
    is 3 x slower from then on (it then meets the limit only below 0.4 x)."""

    capacity: float
    slowed: set[str] = field(default_factory=set)
    levels: list[tuple[str, bool]] = field(default_factory=list)  # (url, lost) of each rate level

    def run(self, spec: Any) -> FakeReport:
        if spec.rate is None:  # the closed-loop probe completes the capacity
            return FakeReport(5000.0, self.capacity, 0.0)
        base = 600.0 if spec.url in self.slowed else 200.0
        ttft = base / (1 - spec.rate / self.capacity) if spec.rate < self.capacity else 60_000.0
        if ttft > 1000.0:
            self.slowed.add(spec.url)
        self.levels.append((spec.url, ttft > 1000.0))
        return FakeReport(ttft, min(spec.rate, self.capacity), 0.0)


def _search(tmp_path, fresh_urls: list[str] | None) -> tuple[CapacityResult, HangoverServers]:
    servers = HangoverServers(capacity=10.0)
    ctx = fake_context(tmp_path, FakeLauncher(), None, DeviceRules())
    ctx = dataclasses.replace(ctx, slos=SLOS, plan=MeasurePlan(bisection_steps=4))
    fresh = None
    if fresh_urls is not None:
        fresh = lambda: (fresh_urls.append(f"http://fresh-{len(fresh_urls)}"), fresh_urls[-1])[1]  # noqa: E731
    res = measure_capacity("http://first", CONFIG, ctx, 1, lambda _lv: None, fresh=fresh, run=servers.run)
    return res, servers


def test_a_level_after_a_lost_one_goes_to_a_fresh_server_and_finds_the_edge(tmp_path):
    started: list[str] = []
    res, servers = _search(tmp_path, started)
    assert 7.0 <= res.best_rate < 8.0  # the edge of a server not slowed: 0.8 x capacity
    pairs = list(itertools.pairwise(servers.levels))
    after_lost = [after[0] for before, after in pairs if before[1]]
    assert len(after_lost) >= 2 and started == after_lost  # each level after a lost one: a new server
    assert all(after[0] == before[0] for before, after in pairs if not before[1])  # after a held one: the same


def test_without_fresh_servers_the_slowed_server_pulls_the_estimate_down(tmp_path):
    res, servers = _search(tmp_path, None)
    assert {url for url, _ in servers.levels} == {"http://first"}
    assert res.best_rate < 4.0  # what a slowed server holds: under 0.4 x capacity


def _measure_calling_fresh(times: int, seen: list[str]):
    def measure(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):
        seen.append(url)
        for _ in range(times):
            seen.append(fresh())
        return CapacityResult(1.0, None, None, None, ())

    return measure


def _slotted_context(tmp_path, launcher, measure, fresh: bool):
    ctx = fake_context(tmp_path, launcher, measure, DeviceRules())
    return dataclasses.replace(ctx, plan=MeasurePlan(warmup_requests=0, fresh_server_after_lost=fresh))


def test_the_runner_replaces_its_server_when_the_search_asks(tmp_path):
    events: list[str] = []
    launcher = FakeLauncher(
        server=lambda name: FakeServer(name, url=f"http://{name}-{len(launcher.started)}"),
        on_start=lambda name: events.append("start"),
        on_stop=lambda server: events.append(f"stop {server.url}"),
    )
    seen: list[str] = []
    said: list[str] = []
    r = run_trial(
        3, CONFIG, False, _slotted_context(tmp_path, launcher, _measure_calling_fresh(2, seen), True), said.append
    )
    assert r.state == COMPLETE
    urls = [server.url for _, server in launcher.started]
    assert seen == urls == ["http://trial-003-0", "http://trial-003-1", "http://trial-003-2"]
    # one server at a time: each stopped before the next started, the last at the end
    assert events == [
        "start",
        "stop http://trial-003-0",
        "start",
        "stop http://trial-003-1",
        "start",
        "stop http://trial-003-2",
    ]
    assert len(r.timeline["fresh_servers"]) == 2 and {"launched", "ready", "stopped"} <= set(r.timeline)
    assert sum("a fresh server for the next level" in line for line in said) == 2


def test_a_plan_without_fresh_servers_gives_the_search_none(tmp_path):
    got: list[Any] = []

    def measure(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):
        got.append(fresh)
        return CapacityResult(1.0, None, None, None, ())

    run_trial(1, CONFIG, False, _slotted_context(tmp_path, FakeLauncher(), measure, False))
    assert got == [None]


def test_a_dead_server_is_not_replaced_and_the_trial_fails_as_crashed(tmp_path):
    launcher = FakeLauncher(server=lambda name: FakeServer(name, dies=True, tail="Engine core died"))
    seen: list[str] = []
    r = run_trial(2, CONFIG, False, _slotted_context(tmp_path, launcher, _measure_calling_fresh(1, seen), True))
    assert len(launcher.started) == 1 and seen == ["http://127.0.0.1:1"] * 2
    assert r.state == FAIL and r.fail_reason.startswith("crashed_after_start")


def test_a_fresh_server_that_fails_to_start_fails_the_trial_and_keeps_its_levels(tmp_path):
    launcher = FakeLauncher()

    def measure(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):
        on_level(Level("probe", None, 8, False, 1.0, 1.0))
        launcher.failure = LaunchFailure("oom", "out of memory (log: x.log)", "OOM")
        fresh()
        raise AssertionError("fresh() should have raised")

    r = run_trial(4, CONFIG, False, _slotted_context(tmp_path, launcher, measure, True))
    assert r.state == FAIL and r.fail_reason == "oom: a fresh server after a lost level: out of memory (log: x.log)"
    assert len(r.levels) == 1 and launcher.started[0][1].stopped


def test_the_slot_starts_nothing_once_the_run_is_stopping(tmp_path):
    launcher = FakeLauncher()
    stopping = [False]

    def check() -> None:
        if stopping[0]:
            raise Cancelled("the run is stopping")

    start = lambda: launcher.start(CONFIG, tmp_path / "trial-001", print)  # noqa: E731
    slot = ServerSlot(start, contextlib.nullcontext, float, {}, check)
    first = slot.start()
    stopping[0] = True
    with pytest.raises(Cancelled):
        slot.fresh()
    slot.close()
    assert len(launcher.started) == 1 and first.stopped


def test_the_cpu_plan_uses_fresh_servers_and_the_gpu_plan_does_not():
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s")
    assert measure_plan(settings, GPUProfile.load("cpu")).fresh_server_after_lost
    assert not measure_plan(settings, GPUProfile.load("h200")).fresh_server_after_lost
    same = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s", same_server=True)  # --same-server
    assert not measure_plan(same, GPUProfile.load("cpu")).fresh_server_after_lost
