"""``tune quantize``: 4-bit AWQ quantization with a quality gate (see tuner.quantize, docs/quantize.md)."""

from __future__ import annotations

import argparse
import json
import sys

from tuner.errors import QuantizeError, UsageError
from tuner.quantize import setup
from tuner.quantize.api import GateThresholds, QualityGateError, default_python, quantize
from tuner.quantize.recipe import QuantizeRecipe
from tuner.settings import rules
from tuner.settings.rules import flag_type

_DEFAULTS = {"max_nll_delta": 0.10, "max_kl": 0.10, "min_top1": 0.50, "min_layer_cosine": 0.98}


def configure(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Quantize a model to 4-bit AWQ (W4A16, asymmetric, groups of 128, else 64, else 32 weights: the largest "
        "that divides every layer, said in the output; lm_head and embeddings stay 16-bit) "
        "in the compressed-tensors format vLLM loads, then gate it against the 16-bit model on held-out "
        "text (perplexity/NLL delta, KL, top-1 agreement, per-layer output cosine; layers under 0.99 are "
        "restored to 16-bit and the model re-quantized). Runs under this interpreter when it has llm-compressor, "
        "else under one of its own: 'tune quantize --setup' builds it. A failing gate exits 1 unless --no-gate."
    )
    _what_flags(p)
    _where_flags(p)
    _gate_flags(p)


def _what_flags(p: argparse.ArgumentParser) -> None:
    """The model, the output and the recipe."""
    p.add_argument("--model", help="16-bit model directory (config.json + weights)")
    p.add_argument("--out", help="output directory (new, or a previous tune quantize output)")
    p.add_argument(
        "--setup",
        action="store_true",
        help="build the pinned quantization interpreter (llmcompressor==0.14.0.1 in a venv under "
        "~/.cache/slotune/quantize-venv, a few minutes) and print its path; with --model/--out, then quantize",
    )
    p.add_argument("--scheme", default="w4a16", help="quantization scheme (supported: w4a16)")
    p.add_argument(
        "--group-size",
        type=flag_type(int, rules.whole(32, 1 << 16)),
        help="weights per quantization group (default: 128, else 64, else 32: the largest dividing every "
        "layer's input width; a given size wins, and layers it does not divide stay 16-bit, listed)",
    )
    p.add_argument(
        "--calib",
        metavar="FILE",
        help="calibration JSONL: one object per line with 'text' or 'messages' (default: built-in "
        "text; a slice of FILE also joins the gate's held-out text)",
    )
    p.add_argument(
        "--samples", type=flag_type(int, rules.whole(1, 100_000)), default=128, help="calibration samples (default 128)"
    )


def _where_flags(p: argparse.ArgumentParser) -> None:
    """The backend, its interpreter and the cache of finished outputs."""
    p.add_argument(
        "--backend",
        choices=("llmcompressor", "autoawq"),
        default="llmcompressor",
        help="llmcompressor (default: AWQ saved as compressed-tensors) or autoawq (AWQ GEMM "
        "format; AutoAWQ is DEPRECATED upstream and unmaintained: dense models only, needs "
        "its own interpreter from 'scripts/install-quantize.sh --autoawq')",
    )
    p.add_argument(
        "--quantize-python",
        metavar="PY",
        help="interpreter with the backend's library (default: $SLOTUNE_QUANTIZE_PYTHON, else this one when it "
        "has llm-compressor, else .venv-quant/bin/python in the repo or the current directory, else the venv "
        "of --setup; for autoawq $SLOTUNE_AUTOAWQ_PYTHON, else .venv-awq/bin/python)",
    )
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="also keep finished quantizations here, keyed by "
        "model contents + recipe + calibration data, and reuse them",
    )


def _gate_flags(p: argparse.ArgumentParser) -> None:
    """The quality gate's thresholds and the output's form."""
    p.add_argument(
        "--restore-below",
        type=flag_type(float, rules.Rule("a number ≥ 0 and < 1", "0.99", low=0, high=0.999999)),
        default=0.99,
        help="restore layers whose output cosine is under this to 16-bit (default 0.99; 0 = never)",
    )
    for name, default in _DEFAULTS.items():
        p.add_argument(
            f"--{name.replace('_', '-')}",
            type=flag_type(float, rules.Rule("a number ≥ 0", str(default), low=0)),
            default=default,
            help=f"gate threshold (default {default})",
        )
    p.add_argument("--no-gate", action="store_true", help="accept the result even when the gate fails")
    p.add_argument("--json", action="store_true", help="print the result as JSON on stdout")


def _interpreter(args: argparse.Namespace) -> str:
    if args.setup:
        if args.backend == "autoawq":
            raise UsageError(
                "--setup builds the llmcompressor interpreter; for autoawq run scripts/install-quantize.sh"
            )
        return str(setup.setup_interpreter(say=lambda m: print(f"quantize --setup: {m}", file=sys.stderr, flush=True)))
    python = args.quantize_python or default_python(args.backend)
    if python is None and args.backend == "autoawq":
        raise UsageError(
            "no AutoAWQ interpreter: run 'bash scripts/install-quantize.sh --autoawq' "
            "(creates .venv-awq) or pass --quantize-python / set SLOTUNE_AUTOAWQ_PYTHON"
        )
    if python is None:
        raise UsageError(
            "no interpreter with llm-compressor: run 'tune quantize --setup' (builds a pinned one in "
            "~/.cache/slotune, a few minutes), or pass --quantize-python / set SLOTUNE_QUANTIZE_PYTHON"
        )
    return python


def run(args: argparse.Namespace) -> int:
    if not args.setup and (args.model is None or args.out is None):
        raise UsageError("--model and --out are required (or --setup alone, to build the quantization interpreter)")
    if (args.model is None) != (args.out is None):
        raise UsageError("give --model and --out together")
    python = _interpreter(args)
    if args.model is None:
        print(python)
        return 0
    recipe = QuantizeRecipe(scheme=args.scheme, group_size=args.group_size, restore_below=args.restore_below)
    thresholds = GateThresholds(**{k: getattr(args, k) for k in _DEFAULTS})
    try:
        result = quantize(
            args.model,
            args.out,
            python=python,
            recipe=recipe,
            calib=args.calib,
            samples=args.samples,
            backend=args.backend,
            cache_dir=args.cache_dir,
            gate=not args.no_gate,
            thresholds=thresholds,
            on_progress=lambda m: print(f"quantize: {m}", file=sys.stderr, flush=True),
        )
    except QualityGateError as exc:
        if args.json:
            print(json.dumps(exc.result.to_dict(), indent=1))
        print(f"tune quantize: {exc}", file=sys.stderr)
        return 1
    except QuantizeError as exc:
        print(f"tune quantize: {exc}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
    else:
        group = f"{result.group.line()}; " if result.group else ""
        print(f"{result.out_dir}{' (cached)' if result.cached else ''}: {group}{result.quality.summary()}")
    return 0
