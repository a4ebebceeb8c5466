"""``tune budget``: predict KV-cache memory and feasibility from config.json and a GPU profile."""

from __future__ import annotations

import argparse
import json

from launch.config import ServeConfig
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import KVBudget, estimate_budget
from tuner.model.spec import ModelSpec
from tuner.settings import rules
from tuner.settings.rules import flag_type
from tuner.units import GIB


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model directory (or its config.json)")
    p.add_argument(
        "--gpu",
        required=True,
        help="GPU profile: a built-in name (h200, a30, cpu, …), a YAML path, or 'auto' for the local GPU",
    )
    tokens = flag_type(int, rules.whole(1, 1 << 24))
    p.add_argument("--gpu-memory-utilization", type=flag_type(float, rules.FRACTION), help="default: vLLM's (0.92)")
    p.add_argument("--max-model-len", type=tokens, help="default: the model's max_position_embeddings")
    p.add_argument(
        "--max-num-seqs", type=flag_type(int, rules.whole(1, 65_536)), help="default: vLLM's for this device"
    )
    p.add_argument("--max-num-batched-tokens", type=tokens, help="default: vLLM's for this device")
    p.add_argument("--kv-cache-dtype", choices=("auto", "fp8"), default=None)
    p.add_argument("--tensor-parallel-size", type=flag_type(int, rules.whole(1, 1024)), default=None)
    p.add_argument(
        "--vllm-version",
        type=flag_type(str, rules.VERSION),
        help="vLLM release to predict for, e.g. 0.26.0 (default: the installed one)",
    )
    p.add_argument("--json", action="store_true", help="print the budget as JSON")


def run(args: argparse.Namespace) -> int:
    spec = ModelSpec.from_dir(args.model)
    gpu = GPUProfile.load(args.gpu)
    config = ServeConfig(
        model=str(args.model),
        gpu_memory_utilization=args.gpu_memory_utilization,
        max_model_len=args.max_model_len,
        max_num_seqs=args.max_num_seqs,
        max_num_batched_tokens=args.max_num_batched_tokens,
        kv_cache_dtype=args.kv_cache_dtype,
        tensor_parallel_size=args.tensor_parallel_size,
    )
    budget = estimate_budget(spec, gpu, config, vllm_version=args.vllm_version)
    print(json.dumps(budget.to_dict(), indent=1) if args.json else render(spec, budget))
    return 0


def render(spec: ModelSpec, b: KVBudget) -> str:
    """The budget as a few readable lines."""
    verdict = "FEASIBLE" if b.feasible else "NOT FEASIBLE"
    lines = [
        f"{spec.model_type} ({spec.num_params / 1e9:.2f} B params, {spec.num_layers} layers) on {b.gpu}, "
        f"vLLM {b.vllm_version}: {verdict}",
        f"  settings     gmu {b.gpu_memory_utilization}, max_model_len {b.max_model_len:,}, max_num_seqs "
        f"{b.max_num_seqs}, max_num_batched_tokens {b.max_num_batched_tokens:,}, kv {b.kv_cache_dtype}, "
        f"block {b.block_size}, tp {b.tensor_parallel_size}",
        f"  weights      {b.weight_bytes / GIB:8.2f} GiB",
        f"  activation   {b.activation_bytes / GIB:8.2f} GiB   non-torch {b.non_torch_bytes / GIB:.2f} GiB   "
        f"CUDA graphs {b.cudagraph_bytes / GIB:.2f} GiB"
        + (
            f" ({b.cudagraph_subtracted_bytes / GIB:.2f} GiB estimated, taken off the KV cache)"
            if b.cudagraph_subtracted_bytes
            else ""
        ),
        f"  KV cache     {b.kv_cache_bytes / GIB:8.2f} GiB   ({b.kv_bytes_per_token:,} B/token, "
        f"{b.num_blocks:,} blocks of {b.block_size})",
        f"  KV tokens    {b.kv_tokens:,}   max concurrency at {b.max_model_len:,} tokens: {b.max_concurrency:.2f}x",
        f"  largest max_model_len that fits: {b.max_model_len_fit:,}",
        f"  basis        {b.basis}",
    ]
    lines += [f"  reason       {r}" for r in b.reasons]
    return "\n".join(lines)
