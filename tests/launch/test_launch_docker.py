"""Docker backend with a fake client (no Docker engine on our machines). What is NOT exercised:
a real container start, the NVIDIA device request reaching a GPU, `docker wait`/removal through
the watchdog against a real daemon."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from launch.command import HTTP_ENV
from launch.config import ServeConfig
from launch.docker_backend import DockerServer, container_spec, start_docker_server
from launch.errors import LaunchFailure
from tests.conftest import require_module

CFG = ServeConfig(
    model="/data/models/llama 8b",
    max_model_len=4096,
    enable_prefix_caching=False,
    speculative_method="draft",
    num_speculative_tokens=3,
    speculative_model="/data/draft",
)


def test_container_spec(make_info) -> None:
    spec = container_spec(CFG, make_info("0.26.0"), host="127.0.0.1", port=8123)
    assert spec["image"] == "vllm/vllm-openai:v0.26.0" and spec["entrypoint"] == ["python3"]
    args = spec["command"]
    assert args[:2] == ["-m", "vllm.entrypoints.openai.api_server"]
    assert args[args.index("--model") + 1] == "/model"
    assert args[args.index("--served-model-name") + 1] == "/data/models/llama 8b"  # same name as launch.sh
    assert json.loads(args[args.index("--speculative-config") + 1])["model"] == "/draft"
    assert args[args.index("--host") + 1] == "0.0.0.0" and args[args.index("--port") + 1] == "8000"
    assert "--no-enable-prefix-caching" in args
    assert spec["ports"] == {"8000/tcp": ("127.0.0.1", 8123)}
    assert spec["volumes"] == {
        "/data/models/llama 8b": {"bind": "/model", "mode": "ro"},
        "/data/draft": {"bind": "/draft", "mode": "ro"},
    }
    assert spec["device_requests"] == [{"driver": "nvidia", "count": -1, "capabilities": [["gpu"]]}]
    assert spec["environment"] == {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", **HTTP_ENV}
    assert spec["ipc_mode"] == "host" and spec["detach"] is True
    two = container_spec(CFG, make_info("0.33.0"), host="0.0.0.0", port=80, gpus=["0", "3"])
    assert two["device_requests"][0]["device_ids"] == ["0", "3"]
    assert "--disable-prefix-caching" in two["command"]


def test_spec_is_accepted_by_the_docker_sdk(make_info) -> None:
    """docker-py turns the kwargs into the Engine API's create-container body (no daemon needed)."""
    require_module("docker", "pip install 'slotune[docker]'")
    import docker
    from docker.models.containers import _create_container_args

    spec = dict(container_spec(CFG, make_info("0.26.0"), host="127.0.0.1", port=8123))
    spec.pop("detach")
    request = spec["device_requests"][0]
    body = _create_container_args({**spec, "version": "1.45"})
    hc = body["host_config"]
    assert hc["DeviceRequests"][0]["Count"] == -1 and hc["DeviceRequests"][0]["Capabilities"] == [["gpu"]]
    assert hc["PortBindings"] == {"8000/tcp": [{"HostIp": "127.0.0.1", "HostPort": "8123"}]}
    assert "/data/models/llama 8b:/model:ro" in hc["Binds"] and hc["IpcMode"] == "host"
    assert body["entrypoint"] == ["python3"] and body["command"][0] == "-m"
    assert isinstance(docker.types.DeviceRequest(**request), dict)


class _FakeContainer:
    def __init__(self, status: str = "running", exit_code: int = 0, oom: bool = False, logs: bytes = b"") -> None:
        self.id = "f" * 64
        self.status = status
        self.attrs: dict[str, Any] = {"State": {"ExitCode": exit_code, "OOMKilled": oom, "Pid": 4321}}
        self._logs = logs
        self.calls: list[str] = []

    def reload(self) -> None:
        self.calls.append("reload")

    def logs(self, **kw: Any) -> bytes:
        return self._logs

    def stop(self, timeout: int) -> None:
        self.calls.append(f"stop({timeout})")
        self.status = "exited"

    def remove(self, force: bool) -> None:
        self.calls.append("remove")


class _FakeClient:
    def __init__(self, container: _FakeContainer) -> None:
        self.container = container
        self.runs: list[dict[str, Any]] = []
        self.containers = self

    def run(self, **spec: Any) -> _FakeContainer:
        self.runs.append(spec)
        return self.container


def test_failed_container_is_classified_and_removed(make_info, tmp_path: Path) -> None:
    log = (
        b"(EngineCore_DP0 pid=1) ERROR 11-28 21:14:07 [core.py:1] torch.OutOfMemoryError: CUDA out of "
        b"memory. Tried to allocate 2.00 GiB.\n"
    )
    container = _FakeContainer(status="exited", exit_code=1, logs=log)
    client = _FakeClient(container)
    with pytest.raises(LaunchFailure) as e:
        start_docker_server(
            CFG, make_info("0.26.0"), log_dir=tmp_path, client=client, watchdog=False, startup_timeout_s=5
        )
    assert e.value.reason == "oom"
    assert client.runs[0]["image"] == "vllm/vllm-openai:v0.26.0"
    assert container.calls[-2:] == ["stop(5)", "remove"] and list(tmp_path.glob("docker-*.log"))


def test_oom_killed_container_reads_as_137(make_info, tmp_path: Path) -> None:
    container = _FakeContainer("exited", 0, oom=True)
    server = DockerServer(
        config=CFG, info=make_info("0.26.0"), container=container, host="127.0.0.1", port=1, log_path=tmp_path / "x.log"
    )
    assert server.returncode() == 137 and not server.alive()
    failure = server.failure("startup")
    assert failure is not None and failure.reason == "oom"
    server.stop()
    server.stop()  # idempotent
    assert server.failure() is None


class _VllmLike(http.server.BaseHTTPRequestHandler):
    """Answers /health, /v1/completions and /metrics like vLLM does (stands in for the container)."""

    def do_GET(self) -> None:  # noqa: N802
        body = b""
        if self.path == "/metrics":
            body = b'vllm:cache_config_info{block_size="16",kv_cache_size_tokens="4096",num_gpu_blocks="256"} 1.0\n'
        self.send_response(200)
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        self.server.posts += 1  # type: ignore[attr-defined]
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b'{"choices": []}')

    def log_message(self, *a: Any) -> None:
        pass


def test_healthy_container_is_warmed_up_and_read_back(make_info, tmp_path: Path) -> None:
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _VllmLike)
    httpd.posts = 0  # type: ignore[attr-defined]
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    container = _FakeContainer(logs=b"INFO 11-28 10:01:40 [gpu_worker.py:561] Available KV cache memory: 3.5 GiB\n")
    try:
        with start_docker_server(
            CFG,
            make_info("0.26.0"),
            port=httpd.server_address[1],
            log_dir=tmp_path,
            client=_FakeClient(container),
            watchdog=False,
            warmup_requests=3,
        ) as server:
            assert httpd.posts == 3  # type: ignore[attr-defined]
            assert server.readback.kv_cache_size_tokens == 4096 and server.readback.available_kv_gib == 3.5
            assert server.alive() and server.pid == 4321
        assert "remove" in container.calls and not server.alive()
    finally:
        httpd.shutdown()
