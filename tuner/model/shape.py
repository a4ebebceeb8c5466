"""ModelShape: the shape of a model as its ``config.json`` states it (no weights, no torch).

What the KV budget and the roofline need: layers, heads, KV heads, head_dim, MLA ranks, which layers
use a sliding window (only when really enabled), MoE experts (routed, shared, dense layers), tied
embeddings, dtype, 4-bit quantization, vocab and context length. ``tuner/model/config.py`` reads it from
config.json; ``tuner/model/spec.py`` adds the sizes that follow from it (weight bytes, parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Self

from tuner.errors import ModelSpecError

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "half": 2, "float": 4, "fp16": 2, "bf16": 2}


@dataclass(frozen=True)
class MLA:
    kv_lora_rank: int
    qk_rope_head_dim: int
    qk_nope_head_dim: int
    v_head_dim: int
    q_lora_rank: int | None


@dataclass(frozen=True)
class MoE:
    num_experts: int
    experts_per_token: int
    expert_intermediate_size: int
    shared_intermediate_size: int  # 0 when there is no shared expert
    shared_expert_gate: bool  # Qwen2-MoE's sigmoid gate on the shared expert
    moe_layers: tuple[int, ...]  # indices of layers whose MLP is the MoE block


@dataclass(frozen=True)
class Quant:
    method: str  # "awq" | "gptq" | "compressed-tensors" | "fp8"
    bits: int
    group_size: int  # -1 = per channel
    zero_point: bool  # asymmetric: packed zero points are stored
    ignore: tuple[str, ...]  # module names/regexes ("re:...") left in 16 bits
    g_idx: bool = False  # GPTQ stores act-order indices


@dataclass(frozen=True)
class ModelShape:
    """The budget-relevant shape of one model, as config.json states it (read by ``tuner.model.config``)."""

    source: str
    model_type: str
    family: str
    num_layers: int
    hidden_size: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    head_dim_v: int
    intermediate_size: int
    vocab_size: int
    max_position_embeddings: int
    dtype: str  # what vLLM serves with --dtype auto (float32 checkpoints are downcast to bfloat16)
    tie_word_embeddings: bool
    layer_types: tuple[str, ...]  # per layer: "full_attention" | "sliding_attention"
    sliding_window: int | None  # the window of the sliding layers (None when none slide)
    mla: MLA | None = None
    moe: MoE | None = None
    quant: Quant | None = None
    qkv_bias: bool = False
    qk_norm: bool = False
    norms_per_layer: int = 2
    vision_params: int = 0  # multimodal towers vLLM also loads (estimated from vision_config)
    checkpoint_dtype: str = ""  # torch_dtype as written in config.json

    def with_dtype(self, dtype: str | None) -> Self:
        """This model served with ``--dtype dtype`` (None/auto: unchanged)."""
        if dtype in (None, "auto"):
            return self
        if dtype not in DTYPE_BYTES:
            raise ModelSpecError(f"dtype {dtype!r} is not one of auto, {', '.join(DTYPE_BYTES)}")
        return replace(self, dtype=str(dtype))

    # ---- sizes the shape states ------------------------------------------------------------------
    @property
    def dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.dtype]

    @property
    def is_hybrid(self) -> bool:
        return len(set(self.layer_types)) > 1

    def kv_dtype_bytes(self, kv_dtype: str | None = "auto") -> int:
        if kv_dtype in (None, "auto"):
            return self.dtype_bytes
        if kv_dtype in ("bfloat16", "float16", "half"):
            return 2
        if kv_dtype.startswith("fp8"):
            return 1
        raise ModelSpecError(f"kv_cache_dtype {kv_dtype!r} is not modelled; use auto, bfloat16, float16 or fp8")

    def kv_bytes_per_token_layer(self, kv_dtype: str | None = "auto", tp: int = 1) -> int:
        """Bytes one token occupies in one attention layer's KV cache (per GPU at TP ``tp``)."""
        b = self.kv_dtype_bytes(kv_dtype)
        if self.mla is not None:  # one latent vector + the rope key, replicated across TP ranks
            return (self.mla.kv_lora_rank + self.mla.qk_rope_head_dim) * b
        heads = max(1, self.num_kv_heads // tp)
        return heads * (self.head_dim + self.head_dim_v) * b

    def kv_bytes_per_token(self, kv_dtype: str | None = "auto", tp: int = 1) -> int:
        """KV bytes per token summed over all layers, as vLLM pages them (16-bit or fp8)."""
        return self.num_layers * self.kv_bytes_per_token_layer(kv_dtype, tp)
