"""Kubernetes: a Deployment of one vLLM pod and a ClusterIP Service in front of it.

The model is read from a PersistentVolumeClaim (``--model-uri pvc://CLAIM[/SUBPATH]``, default
``pvc://<name>-model``), mounted read-only at /model; /dev/shm is a memory-backed emptyDir (what
``--ipc=host`` gives a container: PyTorch's workers share tensors through it). GPUs are requested as
``nvidia.com/gpu`` (the NVIDIA device plugin's resource); readiness is vLLM's ``/health``.
"""

from __future__ import annotations

from typing import Any

from tuner.errors import UsageError
from tuner.export.deployment import HEALTH_PATH, Deployment
from tuner.export.yaml_text import render_yaml

CONTAINER_MODEL_DIR = "/model"
GPU_RESOURCE = "nvidia.com/gpu"
SHM_LIMIT = "2Gi"


def pvc_source(dep: Deployment, fmt: str) -> tuple[str, str]:
    """(claim name, path inside the claim) from ``--model-uri pvc://CLAIM[/SUBPATH]``."""
    uri = dep.model_uri or f"pvc://{dep.name}-model"
    if not uri.startswith("pvc://") or not uri[len("pvc://") :].split("/", 1)[0]:
        raise UsageError(
            f"--model-uri {uri}: --format {fmt} reads the model from a PersistentVolumeClaim; "
            "pass pvc://CLAIM or pvc://CLAIM/PATH/IN/IT"
        )
    claim, _, subpath = uri[len("pvc://") :].partition("/")
    return claim, subpath.strip("/")


def readiness_probe(port: int | str) -> dict[str, Any]:
    return {
        "httpGet": {"path": HEALTH_PATH, "port": port},
        "periodSeconds": 10,
        "timeoutSeconds": 5,
        "failureThreshold": 3,
    }


def shm_volume() -> dict[str, Any]:
    return {"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_LIMIT}}


def vllm_container(dep: Deployment, name: str, model_dir: str) -> dict[str, Any]:
    """The container both Kubernetes formats run (python3 -m vllm.entrypoints.openai.api_server ..., through the
    machine check's wrapper where the study recorded its machine: tuner.export.machine_check)."""
    args, env = dep.command(model_dir)
    container: dict[str, Any] = {
        "name": name,
        "image": dep.image,
        "command": dep.entrypoint(),
        "args": args,
        "env": [{"name": k, "value": v} for k, v in sorted(env.items())],
        "ports": [{"containerPort": dep.port, "protocol": "TCP"}],
        "readinessProbe": readiness_probe(dep.port),
        "volumeMounts": [{"name": "dshm", "mountPath": "/dev/shm"}],
    }
    if dep.gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: dep.gpus}}
    return container


def _deployment(dep: Deployment) -> dict[str, Any]:
    claim, subpath = pvc_source(dep, "kubernetes")
    labels = {"app.kubernetes.io/name": dep.name, "app.kubernetes.io/managed-by": "slotune"}
    container = vllm_container(dep, "vllm", CONTAINER_MODEL_DIR)
    mount: dict[str, Any] = {"name": "model", "mountPath": CONTAINER_MODEL_DIR, "readOnly": True}
    if subpath:
        mount["subPath"] = subpath
    container["volumeMounts"].insert(0, mount)
    pod = {
        "containers": [container],
        "volumes": [{"name": "model", "persistentVolumeClaim": {"claimName": claim, "readOnly": True}}, shm_volume()],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": dep.name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app.kubernetes.io/name": dep.name}},
            "template": {"metadata": {"labels": labels}, "spec": pod},
        },
    }


def _service(dep: Deployment) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": dep.name, "labels": {"app.kubernetes.io/name": dep.name}},
        "spec": {
            "selector": {"app.kubernetes.io/name": dep.name},
            "ports": [{"name": "http", "port": dep.port, "targetPort": dep.port, "protocol": "TCP"}],
        },
    }


def render(dep: Deployment) -> str:
    claim, _ = pvc_source(dep, "kubernetes")
    usage = f"kubectl apply -f FILE   (the model must be in PersistentVolumeClaim {claim!r})"
    return render_yaml([*dep.header, *dep.machine_lines(), "", usage], [_deployment(dep), _service(dep)])
