"""Deployment: what every export format needs, built once from a study's winner.

The container runs ``python3 -m vllm.entrypoints.openai.api_server`` with the argv launch.command builds
for the winner's ``best.config`` (launch.sh's), checked against the tuned version's flags, in the
``vllm/vllm-openai`` image of that version. Only the model's location (where each format mounts it),
``--host 0.0.0.0`` and the port differ from launch.sh. ``header`` says what was measured.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from launch.command import build_command
from launch.script import docker_image
from launch.vllm_flags import VllmInfo
from tuner.errors import UsageError
from tuner.export import machine_check
from tuner.export.cost import cost_lines, gpu_price
from tuner.export.layout import gpu_count
from tuner.export.study import DEVICE_ENV, StudyWinner

CONTAINER_PORT = 8000
HEALTH_PATH = "/health"
_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]{0,38}[a-z0-9])?$")


@dataclass(frozen=True)
class Deployment:
    name: str  # DNS-1123 label: Kubernetes object names, the Compose service
    image: str
    winner: StudyWinner
    info: VllmInfo  # the tuned version's flags, seen from inside the container
    flags_source: str
    gpus: int
    model_uri: str | None  # --model-uri as given; each format says what it accepts
    header: tuple[str, ...]

    @property
    def port(self) -> int:
        return CONTAINER_PORT

    def command(self, model_dir: str) -> tuple[list[str], dict[str, str]]:
        """(args after ``python3``, env) serving the model found at ``model_dir`` in the container."""
        config = self.winner.config
        for field in ("speculative_model", "tokenizer"):
            path = getattr(config, field)
            if path is not None and Path(path).is_absolute():
                raise UsageError(
                    f"the winner's {field} is a local directory ({path}); exports mount only the model: "
                    f"use --format compose, or re-tune with {field} in the model folder"
                )
        inside = replace(config, model=model_dir, served_model_name=config.name)
        argv, env = build_command(inside, self.info, host="0.0.0.0", port=self.port)
        return argv[1:], {k: v for k, v in env.items() if k not in DEVICE_ENV}

    def entrypoint(self, pace: bool = True) -> list[str]:
        """What runs ``command``'s args: ``python3``, or where the study recorded its machine, the wrapper that
        checks this one first (tuner.export.machine_check; ``pace``: also time the pace beside the server)."""
        study, name = str(self.winner.study_dir), self.winner.config.name
        return machine_check.entrypoint(self.winner.measured, study, port=self.port, name=name, pace=pace)

    def machine_lines(self, init_container: bool = False) -> list[str]:
        """The header's 'measured on: ...' and what is checked at start ([]: the machine was not recorded)."""
        return machine_check.header_lines(self.winner.measured, init_container=init_container)


def deployment_name(winner: StudyWinner, name: str | None) -> str:
    if name is not None:
        if not _DNS_LABEL.match(name):
            raise UsageError(
                f"--name {name!r}: use 1-40 lowercase letters, digits and '-', starting with a letter "
                "(a Kubernetes object name)"
            )
        return name
    base = re.sub(r"[^a-z0-9]+", "-", Path(winner.config.name).name.lower()).strip("-")
    base = base if base[:1].isalpha() else f"vllm-{base}"
    return base[:40].rstrip("-") or "vllm"


def _rate_lines(w: StudyWinner) -> list[str]:
    r = w.rate
    if r.certified:
        first = f"capacity: {r.rate_req_s:.2f} req/s, certified (best.json certified_rate_req_s)"
    else:
        first = (
            f"capacity: {r.rate_req_s:.2f} req/s, {r.label} (best.json best.best_rate_req_s; goodput there "
            f"{w.goodput_req_s:.2f} req/s): certify it before you promise it"
        )
    return [first, f"output at that rate: {r.output_tok_s:,.0f} tokens/s"]


def _caveats(w: StudyWinner, dropped_env: list[str]) -> list[str]:
    out = []
    if w.config.load_format == "dummy":
        out.append(
            "WARNING: measured with --load-format dummy (random weights): this server answers with random "
            "weights. Remove '--load-format dummy' to serve the real model (same memory and speed)."
        )
    if w.emulated_on:
        diffs = "; ".join(w.emulation_differences()) or "none"
        out.append(
            f"as in launch.sh, the {w.gpu_profile}'s values, not those the emulating {w.emulated_on} ran: {diffs}"
        )
    if dropped_env:
        out.append(f"left out (the container runtime assigns GPUs): {', '.join(dropped_env)}")
    return out + [f"note: {n}" for n in w.notes]


def header_lines(
    winner: StudyWinner, *, image: str, flags_source: str, gpus: int, price: float | None, price_source: str
) -> tuple[str, ...]:
    w = winner
    model = f"model: {w.config.model}" + (f" (fingerprint {w.model_fingerprint})" if w.model_fingerprint else "")
    lines = [
        f"Generated by slotune `tune export` from {w.study_dir} (trial {w.trial}): vLLM exactly as measured there.",
        f"measured {w.measured_at}, vLLM {w.vllm_version}, GPU profile {w.gpu_profile}, "
        f"SLO {w.slo}, workload {w.workload}",
        *_rate_lines(w),
        *cost_lines(w.doc, price, price_source),
        f"GPUs: {gpus} (tensor x pipeline x data parallel)" if gpus else "GPUs: none (measured on vLLM's CPU build)",
        f"image {image}; argv checked against vLLM {w.vllm_version}'s flags ({flags_source})",
        model,
        *_caveats(w, [k for k in dict(w.config.env) if k in DEVICE_ENV]),
    ]
    return tuple(lines)


def build_deployment(
    winner: StudyWinner,
    info: VllmInfo,
    flags_source: str,
    *,
    name: str | None = None,
    image: str | None = None,
    model_uri: str | None = None,
    gpu_price_usd: float | None = None,
) -> Deployment:
    """The deployment of ``winner``; ``info`` holds the flags of the study's vLLM version."""
    if winner.is_cpu and image is None:
        raise UsageError(
            f"{winner.study_dir} was measured on vLLM's CPU build; slotune pins only the GPU image "
            "(vllm/vllm-openai): pass --image with a vLLM CPU image of version " + winner.vllm_version
        )
    inside = replace(info, python="python3", platform="cpu" if winner.is_cpu else "cuda")
    chosen_image = image or docker_image(inside)
    gpus = 0 if winner.is_cpu else gpu_count(winner.config)
    price, price_source = gpu_price(winner.doc, gpu_price_usd)
    header = header_lines(
        winner, image=chosen_image, flags_source=flags_source, gpus=gpus, price=price, price_source=price_source
    )
    deployment = Deployment(
        name=deployment_name(winner, name),
        image=chosen_image,
        winner=winner,
        info=inside,
        flags_source=flags_source,
        gpus=gpus,
        model_uri=model_uri,
        header=header,
    )
    deployment.command("/model")  # validate the argv now: a flag this vLLM lacks fails before anything is written
    return deployment
