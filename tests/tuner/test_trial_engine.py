"""The trial engine's seams (tuner.trial): every launch outcome is a trial state, the Docker launcher pins
the trial's GPU, and the scheduler stops the other trials of a run when one of them hits a bug."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.vllm_flags import VllmInfo
from tuner.trial.capacity import CapacityResult
from tuner.trial.context import TrialContext
from tuner.trial.device_rules import DeviceRules
from tuner.trial.launcher import DockerLauncher
from tuner.trial.level import Level
from tuner.trial.result import FAIL
from tuner.trial.runner import run_trial
from tuner.trial.scheduler import Job, Scheduler
from tuner.trial.testing import FakeLauncher, FakeServer, fake_context

CONFIG = ServeConfig(model="/m", max_num_seqs=8)


def measured(*_a: Any, **_k: Any) -> CapacityResult:
    return CapacityResult(1.0, None, None, None, ())


def context(tmp_path: Path, launcher: Any, measure: Any = measured, rules: DeviceRules | None = None) -> TrialContext:
    return fake_context(tmp_path, launcher, measure, rules or DeviceRules())


def test_a_launch_that_fails_is_a_failed_trial_with_its_reason_and_log_tail(tmp_path):
    failure = LaunchFailure("oom", "CUDA out of memory (log: x.log)", "torch.OutOfMemoryError")
    r = run_trial(4, CONFIG, False, context(tmp_path, FakeLauncher(failure=failure)), device="1")
    assert r.state == FAIL and r.fail_reason == "oom: CUDA out of memory (log: x.log)"
    assert r.log_tail == "torch.OutOfMemoryError" and r.extra == {"budget_admitted_but_failed": True}
    assert r.launched.env == (("CUDA_VISIBLE_DEVICES", "1"),) and {"launched", "stopped"} <= set(r.timeline)


def test_a_server_that_dies_under_load_is_a_failed_trial_and_is_stopped(tmp_path):
    launcher = FakeLauncher(server=lambda name: FakeServer(name, dies=True, tail="Engine core died"))
    r = run_trial(5, CONFIG, False, context(tmp_path, launcher))
    assert r.state == FAIL and r.fail_reason.startswith("crashed_after_start") and r.log_tail == "Engine core died"
    ((config, server),) = launcher.started
    assert server.name == "trial-005" and server.stopped and config == r.launched


class _Container:
    id, status, attrs = "c" * 64, "exited", {"State": {"ExitCode": 1, "OOMKilled": False, "Pid": 0}}

    def reload(self) -> None: ...
    def logs(self, **_kw: Any) -> bytes:
        return b"RuntimeError: no GPU\n"

    def stop(self, timeout: int) -> None: ...
    def remove(self, force: bool) -> None: ...


class _Client:
    def __init__(self) -> None:
        self.containers, self.runs = self, []

    def run(self, **spec: Any) -> _Container:
        self.runs.append(spec)
        return _Container()


def test_the_docker_launcher_gives_the_container_the_trials_gpu(tmp_path):
    help_text = (Path(__file__).parents[1] / "launch" / "data" / "help-options-0.26.0.txt").read_text()
    info = VllmInfo.from_help_text(help_text, python="/opt/py/bin/python", version="0.26.0", platform="cuda")
    client = _Client()
    launcher = DockerLauncher(info, client=client, watchdog=False, startup_timeout_s=5)
    with pytest.raises(LaunchFailure), launcher.start(CONFIG.with_env(CUDA_VISIBLE_DEVICES="3"), tmp_path, print):
        pass
    (spec,) = client.runs
    assert spec["device_requests"][0]["device_ids"] == ["3"]  # the container numbers its one GPU 0
    assert "CUDA_VISIBLE_DEVICES" not in spec["environment"]


def test_a_bug_in_one_trial_stops_the_other_trials_servers_before_it_is_raised(tmp_path):
    launcher = FakeLauncher()
    measuring = threading.Event()

    def endless(url, config, ctx, number, on_level, hopeless=None, plan=None, fresh=None):  # a level after a level
        measuring.set()
        while True:
            on_level(Level("rate", 1.0, None, True, 1.0, 1.0, {}, 0))
            threading.Event().wait(0.05)

    scheduler = Scheduler(["0", "1"])
    ctx = context(tmp_path, launcher, endless, scheduler.rules)
    jobs = iter([Job(lambda device: run_trial(1, CONFIG, False, ctx, device=device)), Job(lambda _d: bug())])

    def bug() -> None:
        measuring.wait(10)
        raise RuntimeError("a bug")

    with pytest.raises(RuntimeError, match="a bug"):
        scheduler.run(lambda: next(jobs, None), lambda done: None)
    ((_, server),) = launcher.started
    assert server.stopped and scheduler.rules.cancel.is_set()


def test_the_rules_of_a_run_follow_its_devices():
    overlapped = Scheduler.for_devices(["0", "1"], overlap=True)
    assert overlapped.slots == ["0", "0", "1", "1"] and set(overlapped.rules.measure_locks) == {"0", "1"}
    grouped = Scheduler.for_devices(["0", "1", "2", "3"], layouts=True)
    assert grouped.slots == ["0", "1", "2", "3"] and grouped.rules.pool is not None
    with grouped.rules.placed(2, "3") as where:
        assert where == "0,1"  # a group from the pool, not the slot's own device
    assert Scheduler.for_devices([None]).rules.placed(1, None).__enter__() is None
