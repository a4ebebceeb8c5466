"""Looking for processes a test started (by a unique served-model name or a process group)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from launch.server import group_members


def procs_mentioning(token: str) -> list[int]:
    """PIDs whose command line contains ``token`` (a unique served model name)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmd = Path(f"/proc/{name}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
            state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if token in cmd and state not in ("Z", "X"):
            out.append(int(name))
    return out


def wait_until_gone(token: str, pgid: int | None, timeout: float) -> list[int]:
    """Wait until no process mentions ``token`` and group ``pgid`` is empty; the survivors otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        left = sorted(set(procs_mentioning(token)) | set(group_members(pgid) if pgid else []))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)
