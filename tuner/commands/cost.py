"""``tune cost``: $ per million output tokens of a study's winner and of vLLM's defaults, at the stated
rate (certified where the study has it, else the search's estimate, said as such)."""

from __future__ import annotations

import argparse
import json

from tuner.errors import UsageError
from tuner.export.cost import cost_document, cost_lines, gpu_price
from tuner.export.study import read_study
from tuner.settings.fields import FIELDS
from tuner.settings.rules import flag_type


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--study", required=True, help="study folder with best.json (the output of `tune`)")
    p.add_argument(
        "--gpu-price",
        type=flag_type(float, FIELDS["gpu_price"].rule),
        help="US$ per GPU-hour (default: the GPU profile's hourly_price_usd)",
    )
    p.add_argument("--json", action="store_true", help="print best.json's cost block as JSON")


def run(args: argparse.Namespace) -> int:
    doc = read_study(args.study).doc
    price, source = gpu_price(doc, args.gpu_price)
    if price is None:
        raise UsageError(f"no hourly price to state a cost: {source}")
    if args.json:
        print(json.dumps(cost_document(doc, price, source), indent=2))
    else:
        print("\n".join(cost_lines(doc, price, source)))
    return 0
