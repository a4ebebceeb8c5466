"""Start one vLLM server, wait until it serves, warm it up, read back its KV cache; stop it.

Process layout (see launch/watchdog.py): tuner ─pipe→ watchdog (new session, group leader) ─→
``python -m vllm.entrypoints.openai.api_server`` ─→ EngineCore ─→ workers, all in the watchdog's
group. ``stop()`` sends SIGTERM to the group, SIGKILL after ``grace_s``; if the tuner dies in any
way the watchdog does the same. Output goes to a log file, never to a pipe nobody reads.

``start_server`` raises LaunchFailure (reason from launch.classify) and leaves nothing running
when the server exits, answers nothing before the timeout, or fails its warmup requests. The
health wait, warm-up and read-back are launch.server_phases' (shared with the Docker backend).
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from launch.command import build_command, env_to_unset
from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.process import LOG_TAIL_BYTES, free_port, group_members, read_log_tail, spawn_watched
from launch.readback import ReadBack
from launch.server_phases import ServerBase, read_back, wait_healthy, warm_up
from launch.vllm_flags import VllmInfo
from launch.vllm_info import probe_vllm


class LaunchedServer(ServerBase):
    """A live vLLM server owned by this process. Context manager; ``stop()`` is idempotent."""

    def __init__(
        self,
        *,
        config: ServeConfig,
        info: VllmInfo,
        host: str,
        port: int,
        log_path: Path,
        proc: subprocess.Popen[bytes],
        log_file: IO[bytes],
        pidfile: Path,
        grace_s: float = 15.0,
    ) -> None:
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


def _start_once(
    config: ServeConfig,
    info: VllmInfo,
    *,
    host: str,
    port: int,
    log_dir: Path,
    startup_timeout_s: float,
    warmup_requests: int,
    on_progress: Callable[[str], None] | None,
    grace_s: float,
    base_env: dict[str, str] | None,
    nice: int,
) -> LaunchedServer:
    argv, env_add = build_command(config, info, host=host, port=port)
    env = {**(os.environ if base_env is None else base_env), **env_add}
    for name in env_to_unset(config, info):
        env.pop(name, None)
    log_path = Path(log_dir) / f"vllm-{time.strftime('%Y%m%d-%H%M%S')}-{port}.log"
    t0 = time.monotonic()
    proc, log_file, pidfile = spawn_watched(argv, env, log_path, grace_s, nice=nice)
    server = LaunchedServer(
        config=config,
        info=info,
        host=host,
        port=port,
        log_path=log_path,
        proc=proc,
        log_file=log_file,
        pidfile=pidfile,
        grace_s=grace_s,
    )
    try:
        if on_progress is not None:
            on_progress(f"starting vLLM {info.version} on {server.url} (log: {log_path})")
        wait_healthy(server, startup_timeout_s, on_progress, t0)
        if on_progress is not None:
            on_progress(f"vLLM healthy after {time.monotonic() - t0:.0f} s; {warmup_requests} warmup request(s)")
        warm_up(server, warmup_requests)
        server.startup_s = time.monotonic() - t0
        server.readback = read_back(server)
    except BaseException:
        server.stop(grace_s=5.0)  # no-op if _fail already stopped it; covers Ctrl-C here too
        raise
    return server


def start_server(
    config: ServeConfig,
    *,
    python: str,
    host: str = "127.0.0.1",
    port: int | None = None,
    log_dir: Path,
    startup_timeout_s: float = 600,
    warmup_requests: int = 2,
    on_progress: Callable[[str], None] | None = None,
    grace_s: float = 15.0,
    info: VllmInfo | None = None,
    base_env: dict[str, str] | None = None,
    nice: int = 0,
) -> LaunchedServer:
    """Launch ``config`` with the vLLM of ``python``; return once it is healthy and warmed up.

    ``port=None`` picks a free port (and retries once with another if it was taken meanwhile).
    ``base_env`` (default: this process's environment) is extended with the command's env.
    ``nice`` > 0 runs the server at lower priority than this process (for measuring it from the same
    cores: vLLM-CPU; see ``tuner.trial.context.CPU_SERVER_NICE``).
    Raises LaunchInputError before starting anything when the config does not fit that vLLM,
    LaunchFailure (with ``reason``) when the server fails; nothing is left running then.
    """
    info = info or probe_vllm(python)
    attempts = 1 if port is not None else 2
    for attempt in range(attempts):
        chosen = port if port is not None else free_port(host)
        try:
            return _start_once(
                config,
                info,
                host=host,
                port=chosen,
                log_dir=log_dir,
                startup_timeout_s=startup_timeout_s,
                warmup_requests=warmup_requests,
                on_progress=on_progress,
                grace_s=grace_s,
                base_env=base_env,
                nice=nice,
            )
        except LaunchFailure as e:
            if e.reason != "port_in_use" or attempt + 1 == attempts:
                raise
    raise AssertionError("unreachable")


__all__ = [
    "LOG_TAIL_BYTES",
    "LaunchedServer",
    "free_port",
    "group_members",
    "read_log_tail",
    "spawn_watched",
    "start_server",
]
