"""Docker Compose: one service running the tuned vLLM image, the model bind-mounted read-only.

The same container as launch.script.docker_run_command: ``ipc: host``, the GPUs reserved through the
NVIDIA device driver, the port published on ``HOST``:``PORT`` (defaults 127.0.0.1 and 8000, as launch.sh).
Compose interpolates ``$``: the argv, environment and paths are escaped (``$$``) so they stay literal.
"""

from __future__ import annotations

from typing import Any

from tuner.errors import UsageError
from tuner.export.deployment import HEALTH_PATH, Deployment
from tuner.export.yaml_text import render_yaml

CONTAINER_MODEL_DIR = "/model"


def _literal(text: str) -> str:
    return text.replace("$", "$$")


def _model_dir(dep: Deployment) -> str:
    source = dep.model_uri or dep.winner.config.model
    if "://" in source:
        raise UsageError(
            f"--model-uri {source}: Compose mounts a directory of the Docker host; pass its path "
            "(default: the model path the study tuned)"
        )
    return source


def service(dep: Deployment) -> dict[str, Any]:
    args, env = dep.command(CONTAINER_MODEL_DIR)
    probe = f"import urllib.request; urllib.request.urlopen('http://127.0.0.1:{dep.port}{HEALTH_PATH}', timeout=5)"
    spec: dict[str, Any] = {
        "image": dep.image,
        "entrypoint": [_literal(a) for a in dep.entrypoint()],
        "command": [_literal(a) for a in args],
        "ipc": "host",
        "ports": [f"${{HOST:-127.0.0.1}}:${{PORT:-8000}}:{dep.port}"],
        "volumes": [
            {"type": "bind", "source": _literal(_model_dir(dep)), "target": CONTAINER_MODEL_DIR, "read_only": True}
        ],
        "environment": {k: _literal(v) for k, v in sorted(env.items())},
        "healthcheck": {
            "test": ["CMD", "python3", "-c", probe],
            "interval": "10s",
            "timeout": "10s",
            "retries": 3,
            "start_period": "900s",
        },
    }
    if not spec["environment"]:
        del spec["environment"]
    if dep.gpus:
        device = {"driver": "nvidia", "count": dep.gpus, "capabilities": ["gpu"]}
        spec["deploy"] = {"resources": {"reservations": {"devices": [device]}}}
    return spec


def render(dep: Deployment) -> str:
    usage = "docker compose -f FILE up -d   (HOST=0.0.0.0 PORT=8000 to publish on all interfaces)"
    return render_yaml([*dep.header, *dep.machine_lines(), "", usage], [{"services": {dep.name: service(dep)}}])
