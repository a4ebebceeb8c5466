"""``tune make-model``: write a synthetic model directory."""

from __future__ import annotations

import argparse

from tuner.errors import UsageError
from tuner.synthetic import SHAPES, write_model


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", required=True, help="directory to write")
    p.add_argument("--shape", default="llama-tiny", help=f"one of: {', '.join(SHAPES)}")
    p.add_argument("--no-weights", action="store_true",
                   help="config + tokenizer only (serve with --load-format dummy)")
    p.add_argument("--seed", type=int, default=0)


def run(args: argparse.Namespace) -> int:
    if args.shape not in SHAPES:
        raise UsageError(f"unknown --shape {args.shape!r}; choose one of: {', '.join(SHAPES)}")
    path = write_model(args.out, args.shape, weights=not args.no_weights, seed=args.seed)
    print(path)
    return 0
