"""Overlapped startups on one device: no server may start or stop while another one starts.

vLLM profiles its memory at startup from device-wide free memory; a server that starts or stops meanwhile
makes it abort ("Error in memory profiling", seen on the H200). What is under test is run_trial's lock
discipline under the scheduler's rules, so the launcher (tuner.trial.testing) and the measurement are
stand-ins that only record when they run.
"""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest

from launch.config import ServeConfig
from tuner.trial.capacity import CapacityResult
from tuner.trial.context import TrialContext
from tuner.trial.device_rules import DeviceRules
from tuner.trial.runner import run_trial
from tuner.trial.testing import FakeLauncher, FakeServer, fake_context
from tuner.trial.time_budget import OverBudget, TimeBudget

STARTUP_S, MEASURE_S = 0.3, 0.1


def stand_ins(
    tmp_path, time_budget=None, pause: bool = True, **ctx_fields
) -> tuple[TrialContext, list[tuple[float, str, str]]]:
    """Stand-in servers and measurements that record (time, trial, what) events; the context of one device
    whose startups overlap (the scheduler's rules for it). ``pause=False``: startups and measurements take no
    real time (for tests on a scripted clock; the overlap test needs the startups to last)."""
    startup_s, measure_s = (STARTUP_S, MEASURE_S) if pause else (0.0, 0.0)
    events: list[tuple[float, str, str]] = []  # (time, trial, what)
    lock = threading.Lock()

    def note(trial: str, what: str) -> None:
        with lock:
            events.append((time.monotonic(), trial, what))

    def starting(name: str) -> None:
        note(name, "start-begin")
        time.sleep(startup_s)
        note(name, "start-end")

    def fake_measure(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):
        note(f"trial-{number:03d}", "measure")
        time.sleep(measure_s)
        return CapacityResult(1.0, None, None, None, ())

    launcher = FakeLauncher(
        server=lambda name: FakeServer(name, startup_s=STARTUP_S),
        on_start=starting,
        on_stop=lambda server: note(server.name, "stop"),
    )
    rules = DeviceRules.of(["0"], overlap=True, layouts=False, budget=time_budget)
    ctx = fake_context(tmp_path, launcher, fake_measure, rules, **ctx_fields)
    return ctx, events


def test_no_server_stops_or_starts_during_another_startup(tmp_path):
    ctx, events = stand_ins(tmp_path)
    results = []

    def trial(n: int) -> None:
        results.append(run_trial(n, ServeConfig(model="/m", max_num_seqs=8), False, ctx, device="0"))

    threads = [threading.Thread(target=trial, args=(n,)) for n in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    starting: set[str] = set()
    for _, trial, what in sorted(events):
        if what == "measure":
            continue
        if what == "start-begin":
            assert not starting, f"{trial} started while {starting} was starting"
            starting.add(trial)
        elif what == "start-end":
            starting.discard(trial)
        else:
            assert not starting, f"{trial} stopped while {starting} was starting"
    assert [w for _, _, w in events].count("stop") == 3
    assert sorted(r.state for r in results) == ["COMPLETE"] * 3  # every trial ran to its end


def test_a_trial_whose_measurement_would_overrun_the_time_budget_is_given_up_with_its_server_stopped(tmp_path):
    now = [0.0]
    ctx, events = stand_ins(tmp_path, time_budget=TimeBudget(600.0, clock=lambda: now[0]), pause=False)
    measured: list[int] = []

    def measure_200s(url, config, ctx, number, *_a, **_k):  # a measurement takes 200 s by the budget's clock
        measured.append(number)
        now[0] += 200.0
        return CapacityResult(1.0, None, None, None, ())

    ctx = dataclasses.replace(ctx, measure=measure_200s)
    said: list[str] = []
    cfg = ServeConfig(model="/m", max_num_seqs=8)
    # the first measurement is never given up (nothing says yet what one takes), even with too little left
    now[0] = 500.0
    assert run_trial(1, cfg, False, ctx, said.append, device="0").state == "COMPLETE"
    now[0] = 450.0  # 150 s of the budget left, a measurement took 200 s
    with pytest.raises(OverBudget, match="150 s left, a measurement takes 200 s") as given_up:
        run_trial(2, cfg, False, ctx, said.append, device="0")
    # its server was up (company to other measurements): the timeline goes with it, stopped included
    kept = given_up.value.timeline
    assert {"launched", "ready", "stopped"} <= set(kept) and "measured" not in kept
    assert [w for _, t, w in events if t == "trial-002"] == ["start-begin", "start-end", "stop"]
    assert measured == [1] and "given up before measuring" in said[-1]
    now[0] = 100.0  # 500 s left: it measures
    assert run_trial(3, cfg, False, ctx, device="0").state == "COMPLETE"
    assert measured == [1, 3]


def test_a_trial_keeps_the_wall_clock_times_of_its_phases(tmp_path):
    ticks = iter(range(100, 200))
    ctx, _events = stand_ins(tmp_path, pause=False, wall_clock=lambda: float(next(ticks)), host="gpu-host")
    r = run_trial(1, ServeConfig(model="/m", max_num_seqs=8), False, ctx, device="0")
    assert r.timeline == {
        "host": "gpu-host",
        "device": "0",
        "launched": 100.0,
        "ready": 101.0,
        "measured": [102.0, 103.0],
        "stopped": 104.0,
    }
    assert r.to_dict()["timeline"] == r.timeline  # stored in the study with the result
