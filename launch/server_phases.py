"""What every vLLM server backend shares once its process or container runs: the handle it offers
(``ServerHandle``, ``ServerBase``), the health wait, the warm-up, the KV-cache read-back and the
classified failure. ``launch.server`` (a local process) and ``launch.docker_backend`` (a container)
start the server; these phases take it from started to measured-ready.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, Self

import httpx

from launch.classify import classify_failure
from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.process import LOG_TAIL_BYTES
from launch.readback import ReadBack, parse_cache_config_info, parse_startup_log

WARMUP_PROMPT = "Warm up the server before anything is measured."


class ServerHandle(Protocol):
    """What the health wait, warmup and read-back need: LaunchedServer and DockerServer both fit."""

    config: ServeConfig
    url: str
    log_path: Path

    def returncode(self) -> int | None: ...
    def log_tail(self, nbytes: int = LOG_TAIL_BYTES) -> str: ...
    def stop(self, grace_s: float | None = None) -> None: ...
    def metrics_text(self, timeout: float = 10.0) -> str: ...


class ServerBase:
    """What a process-backed and a container-backed server share: liveness, classified failure,
    /metrics and the context manager. Subclasses give ``returncode``, ``log_tail`` and ``stop``."""

    url: str
    _stopped: bool

    def returncode(self) -> int | None:
        raise NotImplementedError

    def log_tail(self, nbytes: int = LOG_TAIL_BYTES) -> str:
        raise NotImplementedError

    def stop(self, grace_s: float | None = None) -> None:
        raise NotImplementedError

    def alive(self) -> bool:
        return not self._stopped and self.returncode() is None

    def failure(self, phase: str = "running") -> LaunchFailure | None:
        """A classified LaunchFailure if the server has died on its own, else None."""
        if self._stopped:
            return None
        rc = self.returncode()
        if rc is None:
            return None
        return classified(self.log_tail(), rc, phase)

    def metrics_text(self, timeout: float = 10.0) -> str:
        r = httpx.get(f"{self.url}/metrics", timeout=timeout)
        r.raise_for_status()
        return r.text

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _last_log_line(server: ServerHandle) -> str:
    for line in reversed(server.log_tail(8192).splitlines()):
        line = line.strip()
        if line and "Warning" not in line and "warnings.warn" not in line:
            return line[:160]
    return ""


def classified(log_tail: str, returncode: int | None, phase: str, where: str = "") -> LaunchFailure:
    """The LaunchFailure a log tail shows (reason from launch.classify), keeping the tail's last 8 kB."""
    reason, message = classify_failure(log_tail, returncode, phase)
    return LaunchFailure(reason, message + where, log_tail[-8000:])


def fail(server: ServerHandle, phase: str, returncode: int | None) -> LaunchFailure:
    """Classify the failure from the log tail, stop the server, return the LaunchFailure to raise."""
    failure = classified(server.log_tail(), returncode, phase, f" (log: {server.log_path})")
    server.stop(grace_s=5.0)
    return failure


def wait_healthy(server: ServerHandle, timeout_s: float, on_progress: Callable[[str], None] | None, t0: float) -> None:
    next_report = t0 + 10.0
    with httpx.Client(timeout=2.0) as client:
        while True:
            rc = server.returncode()
            if rc is not None:
                raise fail(server, "startup", rc)
            try:
                if client.get(f"{server.url}/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            now = time.monotonic()
            if now - t0 > timeout_s:
                raise fail(server, "startup", None)
            if on_progress is not None and now >= next_report:
                on_progress(f"vLLM starting ({now - t0:.0f} s): {_last_log_line(server)}")
                next_report = now + 10.0
            time.sleep(0.5)


def warm_up(server: ServerHandle, n: int, timeout_s: float = 300.0) -> None:
    """``n`` short completions, one after another; a cold first request is slow."""
    body: dict[str, Any] = {"model": server.config.name, "prompt": WARMUP_PROMPT, "max_tokens": 8, "temperature": 0.0}
    with httpx.Client(timeout=timeout_s) as client:
        for i in range(n):
            try:
                r = client.post(f"{server.url}/v1/completions", json=body)
            except httpx.HTTPError as e:
                problem = f"warmup request {i + 1}/{n} failed: {e!r}"
            else:
                if r.status_code == 200:
                    continue
                problem = f"warmup request {i + 1}/{n} got HTTP {r.status_code}: {r.text[:300]}"
            rc = server.returncode()
            failure = fail(server, "warmup", rc)
            if rc is None and failure.reason == "warmup_failed":
                failure = LaunchFailure("warmup_failed", f"{problem} (log: {server.log_path})", failure.log_tail)
            raise failure


def read_back(server: ServerHandle) -> ReadBack:
    """/metrics cache_config_info, completed from the startup log."""
    from_log = parse_startup_log(server.log_tail(4 * LOG_TAIL_BYTES))
    try:
        from_metrics = parse_cache_config_info(server.metrics_text())
    except httpx.HTTPError:
        return from_log
    return from_metrics.merged(from_log)
