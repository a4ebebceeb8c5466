"""One call from a study folder to an export's text: read the winner, find the flags, build, render."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tuner.export import compose, helm, kserve, kubernetes
from tuner.export.deployment import Deployment, build_deployment
from tuner.export.flags import study_flags
from tuner.export.study import read_study

RENDERERS: dict[str, Callable[[Deployment], str]] = {
    "compose": compose.render,
    "kubernetes": kubernetes.render,
    "kserve": kserve.render,
    "helm": helm.render,
}


def export_study(
    study_dir: str | Path,
    fmt: str,
    *,
    vllm_help: str | None = None,
    vllm_python: str | None = None,
    name: str | None = None,
    image: str | None = None,
    model_uri: str | None = None,
    gpu_price_usd: float | None = None,
) -> str:
    """The ``fmt`` deployment of the study's winner, as text (YAML with a header of what was measured)."""
    winner = read_study(study_dir)
    info, source = study_flags(
        winner.vllm_version, help_file=vllm_help, vllm_python=vllm_python, recorded_python=winner.vllm_python
    )
    deployment = build_deployment(
        winner, info, source, name=name, image=image, model_uri=model_uri, gpu_price_usd=gpu_price_usd
    )
    return RENDERERS[fmt](deployment)
