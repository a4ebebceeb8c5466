"""Helm values for vLLM's production-stack chart (``vllm-stack``, helm/ in vllm-project/production-stack).

Read from the chart's templates/deployment-vllm-multi.yaml (chart 0.1.12): the engine container runs
``vllm serve <modelURL> --host 0.0.0.0 --port <containerPort>``, then ``--enable-prefix-caching`` or
``--no-enable-prefix-caching`` whenever ``vllmConfig`` is set (so the winner's choice is passed through
``enablePrefixCaching``, and a winner that left it to vLLM's model-dependent default cannot be exported
exactly), ``--tensor-parallel-size`` from ``tensorParallelSize`` (which also mounts /dev/shm), then
``extraArgs`` verbatim: every other flag of the measured argv goes there. The model comes from an existing
PersistentVolumeClaim (``--model-uri pvc://CLAIM[/PATH]``) that the chart mounts at /data.
"""

from __future__ import annotations

from typing import Any

from tuner.errors import UsageError
from tuner.export.deployment import HEALTH_PATH, Deployment
from tuner.export.kubernetes import GPU_RESOURCE, pvc_source, readiness_probe
from tuner.export.machine_check import INIT_CONTAINER
from tuner.export.yaml_text import render_yaml

CHART_MODEL_DIR = "/data"
# the chart requires CPU and memory requests; slotune measures neither
REQUEST_CPU, REQUEST_MEMORY = 8, "32Gi"
_DROPPED = ("--model", "--host", "--port", "--tensor-parallel-size")


def _prefix_caching(dep: Deployment) -> bool:
    value = dep.winner.config.enable_prefix_caching
    if value is None:
        raise UsageError(
            "the production-stack chart always passes --enable-prefix-caching or --no-enable-prefix-caching, and "
            "this winner left prefix caching to vLLM's default (it depends on the model); use --format kubernetes"
        )
    flag = "--enable-prefix-caching" if value else "--no-enable-prefix-caching"
    if not dep.info.has(flag):
        raise UsageError(
            f"the production-stack chart passes {flag}, which vLLM {dep.info.version} does not accept; "
            "use --format kubernetes"
        )
    return value


def extra_args(args: list[str], dep: Deployment) -> list[str]:
    """The measured argv less what the chart itself passes (module, model, host, port, TP, prefix caching)."""
    rest = list(args[2:])  # drop "-m vllm.entrypoints.openai.api_server": the chart runs `vllm serve`
    for flag in _DROPPED:
        if flag in rest:
            i = rest.index(flag)
            del rest[i : i + 2]
    negative = dep.info.negation_of("--enable-prefix-caching")
    return [a for a in rest if a not in ("--enable-prefix-caching", negative)]


def machine_check_container(dep: Deployment) -> dict[str, Any]:
    """The machine check as an init container on the server's GPUs: the chart's engine command is its own, so it
    cannot be wrapped; Kubernetes hands an init container's devices on to the pod's containers. It warns, exits 0."""
    container: dict[str, Any] = {"name": INIT_CONTAINER, "image": dep.image, "command": dep.entrypoint(pace=False)}
    if dep.gpus:
        container["resources"] = {"limits": {GPU_RESOURCE: dep.gpus}}
    return container


def values(dep: Deployment) -> dict[str, Any]:
    claim, subpath = pvc_source(dep, "helm")
    model_url = f"{CHART_MODEL_DIR}/{subpath}" if subpath else CHART_MODEL_DIR
    args, env = dep.command(model_url)
    repository, _, tag = dep.image.rpartition(":")
    if not repository or "/" in tag:
        raise UsageError(f"--image {dep.image}: the chart needs REPOSITORY:TAG")
    vllm_config: dict[str, Any] = {"enablePrefixCaching": _prefix_caching(dep)}
    if dep.winner.config.tensor_parallel_size is not None:
        vllm_config["tensorParallelSize"] = dep.winner.config.tensor_parallel_size
    vllm_config["extraArgs"] = extra_args(args, dep)
    spec: dict[str, Any] = {
        "name": dep.name,
        "repository": repository,
        "tag": tag,
        "modelURL": model_url,
        "replicaCount": 1,
        "requestCPU": REQUEST_CPU,
        "requestMemory": REQUEST_MEMORY,
        "requestGPU": dep.gpus,
        # the chart mounts a claim only when pvcStorage is set; with pvcExistingClaimName it creates none
        "pvcStorage": "1Gi",
        "pvcExistingClaimName": claim,
        "vllmConfig": vllm_config,
    }
    if env:
        spec["env"] = [{"name": k, "value": v} for k, v in sorted(env.items())]
    if dep.winner.measured is not None:
        spec["initContainer"] = machine_check_container(dep)
    probe = {"initialDelaySeconds": 15, **readiness_probe(dep.port)}
    return {"servingEngineSpec": {"containerPort": dep.port, "readinessProbe": probe, "modelSpec": [spec]}}


def render(dep: Deployment) -> str:
    notes = [
        "",
        "helm install RELEASE vllm/vllm-stack -f FILE   (vLLM production-stack chart)",
        f"the chart runs `vllm serve` (the same argument parser), adds its own env (PYTHONHASHSEED, HF_HOME, "
        f"PROMETHEUS_MULTIPROC_DIR, POD_IP) and probes {HEALTH_PATH}; requestCPU {REQUEST_CPU} and requestMemory "
        f"{REQUEST_MEMORY} are placeholders the chart requires (slotune measured neither)",
    ]
    return render_yaml([*dep.header, *dep.machine_lines(init_container=True), *notes], [values(dep)])
