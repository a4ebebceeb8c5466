"""The watchdog on its own, with a child that forks a grandchild (no vLLM: fast). The same
guarantee with a real vLLM server is in test_launch_server_e2e.py."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from launch.server import group_members

HERE = Path(__file__).parent


def _wait_gone(pgid: int, timeout: float) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = group_members(pgid)
        if not left:
            return []
        time.sleep(0.1)
    return group_members(pgid)


def _start_parent(tmp_path: Path) -> tuple[subprocess.Popen[str], dict[str, int]]:
    parent = subprocess.Popen(
        [sys.executable, str(HERE / "parent_process.py"), "dummy", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert parent.stdout is not None
    info = json.loads(parent.stdout.readline())
    assert len(group_members(info["pgid"])) == 3  # watchdog, child, grandchild
    return parent, info


def test_kill_9_of_parent_takes_the_whole_group_down(tmp_path: Path) -> None:
    parent, info = _start_parent(tmp_path)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    assert _wait_gone(info["pgid"], timeout=15) == []  # grace 2 s in parent_process.py
    assert (tmp_path / "cleanup-ran").exists()  # the --on-orphan command ran (Docker cleanup hook)


def test_ctrl_c_of_parent_takes_the_whole_group_down(tmp_path: Path) -> None:
    parent, info = _start_parent(tmp_path)
    os.kill(parent.pid, signal.SIGINT)  # KeyboardInterrupt in the parent, which exits uncleanly
    parent.wait()
    assert _wait_gone(info["pgid"], timeout=15) == []
    assert (tmp_path / "cleanup-ran").exists()


def test_watchdog_reports_exit_code_and_cleans_leftovers(tmp_path: Path) -> None:
    from launch.server import spawn_watched

    script = "import subprocess, sys; subprocess.Popen(['sleep', '600']); sys.exit(3)"
    proc, log, pidfile = spawn_watched([sys.executable, "-c", script], dict(os.environ), tmp_path / "x.log", 2.0)
    try:
        assert proc.wait(timeout=30) == 3
        assert _wait_gone(proc.pid, timeout=10) == []  # the orphaned `sleep` was killed
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        log.close()


def test_nice_lowers_the_priority_of_the_server_and_everything_it_starts(tmp_path: Path) -> None:
    # what trials on the cpu profile use so that the load generator is not queued behind vLLM's busy-polling
    from launch.server import spawn_watched

    child = "import os; print('child', os.getpriority(os.PRIO_PROCESS, 0))"
    script = (
        "import os, subprocess, sys; print('server', os.getpriority(os.PRIO_PROCESS, 0), flush=True); "
        f"subprocess.run([sys.executable, '-c', {child!r}])"
    )
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    proc, log, _ = spawn_watched([sys.executable, "-c", script], dict(os.environ), tmp_path / "x.log", 2.0, nice=7)
    try:
        assert proc.wait(timeout=30) == 0
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        log.close()
    text = (tmp_path / "x.log").read_text()
    assert f"server {min(ours + 7, 19)}" in text and f"child {min(ours + 7, 19)}" in text
    assert "[slotune-watchdog] server niceness +7" in text
    if Path("/proc/self/autogroup").exists():
        assert "process and session (autogroup)" in text
    assert os.getpriority(os.PRIO_PROCESS, 0) == ours  # the tuner itself keeps its priority


def test_stop_of_a_running_server_is_complete_and_idempotent(tmp_path: Path) -> None:
    # a stand-in server that forks a grandchild and ignores SIGTERM: stop() must escalate to SIGKILL
    from launch.config import ServeConfig
    from launch.server import LaunchedServer, spawn_watched
    from launch.vllm_flags import VllmInfo

    script = (
        "import signal, subprocess, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "subprocess.Popen(['sleep', '600']); print('up', flush=True); time.sleep(600)"
    )
    proc, log, pidfile = spawn_watched([sys.executable, "-c", script], dict(os.environ), tmp_path / "s.log", 1.0)
    info = VllmInfo.from_help_text("", python=sys.executable, version="0.32.0", platform="cpu")
    server = LaunchedServer(
        config=ServeConfig(model="m"),
        info=info,
        host="127.0.0.1",
        port=1,
        log_path=tmp_path / "s.log",
        proc=proc,
        log_file=log,
        pidfile=pidfile,
        grace_s=0.5,
    )
    deadline = time.monotonic() + 15
    while "up" not in (tmp_path / "s.log").read_text() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(group_members(server.pgid)) == 3  # watchdog, server, grandchild
    server.stop()
    assert group_members(server.pgid) == [] and not server.alive() and server.returncode() is not None
    server.stop()  # a second call: nothing to do, no error
    assert not pidfile.exists()
