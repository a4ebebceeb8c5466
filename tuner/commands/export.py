"""``tune export``: the winner of a finished study as a Compose file, Kubernetes manifests, a KServe
InferenceService or Helm values for vLLM's production-stack chart (tuner.export)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loadtest.writable import check_output_file
from tuner.export.formats import RENDERERS, export_study
from tuner.settings.fields import FIELDS
from tuner.settings.rules import flag_type


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--study", required=True, help="study folder with best.json (the output of `tune`)")
    p.add_argument("--format", required=True, choices=sorted(RENDERERS), help="what to write")
    p.add_argument("--out", help="file to write (default: standard output)")
    p.add_argument(
        "--model-uri",
        help="where the deployment finds the model: compose: a host directory (default: the tuned path); "
        "kubernetes/helm: pvc://CLAIM[/PATH]; kserve: a storage URI (default for those: pvc://NAME-model)",
    )
    p.add_argument("--name", help="object/service name (default: from the served model name)")
    p.add_argument("--image", help="container image (default: vllm/vllm-openai:v<the tuned version>)")
    p.add_argument("--vllm-python", help="interpreter with the tuned vLLM version, to check the argv against")
    p.add_argument("--vllm-help", help="file with `--help=all` of the tuned vLLM's API server, instead")
    p.add_argument(
        "--gpu-price",
        type=flag_type(float, FIELDS["gpu_price"].rule),
        help="US$ per GPU-hour for the cost line (default: the GPU profile's)",
    )


def run(args: argparse.Namespace) -> int:
    if args.out:
        check_output_file(args.out, "--out")
    text = export_study(
        args.study,
        args.format,
        vllm_help=args.vllm_help,
        vllm_python=args.vllm_python,
        name=args.name,
        image=args.image,
        model_uri=args.model_uri,
        gpu_price_usd=args.gpu_price,
    )
    if args.out:
        Path(args.out).write_text(text)
        print(f"wrote {args.out}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0
