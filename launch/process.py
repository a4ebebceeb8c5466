"""Process plumbing for launch: the watchdog spawn, process-group queries, ports, log tails.

Linux only (``/proc``), like vLLM itself.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import IO

WATCHDOG = Path(__file__).with_name("watchdog.py")
LOG_TAIL_BYTES = 256 * 1024


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes of process group ``pgid`` (Linux /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read().decode("ascii", "replace")
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()  # after "pid (comm) "
        if len(fields) > 2 and fields[0] not in ("Z", "X") and int(fields[2]) == pgid:
            out.append(int(name))
    return out


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def read_log_tail(path: Path, nbytes: int = LOG_TAIL_BYTES) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - nbytes))
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def spawn_watched(
    argv: list[str],
    env: dict[str, str],
    log_path: Path,
    grace_s: float,
    on_orphan: list[str] | None = None,
    nice: int = 0,
) -> tuple[subprocess.Popen[bytes], IO[bytes], Path]:
    """Run ``argv`` under the watchdog in a new session; output appended to ``log_path``;
    ``nice`` > 0 lowers the priority of that session (see watchdog.lower_priority)."""
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_file = open(log_path, "ab")
    pidfile = log_path.with_suffix(".pid")
    cmd = [
        sys.executable,
        str(WATCHDOG),
        "--grace",
        str(grace_s),
        "--pidfile",
        str(pidfile),
        "--on-orphan",
        json.dumps(on_orphan or []),
        *(["--nice", str(nice)] if nice > 0 else []),
        "--",
        *argv,
    ]
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
        close_fds=True,
    )
    return proc, log_file, pidfile
