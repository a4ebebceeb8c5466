"""A launcher that starts nothing, for tests of the trial runner and what drives it: no vLLM, no port.

``FakeLauncher`` yields a ``FakeServer`` per start and records every start and stop; ``on_start`` and
``on_stop`` see them as they happen (a test of the lock discipline sleeps and notes times there), and
``failure`` makes every start raise that LaunchFailure instead, as a server that would not come up.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.readback import ReadBack
from loadtest.lengths import LengthDist
from loadtest.workload import Workload
from tuner.budget.gpu import GPUProfile
from tuner.model.spec import ModelSpec
from tuner.synthetic import shape_config
from tuner.trial.capacity import MeasurePlan
from tuner.trial.context import Measure, TrialContext
from tuner.trial.device_rules import DeviceRules
from tuner.trial.launcher import Launcher


@dataclass
class FakeServer:
    """A server that is up until stopped; ``dies``: it is found dead after the measurement."""

    name: str = "fake"
    url: str = "http://127.0.0.1:1"
    startup_s: float = 1.0
    readback: ReadBack = field(default_factory=ReadBack)
    dies: bool = False
    tail: str = ""
    stopped: bool = False
    on_stop: Callable[[FakeServer], None] = field(default=lambda _s: None, repr=False)

    def alive(self) -> bool:
        return not self.dies and not self.stopped

    def log_tail(self) -> str:
        return self.tail

    def stop(self) -> None:
        if not self.stopped:
            self.stopped = True
            self.on_stop(self)


class FakeLauncher:
    """Starts a FakeServer named after its log directory (``trial-003``); keeps what it started."""

    server_in_tree = False  # no server process: nothing of the host to measure

    def __init__(
        self,
        *,
        server: Callable[[str], FakeServer] = FakeServer,
        on_start: Callable[[str], None] = lambda _name: None,
        on_stop: Callable[[FakeServer], None] = lambda _s: None,
        failure: LaunchFailure | None = None,
    ) -> None:
        self._server, self._on_start, self._on_stop, self.failure = server, on_start, on_stop, failure
        self.started: list[tuple[ServeConfig, FakeServer]] = []
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def start(self, config: ServeConfig, log_dir: Path, progress: Callable[[str], None]) -> Iterator[FakeServer]:
        name = Path(log_dir).name
        self._on_start(name)
        if self.failure is not None:
            raise self.failure
        server = self._server(name)
        server.on_stop = self._on_stop
        with self._lock:
            self.started.append((config, server))
        progress(f"started a stand-in server for {name}")
        try:
            yield server
        finally:
            server.stop()


def fake_context(
    log_dir: Path, launcher: Launcher, measure: Measure, rules: DeviceRules, **fields: Any
) -> TrialContext:
    """A trial context over the tiny Llama's shape on the H200 profile, no SLOs, no warm-up: what the runner's
    and the scheduler's tests drive with a FakeLauncher and a measuring stand-in (``fields`` for the rest)."""
    return TrialContext(
        spec=ModelSpec.from_config(shape_config("llama-tiny")),
        gpu=GPUProfile.load("h200"),
        slos=(),
        workload=Workload("fake", LengthDist("fixed", 16, 16), LengthDist("fixed", 4, 4)),
        plan=MeasurePlan(warmup_requests=0),
        python="python",
        log_dir=log_dir,
        launcher=launcher,
        measure=measure,
        rules=rules,
        **fields,
    )
