"""Overlapped startups on one device: no server may start or stop while another one starts.

vLLM profiles its memory at startup from device-wide free memory; a server that starts or stops meanwhile
makes it abort ("Error in memory profiling", seen on the H200). What is under test is run_trial's lock
discipline, so the server and the measurement are stand-ins that only record when they run.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

import launch.server
import tuner.objective as objective
from launch.config import ServeConfig
from launch.readback import ReadBack
from tuner.gpu import GPUProfile
from tuner.measure import CapacityResult, MeasurePlan
from tuner.objective import TrialContext, run_trial
from tuner.time_budget import OverBudget, TimeBudget

STARTUP_S, MEASURE_S = 0.3, 0.1


def stand_ins(monkeypatch, tmp_path, **ctx_fields) -> tuple[TrialContext, list[tuple[float, str, str]]]:
    """Stand-in servers and measurements that record (time, trial, what) events; the context of one device."""
    events: list[tuple[float, str, str]] = []  # (time, trial, what)
    lock = threading.Lock()

    def note(trial: str, what: str) -> None:
        with lock:
            events.append((time.monotonic(), trial, what))

    class FakeServer:
        def __init__(self, name: str) -> None:
            self.name, self.url, self.startup_s = name, "http://127.0.0.1:1", STARTUP_S
            self.readback = ReadBack()

        def alive(self) -> bool:
            return True

        def stop(self) -> None:
            note(self.name, "stop")

        def __enter__(self) -> FakeServer:
            return self

        def __exit__(self, *exc: object) -> None:
            self.stop()

    def fake_start_server(config, *, log_dir, **_kw):
        name = log_dir.name
        note(name, "start-begin")
        time.sleep(STARTUP_S)
        note(name, "start-end")
        return FakeServer(name)

    def fake_measure(url, config, ctx, number, on_level, hopeless=None, plan=None):
        note(f"trial-{number:03d}", "measure")
        time.sleep(MEASURE_S)
        return CapacityResult(1.0, None, None, None, ())

    budget = SimpleNamespace(feasible=True, reasons=(), to_dict=lambda: {})
    monkeypatch.setattr(launch.server, "start_server", fake_start_server)
    monkeypatch.setattr(objective, "_measure", fake_measure)
    monkeypatch.setattr(objective, "estimate_budget", lambda *a, **k: budget)
    monkeypatch.setattr(objective, "spec_of", lambda _config, _ctx: None)
    monkeypatch.setattr(objective, "hopeless_check", lambda *_a: None)
    monkeypatch.setattr(objective, "asdict", lambda _x: {})
    ctx = TrialContext(
        spec=None,
        gpu=GPUProfile.load("h200"),
        slos=(),
        workload=None,
        plan=MeasurePlan(warmup_requests=0),
        python="python",
        log_dir=tmp_path,
        start_locks={"0": threading.Lock()},
        measure_locks={"0": threading.Lock()},
        **ctx_fields,
    )
    return ctx, events


def test_no_server_stops_or_starts_during_another_startup(monkeypatch, tmp_path):
    ctx, events = stand_ins(monkeypatch, tmp_path)
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


def test_a_trial_whose_measurement_would_overrun_the_time_budget_is_given_up_with_its_server_stopped(
    monkeypatch, tmp_path
):
    now = [0.0]
    ctx, events = stand_ins(monkeypatch, tmp_path, time_budget=TimeBudget(600.0, clock=lambda: now[0]))
    measured: list[int] = []

    def measure_200s(url, config, ctx, number, *_a, **_k):  # a measurement takes 200 s by the budget's clock
        measured.append(number)
        now[0] += 200.0
        return CapacityResult(1.0, None, None, None, ())

    monkeypatch.setattr(objective, "_measure", measure_200s)
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


def test_a_trial_keeps_the_wall_clock_times_of_its_phases(monkeypatch, tmp_path):
    ticks = iter(range(100, 200))
    ctx, _events = stand_ins(monkeypatch, tmp_path, wall_clock=lambda: float(next(ticks)), host="gpu-host")
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
