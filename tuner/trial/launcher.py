"""The seam between a trial and a server: ``Launcher.start(config, log_dir, progress)`` is a context
manager that yields a running, warmed-up server and stops it on exit.

Two launchers start real servers: ``VllmLauncher`` (a vLLM process of an interpreter, launch.server) and
``DockerLauncher`` (the vllm-openai image, launch.docker_backend). ``tuner.trial.testing.FakeLauncher``
starts nothing, for tests. A server that fails to start raises ``launch.errors.LaunchFailure`` with
nothing left running; the trial runner turns it into a FAIL state.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from launch.config import ServeConfig
from launch.docker_backend import start_docker_server
from launch.readback import ReadBack
from launch.server import start_server
from launch.vllm_flags import VllmInfo

Progress = Callable[[str], None]


class Server(Protocol):
    """What a trial reads of a running server (launch.server.LaunchedServer, DockerServer, FakeServer)."""

    url: str
    startup_s: float  # launch to warmed up
    readback: ReadBack  # what vLLM reports of its KV cache

    def alive(self) -> bool: ...
    def log_tail(self) -> str: ...
    def stop(self) -> None: ...


class Launcher(Protocol):
    """Starts one server of ``config`` (already pinned to its device: CUDA_VISIBLE_DEVICES in its env),
    logging to ``log_dir`` and telling ``progress`` how the start goes; stops it when the block ends.
    ``server_in_tree``: the server runs as a descendant of this process, so the host's CPU time splits into
    the server's and other processes' (loadtest.host_cpu)."""

    @property
    def server_in_tree(self) -> bool: ...

    def start(
        self, config: ServeConfig, log_dir: Path, progress: Progress
    ) -> contextlib.AbstractContextManager[Server]: ...


@dataclass(frozen=True)
class VllmLauncher:
    """A vLLM server process of ``python``'s vLLM, in a process group its watchdog ends with the tuner."""

    python: str
    startup_timeout_s: float = 900.0
    warmup_requests: int = 2
    nice: int = 0  # > 0: the server runs below the load generator's priority (the cpu profile)
    server_in_tree: bool = True  # a child process of the tuner

    @contextlib.contextmanager
    def start(self, config: ServeConfig, log_dir: Path, progress: Progress) -> Iterator[Server]:
        with start_server(
            config,
            python=self.python,
            log_dir=log_dir,
            startup_timeout_s=self.startup_timeout_s,
            warmup_requests=self.warmup_requests,
            on_progress=progress,
            nice=self.nice,
        ) as server:
            yield server


@dataclass(frozen=True)
class DockerLauncher:
    """A container of the vllm-openai image whose vLLM ``info`` describes (``--docker-image``; tune itself
    does not offer it yet: tuner.inputs). A device pinned in the config's env is passed as the container's
    GPU, which the container numbers from 0."""

    info: VllmInfo
    image: str | None = None
    startup_timeout_s: float = 900.0
    warmup_requests: int = 2
    client: Any = None  # the Docker SDK's client (None: docker.from_env()); tests pass a fake
    watchdog: bool = True  # a process that removes the container if the tuner dies
    server_in_tree: bool = False  # the Docker daemon's child, not the tuner's: host CPU is not split

    @contextlib.contextmanager
    def start(self, config: ServeConfig, log_dir: Path, progress: Progress) -> Iterator[Server]:
        env = dict(config.env)
        pinned = env.pop("CUDA_VISIBLE_DEVICES", None)
        unpinned = replace(config, env=tuple(sorted(env.items())))
        with start_docker_server(
            unpinned,
            self.info,
            log_dir=log_dir,
            startup_timeout_s=self.startup_timeout_s,
            warmup_requests=self.warmup_requests,
            on_progress=progress,
            image=self.image,
            gpus=pinned.split(",") if pinned else "all",
            client=self.client,
            watchdog=self.watchdog,
        ) as server:
            yield server
