"""The same launch in the ``vllm/vllm-openai`` image, through the Docker SDK (``pip install docker``).

``container_spec`` is pure: the keyword arguments for ``client.containers.run`` (image of the
tuned vLLM version, ``python3 -m vllm.entrypoints.openai.api_server`` with the argv of
launch.command, GPU device requests, the port published on ``host``, the model mounted read-only
at /model, ``ipc_mode="host"`` for PyTorch shared memory). ``start_docker_server`` runs it and
reuses launch.server_phases' health wait, warmup, read-back and failure classification.

Nothing survives the tuner: the container is not in any process group of ours, so a watchdog
(launch/watchdog.py) waits on it and, if the tuner disappears, removes it with ``--on-orphan``.
``docker`` is imported lazily; tests drive this module with a fake client. Not run here (no Docker
engine on the development machines): a real container start, GPU device requests, ``docker wait``.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from launch.config import ServeConfig
from launch.errors import LaunchInputError
from launch.process import LOG_TAIL_BYTES, free_port, spawn_watched
from launch.readback import ReadBack
from launch.script import container_command, docker_image
from launch.server_phases import ServerBase, read_back, wait_healthy, warm_up
from launch.vllm_flags import VllmInfo

CONTAINER_PORT = 8000
LABEL = "slotune"
_WAIT = "import docker, sys; sys.exit(docker.from_env().containers.get(sys.argv[1]).wait()['StatusCode'])"
_REMOVE = "import docker, sys; docker.from_env().containers.get(sys.argv[1]).remove(force=True)"


def container_spec(
    config: ServeConfig,
    info: VllmInfo,
    *,
    host: str,
    port: int,
    image: str | None = None,
    gpus: str | list[str] = "all",
    name: str | None = None,
) -> dict[str, Any]:
    """kwargs for ``client.containers.run`` (``detach=True``); ``gpus`` is "all" or device ids."""
    args, env, mounts = container_command(config, info, container_port=CONTAINER_PORT)
    gpus = _layout_gpus(config, env, gpus)
    if gpus == "all":
        # all GPUs for one GPU (as before); a parallel layout gets exactly the GPUs it was measured on
        count = config.gpus if config.gpus > 1 else -1
        request: dict[str, Any] = {"driver": "nvidia", "count": count, "capabilities": [["gpu"]]}
    else:
        request = {"driver": "nvidia", "device_ids": list(gpus), "capabilities": [["gpu"]]}
    return {
        "image": image or docker_image(info),
        "entrypoint": ["python3"],
        "command": args,
        "environment": env,
        "device_requests": [request],
        "ports": {f"{CONTAINER_PORT}/tcp": (host, port)},
        "volumes": {src: {"bind": dst, "mode": "ro"} for src, dst in mounts.items()},
        "ipc_mode": "host",
        "labels": {LABEL: "1", f"{LABEL}.port": str(port)},
        "name": name,
        "detach": True,
    }


def _layout_gpus(config: ServeConfig, env: dict[str, str], gpus: str | list[str]) -> str | list[str]:
    """A parallel layout's GPUs: the group the tuner pinned (CUDA_VISIBLE_DEVICES, which the container
    renumbers from 0, so it is passed as device ids and dropped from the env), exactly ``config.gpus`` of them."""
    if config.gpus == 1:
        return gpus
    pinned = env.pop("CUDA_VISIBLE_DEVICES", None)
    if gpus == "all" and pinned:
        gpus = pinned.split(",")
    if gpus != "all" and len(gpus) != config.gpus:
        raise LaunchInputError(
            f"gpus {','.join(gpus)}: the layout (tensor parallel {config.tensor_parallel_size or 1} x data parallel "
            f"{config.data_parallel_size or 1}) needs {config.gpus} GPUs; pass {config.gpus} device ids"
        )
    return gpus


class DockerServer(ServerBase):
    """A vLLM container owned by this process; the interface of launch.server.LaunchedServer."""

    def __init__(
        self,
        *,
        config: ServeConfig,
        info: VllmInfo,
        container: Any,
        host: str,
        port: int,
        log_path: Path,
        grace_s: float = 15.0,
    ) -> None:
        self.config = config
        self.info = info
        self.host = host
        self.port = port
        self.url = f"http://{host}:{port}"
        self.log_path = log_path
        self.grace_s = grace_s
        self.startup_s = 0.0
        self.readback = ReadBack()
        self._container = container
        self._watchdog: Any = None  # (Popen, log file) once spawned
        self._stopped = False

    @property
    def pid(self) -> int:
        """Host PID of the container's main process (0 once it is gone)."""
        self._container.reload()
        return int(self._container.attrs.get("State", {}).get("Pid") or 0)

    def returncode(self) -> int | None:
        """Exit code once the container has stopped (137 when the kernel's OOM killer struck)."""
        try:
            self._container.reload()
        except Exception:  # noqa: BLE001 - removed behind our back: treat as killed
            return 137
        if self._container.status in ("created", "running", "restarting"):
            return None
        state = self._container.attrs.get("State", {})
        return 137 if state.get("OOMKilled") else int(state.get("ExitCode", 1))

    def log_tail(self, nbytes: int = LOG_TAIL_BYTES) -> str:
        try:
            text = self._container.logs(stdout=True, stderr=True, tail=5000).decode("utf-8", "replace")
        except Exception:  # noqa: BLE001 - container gone: fall back to the saved copy
            text = self.log_path.read_text() if self.log_path.exists() else ""
        return text[-nbytes:]

    def stop(self, grace_s: float | None = None) -> None:
        """``docker stop`` (SIGTERM, SIGKILL after the grace period), keep the log, remove; idempotent."""
        if self._stopped:
            return
        self._stopped = True
        grace = self.grace_s if grace_s is None else grace_s
        try:
            try:
                self._container.stop(timeout=int(grace))
            except Exception:  # noqa: BLE001 - already gone
                pass
            try:
                self.log_path.write_bytes(self._container.logs(stdout=True, stderr=True))
            except Exception:  # noqa: BLE001
                pass
            try:
                self._container.remove(force=True)
            except Exception:  # noqa: BLE001
                pass
        finally:
            if self._watchdog is not None:
                proc, log_file = self._watchdog
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
                if proc.stdin is not None:
                    proc.stdin.close()
                log_file.close()


