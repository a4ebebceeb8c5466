"""KServe: an InferenceService whose predictor is the tuned vLLM container (a custom predictor).

KServe's storage initializer fetches ``--model-uri`` (any URI it supports: pvc://, s3://, gs://, hf://,
https://; default ``pvc://<name>-model``) into /mnt/models of the container named ``kserve-container``
(``STORAGE_URI``, KServe pkg/apis/serving/v1beta1/predictor_custom.go), and vLLM serves it from there.
One replica always runs (``minReplicas: 1``): a vLLM start takes minutes, too long to scale from zero.
"""

from __future__ import annotations

from typing import Any

from tuner.errors import UsageError
from tuner.export.deployment import Deployment
from tuner.export.kubernetes import shm_volume, vllm_container
from tuner.export.yaml_text import render_yaml

KSERVE_MODEL_DIR = "/mnt/models"
CONTAINER_NAME = "kserve-container"


def inference_service(dep: Deployment) -> dict[str, Any]:
    uri = dep.model_uri or f"pvc://{dep.name}-model"
    if "://" not in uri:
        raise UsageError(f"--model-uri {uri}: KServe takes a storage URI (pvc://CLAIM/PATH, s3://..., hf://...)")
    container = vllm_container(dep, CONTAINER_NAME, KSERVE_MODEL_DIR)
    container["env"].insert(0, {"name": "STORAGE_URI", "value": uri})
    return {
        "apiVersion": "serving.kserve.io/v1beta1",
        "kind": "InferenceService",
        "metadata": {"name": dep.name, "labels": {"app.kubernetes.io/managed-by": "slotune"}},
        "spec": {"predictor": {"minReplicas": 1, "containers": [container], "volumes": [shm_volume()]}},
    }


def render(dep: Deployment) -> str:
    usage = "kubectl apply -f FILE   (KServe installed; STORAGE_URI says where the model is fetched from)"
    return render_yaml([*dep.header, *dep.machine_lines(), "", usage], [inference_service(dep)])
