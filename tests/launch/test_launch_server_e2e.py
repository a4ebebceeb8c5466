"""End to end against real vLLM (the CPU build): the session's shared server (``tiny_server``, also
the load generator's) and three starts of their own (timeout; two API servers, then kill -9 of the parent;
crash). A length that cannot fit the KV space is refused in tests/budget/test_vllm_cpu.py, next to its
prediction. Every start that comes up holds /tmp/slotune-vllm.lock while it boots, so test runs on a shared
machine do not all compile at once; every server runs niced, as the tuner's trials on the cpu profile do
(docs/testing.md)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import httpx
import pytest

from launch.config import ServeConfig
from launch.errors import LaunchFailure, LaunchInputError
from launch.pace import CPU_PACE_TOLERANCE, pace_ms_per_token, slower
from launch.script_parts import WATCHER_PY
from launch.server import group_members, start_server
from launch.vllm_info import probe_vllm
from tests.conftest import TinyServer
from tests.procs import procs_mentioning, wait_until_gone
from tuner.trial.context import CPU_SERVER_NICE

pytestmark = pytest.mark.vllm
HERE = Path(__file__).parent


def kv_bytes_per_token(model_dir: Path) -> int:
    cfg = json.loads((model_dir / "config.json").read_text())
    head_dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    dtype_bytes = {"bfloat16": 2, "float16": 2, "float32": 4}[cfg["torch_dtype"]]
    return 2 * cfg["num_hidden_layers"] * cfg["num_key_value_heads"] * head_dim * dtype_bytes


class TestGoodStart:
    """The shared server, on vLLM's default compile path: up, warmed, read back, serving."""

    def test_up_warmed_and_read_back(self, tiny_server: TinyServer, tiny_model: Path, cpu_env: dict[str, str]) -> None:
        server = tiny_server.server
        assert server.alive() and server.url == f"http://127.0.0.1:{server.port}"
        assert server.pid != server.pgid and server.pid in group_members(server.pgid)
        assert len(group_members(server.pgid)) >= 3  # watchdog, API server, EngineCore (+ workers)
        assert server.startup_s > 0 and server.log_path.exists()
        assert tiny_server.progress[0].startswith("starting vLLM")
        assert tiny_server.log_after_start.count("POST /v1/completions") == 2  # the warmup requests
        space = int(cpu_env["VLLM_CPU_KVCACHE_SPACE"]) << 30
        rb = server.readback
        assert rb.kv_cache_memory_bytes == space
        expected_tokens = space // kv_bytes_per_token(tiny_model)
        assert rb.kv_cache_size_tokens is not None and rb.block_size is not None
        assert abs(rb.kv_cache_size_tokens - expected_tokens) < rb.block_size
        assert rb.num_gpu_blocks == rb.kv_cache_size_tokens // rb.block_size
        assert rb.max_model_len == 2048
        assert rb.max_concurrency == pytest.approx(rb.kv_cache_size_tokens / 2048)

    def test_its_pace_is_timed_and_timed_again_alike(self, tiny_server: TinyServer) -> None:
        """The pace a trial records and launch.sh times again at start: on one server, no false alarm."""
        server = tiny_server.server
        first = pace_ms_per_token(server.url, "tiny")
        assert first is not None and first > 0
        again = pace_ms_per_token(server.url, "tiny")
        assert again is not None and slower(first, again, CPU_PACE_TOLERANCE) == "", (first, again)
        assert "x slower" in slower(first, 2 * CPU_PACE_TOLERANCE * first, CPU_PACE_TOLERANCE)
        assert pace_ms_per_token(server.url, "no-such-model") is None  # a failed request: the pace is unknown

    def test_launch_shs_watcher_warns_where_the_pace_is_slower_than_measured(self, tiny_server: TinyServer) -> None:
        """launch.sh's watcher (launch.script_parts.WATCHER_PY) against this server, as launch.sh runs it: a study
        that measured a tenth of this pace is warned of; one that measured ten times it is not."""
        server = tiny_server.server
        pace = pace_ms_per_token(server.url, "tiny")
        assert pace is not None
        for measured, warned in ((pace / 10, True), (pace * 10, False)):
            argv = ["127.0.0.1", str(server.port), "tiny", "0", "60", str(server.pid), f"{measured:.4f}", "/study", "2"]
            r = subprocess.run(
                [sys.executable, "-", *argv], input=WATCHER_PY, capture_output=True, text=True, timeout=120
            )
            assert r.returncode == 0 and "ready: http://127.0.0.1" in r.stdout, r.stderr
            warning = "x slower" in r.stderr and "tune retune --study /study" in r.stderr
            assert warning is warned, (measured, r.stderr)
            said = f"ms a token here, {measured:.1f} where measured (a warning above 2x)" in r.stderr
            assert said is not warned, (measured, r.stderr)  # the figures, where nothing warned
        # a name the server does not serve: the request fails, and the watcher says the pace is unknown
        argv = ["127.0.0.1", str(server.port), "no-such-model", "0", "60", str(server.pid), f"{pace:.4f}", "/s", "2"]
        r = subprocess.run([sys.executable, "-", *argv], input=WATCHER_PY, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0 and "ready: http://127.0.0.1" in r.stdout, r.stderr
        assert "launch.sh: WARNING: a fixed request of 32 tokens could not be timed here" in r.stderr, r.stderr

    def test_serves_completions(self, tiny_server: TinyServer) -> None:
        server = tiny_server.server
        r = httpx.post(
            f"{server.url}/v1/completions",
            timeout=60,
            json={"model": "tiny", "prompt": "w1 w2 w3", "max_tokens": 5, "ignore_eos": True},
        )
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 5
        assert server.failure() is None


def test_unknown_flag_is_rejected_before_launch(vllm_python: str, tiny_model: Path, tmp_path: Path) -> None:
    config = ServeConfig(model=str(tiny_model), extra_args=("--no-such-flag", "1"))
    with pytest.raises(LaunchInputError, match=r"has no flag --no-such-flag"):
        start_server(config, python=vllm_python, log_dir=tmp_path)
    info = probe_vllm(vllm_python)
    older = replace(info, flags=info.flags - {"--kv-cache-memory-bytes"})
    with pytest.raises(LaunchInputError, match=rf"vLLM {info.version} .*--kv-cache-memory-bytes"):
        start_server(
            ServeConfig(model=str(tiny_model), kv_cache_memory_bytes=1 << 30),
            python=vllm_python,
            log_dir=tmp_path,
            info=older,
        )
    assert list(tmp_path.iterdir()) == []  # no log: nothing was started


def test_startup_timeout_kills_everything(
    vllm_python: str, tiny_model: Path, cpu_env: dict[str, str], tmp_path: Path
) -> None:
    """Without the start lock: this start is stopped long before it could compile anything."""
    name = f"slow-{uuid.uuid4().hex[:8]}"
    seen: list[str] = []
    with pytest.raises(LaunchFailure) as e:
        start_server(
            ServeConfig(model=str(tiny_model), served_model_name=name),
            python=vllm_python,
            log_dir=tmp_path,
            base_env=cpu_env,
            startup_timeout_s=15,
            on_progress=seen.append,
            nice=CPU_SERVER_NICE,
        )
    assert e.value.reason == "startup_timeout", str(e.value)
    assert any("vLLM starting (1" in s for s in seen)  # progress every 10 s
    assert wait_until_gone(name, None, timeout=10) == []


def test_kill_9_of_the_tuner_leaves_no_vllm_process_of_two_api_servers(
    vllm_python: str, tiny_model: Path, cpu_env: dict[str, str], tmp_path: Path, vllm_start_lock: Callable
) -> None:
    """A stand-in tuner starts api_server_count 2 (through vLLM's CLI, launch.command.CLI_SHIM, vllm-cpu having no
    distribution version): two API server processes over one EngineCore, read back, each serving, /metrics
    answering. Then kill -9 of that parent: its watchdog takes the whole group down, both API servers too. One
    start for both, as a start is ~50 s of CI."""
    name = f"orphan-{uuid.uuid4().hex[:8]}"
    with vllm_start_lock():
        parent = subprocess.Popen(
            [sys.executable, str(HERE / "parent_process.py"), "vllm", str(tmp_path), str(tiny_model), vllm_python,
             name, "2"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=cpu_env,
        )  # fmt: skip
        assert parent.stdout is not None
        line = parent.stdout.readline()
    assert line, "the parent process failed to start a server"
    up = json.loads(line)
    comms = sorted(Path(f"/proc/{p}/comm").read_text().strip() for p in group_members(up["pgid"]))
    assert comms.count("VLLM::APIServer") == 2 and comms.count("VLLM::EngineCor") == 1, comms
    assert "Started 2 API server processes" in Path(up["log"]).read_text() and up["max_model_len"] == 512
    assert len(procs_mentioning(name)) >= 2
    for _ in range(4):  # each API server answers (the kernel spreads the connections)
        r = httpx.post(f"{up['url']}/v1/completions", timeout=60,
                       json={"model": name, "prompt": "w1 w2 w3", "max_tokens": 5, "ignore_eos": True})  # fmt: skip
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 5
    metrics = httpx.get(f"{up['url']}/metrics", timeout=10).text
    assert 'vllm:request_success_total{engine="0",finished_reason="length"' in metrics
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    left = wait_until_gone(name, up["pgid"], timeout=30)  # grace 5 s, then SIGKILL
    assert left == [], f"survivors: {left}"


def test_crash_after_start_is_classified(
    vllm_python: str, tiny_model: Path, cpu_env: dict[str, str], tmp_path: Path, vllm_start_lock: Callable
) -> None:
    """SIGKILL of the EngineCore of a healthy server: the API server dies, failure() says why.
    Also: kv_cache_memory_bytes wins over an inherited VLLM_CPU_KVCACHE_SPACE (launch unsets it)."""
    name = f"crash-{uuid.uuid4().hex[:8]}"
    config = ServeConfig(
        model=str(tiny_model), served_model_name=name, max_model_len=512, kv_cache_memory_bytes=256 << 20
    )
    with vllm_start_lock():
        server = start_server(
            config, python=vllm_python, log_dir=tmp_path, base_env=cpu_env, warmup_requests=1, nice=CPU_SERVER_NICE
        )
    with server:
        assert "VLLM_CPU_KVCACHE_SPACE" in cpu_env and server.readback.kv_cache_memory_bytes == 256 << 20
        assert server.failure() is None
        engine = [
            p
            for p in group_members(server.pgid)  # comm is cut to 15 chars: "VLLM::EngineCor"
            if Path(f"/proc/{p}/comm").read_text().startswith("VLLM::EngineCor")
        ]
        assert len(engine) == 1, engine
        os.kill(engine[0], signal.SIGKILL)
        deadline = time.monotonic() + 60
        while server.returncode() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        failure = server.failure()
        assert failure is not None, "the API server survived its EngineCore"
        assert failure.reason == "crashed_after_start", failure
        assert not server.alive()
    assert wait_until_gone(name, server.pgid, timeout=15) == []