def _client(client: Any) -> Any:
    if client is not None:
        return client
    try:
        import docker
    except ImportError:
        raise LaunchInputError(
            "the Docker backend needs the docker SDK: pip install 'slotune[docker]' (or pip install docker)"
        ) from None
    return docker.from_env()


def start_docker_server(
    config: ServeConfig,
    info: VllmInfo,
    *,
    host: str = "127.0.0.1",
    port: int | None = None,
    log_dir: Path,
    startup_timeout_s: float = 900,
    warmup_requests: int = 2,
    on_progress: Callable[[str], None] | None = None,
    grace_s: float = 15.0,
    image: str | None = None,
    gpus: str | list[str] = "all",
    client: Any = None,
    watchdog: bool = True,
) -> DockerServer:
    """Run ``config`` in the vllm-openai image; return once healthy and warmed up.

    ``info`` describes the image's vLLM (e.g. ``VllmInfo.from_dict`` of a cached probe of the same
    version). Raises LaunchFailure (reason from launch.classify) and removes the container on failure.
    """
    docker_client = _client(client)
    chosen = port if port is not None else free_port(host)
    spec = container_spec(config, info, host=host, port=chosen, image=image, gpus=gpus)
    log_path = Path(log_dir) / f"docker-{time.strftime('%Y%m%d-%H%M%S')}-{chosen}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    container = docker_client.containers.run(**spec)
    server = DockerServer(
        config=config, info=info, container=container, host=host, port=chosen, log_path=log_path, grace_s=grace_s
    )
    try:
        if watchdog:
            cid = str(container.id)
            proc, log_file, _ = spawn_watched(
                [sys.executable, "-c", _WAIT, cid],
                dict(os.environ),
                log_path.with_suffix(".watchdog.log"),
                grace_s,
                on_orphan=[sys.executable, "-c", _REMOVE, cid],
            )
            server._watchdog = (proc, log_file)
        if on_progress is not None:
            on_progress(f"starting {spec['image']} as container {str(container.id)[:12]} on {server.url}")
        wait_healthy(server, startup_timeout_s, on_progress, t0)
        warm_up(server, warmup_requests)
        server.startup_s = time.monotonic() - t0
        server.readback = read_back(server)
    except BaseException:
        server.stop(grace_s=5.0)
        raise
    return server
