"""Roofline lower bounds for search bounds and the report: no configuration can beat these.

* decode: one step reads every weight it uses (MoE: the experts some token of the batch is routed to)
  and each sequence's KV cache, so TPOT ≥ bytes ÷ memory bandwidth.
* prefill: ≥ FLOPs ÷ peak dense TFLOP/s (and ≥ one read of the weights).

Check against a measurement (DESIGN.md): Llama-3-8B shape on the H200, vLLM 0.26.0, batch 1: TPOT 4.72 ms;
this module's floor is 3.13 ms (DESIGN.md's 3.35 ms also counts the embedding table, which decode only
indexes).
"""

from __future__ import annotations

from tuner.budget.gpu import GPUProfile
from tuner.model.spec import ModelSpec


def decode_tpot_floor_ms(
    spec: ModelSpec, gpu: GPUProfile, *, batch: int = 1, context_tokens: int = 0, kv_dtype: str = "auto", tp: int = 1
) -> float:
    """Lower bound on time per output token (ms) for ``batch`` sequences of ``context_tokens`` each."""
    weights = spec.decode_weight_bytes(batch) / tp
    kv = batch * context_tokens * spec.kv_bytes_per_token(kv_dtype, tp)
    return 1e3 * (weights + kv) / gpu.bandwidth_bytes_s


def prefill_flops(spec: ModelSpec, prompt_tokens: int, *, batch: int = 1) -> float:
    """Matmul FLOPs of prefilling ``batch`` prompts: 2 × active params per token (the embedding table is
    a lookup) plus causal attention (QKᵀ and PV over half the square)."""
    params = spec.active_params
    if not spec.tie_word_embeddings:
        params -= spec.vocab_size * spec.hidden_size
    if spec.mla is not None:
        qk = spec.mla.qk_nope_head_dim + spec.mla.qk_rope_head_dim
        per_pair = spec.num_heads * (qk + spec.mla.v_head_dim)
    else:
        per_pair = spec.num_heads * (spec.head_dim + spec.head_dim_v)
    attn = 0.0
    for kind in spec.layer_types:
        span = prompt_tokens if kind == "full_attention" else min(prompt_tokens, spec.sliding_window or 0)
        attn += 2 * per_pair * prompt_tokens * span / (2 if span == prompt_tokens else 1)
    return batch * (2 * params * prompt_tokens + attn)


def prefill_floor_ms(
    spec: ModelSpec, gpu: GPUProfile, prompt_tokens: int, *, batch: int = 1, tp: int = 1, fp8: bool = False
) -> float:
    """Lower bound on prefill time (ms): FLOPs at the dense peak, and never less than one weight read."""
    peak = gpu.fp8_tflops if fp8 and gpu.fp8_tflops else gpu.bf16_tflops
    compute = prefill_flops(spec, prompt_tokens, batch=batch) / (peak * 1e12 * tp)
    memory = spec.decode_weight_bytes(batch * prompt_tokens) / tp / gpu.bandwidth_bytes_s
    return 1e3 * max(compute, memory)
