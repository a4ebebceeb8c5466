"""launch.sh against real vLLM (CPU): a model directory whose path has a space, a quote and
``$(touch pwned)``; the script must print "ready" and serve a completion. One server start."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from launch.config import ServeConfig
from launch.fingerprint import model_fingerprint
from launch.script import write_launch_script
from launch.server import free_port, group_members
from launch.vllm_info import probe_vllm

pytestmark = [pytest.mark.vllm, pytest.mark.long]


def test_launch_sh_with_a_hostile_model_path(
    vllm_python: str, tiny_model: Path, cpu_env: dict[str, str], tmp_path: Path, vllm_start_lock: Callable
) -> None:
    model = tmp_path / "it's my model $(touch pwned)"
    shutil.copytree(tiny_model, model)
    info = probe_vllm(vllm_python)
    config = ServeConfig(model=str(model), max_model_len=1024, enable_prefix_caching=False)
    script = write_launch_script(
        tmp_path / "launch.sh",
        config,
        info,
        fingerprint=model_fingerprint(model),
        model_dir=str(model),
        note="test: hostile path",
    )
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    port = free_port()
    out = tmp_path / "launch.out"
    with vllm_start_lock(), open(out, "w") as f:
        proc = subprocess.Popen(
            ["bash", str(script)],
            cwd=tmp_path,
            stdout=f,
            stderr=subprocess.STDOUT,
            env={**cpu_env, "PORT": str(port)},
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 400
            while "ready" not in out.read_text():
                assert proc.poll() is None, out.read_text()[-3000:]
                assert time.monotonic() < deadline, "no 'ready' within 400 s"
                time.sleep(1)
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)
            raise
    try:
        ready = next(ln for ln in out.read_text().splitlines() if ln.startswith("ready"))
        assert f"http://127.0.0.1:{port}" in ready
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/completions",
            timeout=60,
            json={"model": str(model), "prompt": "w5 w6", "max_tokens": 4, "ignore_eos": True},
        )
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 4
        assert out.read_text().count("POST /v1/completions") >= 2  # warmup before "ready"
        assert proc.poll() is None  # still serving in the foreground
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # what Ctrl-C / docker stop / systemd would do
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    deadline = time.monotonic() + 15
    while group_members(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert group_members(proc.pid) == []
    assert not list(tmp_path.rglob("pwned")) and not Path("pwned").exists()
