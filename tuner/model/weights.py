"""The tensors vLLM loads for a ModelSpec, and their bytes (packed 4-bit + scales + zero points when
quantized): what ``ModelSpec.weight_bytes`` / ``num_params`` / ``decode_weight_bytes`` sum over."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from tuner.model.shape import ModelShape, Quant


# ---- tensors ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _T:
    name: str
    numel: int
    rows: int = 0  # output features (linear layers only)
    cols: int = 0  # input features
    active_fraction: float = 1.0
    param: bool = True  # False for buffers (rotary cache) that take memory but are not parameters

    @property
    def is_linear(self) -> bool:
        return self.rows > 0


def _lin(name: str, cols: int, rows: int, active: float = 1.0) -> _T:
    return _T(name, rows * cols, rows, cols, active)


def tensors(s: ModelShape) -> list[_T]:
    h, vocab = s.hidden_size, math.ceil(s.vocab_size / 64) * 64  # vLLM pads the vocab to 64
    out = [_T("model.embed_tokens", vocab * h), _T("model.norm", h)]
    if not s.tie_word_embeddings:
        out.append(_lin("lm_head", h, vocab))
    rot = s.mla.qk_rope_head_dim if s.mla else s.head_dim
    out.append(_T("rotary_emb.cos_sin_cache", s.max_position_embeddings * rot, param=False))
    if s.vision_params:
        out.append(_T("vision_tower", s.vision_params))
    for i in range(s.num_layers):
        p = f"model.layers.{i}."
        out.append(_T(p + "norms", s.norms_per_layer * h))
        out += _attention(s, p + "self_attn.")
        out += _mlp(s, i, p + "mlp.")
    return out


def _attention(s: ModelShape, p: str) -> list[_T]:
    h = s.hidden_size
    if s.mla is not None:
        m, qk = s.mla, s.mla.qk_nope_head_dim + s.mla.qk_rope_head_dim
        query = (
            [
                _lin(p + "q_a_proj", h, m.q_lora_rank),
                _T(p + "q_a_layernorm", m.q_lora_rank),
                _lin(p + "q_b_proj", m.q_lora_rank, s.num_heads * qk),
            ]
            if m.q_lora_rank
            else [_lin(p + "q_proj", h, s.num_heads * qk)]
        )
        kv_b = s.num_heads * (m.qk_nope_head_dim + m.v_head_dim)
        return query + [
            _lin(p + "kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim),
            _T(p + "kv_a_layernorm", m.kv_lora_rank),
            _lin(p + "kv_b_proj", m.kv_lora_rank, kv_b),
            _lin(p + "o_proj", s.num_heads * m.v_head_dim, h),
        ]
    q, kv = s.num_heads * s.head_dim, s.num_kv_heads * s.head_dim
    v = s.num_kv_heads * s.head_dim_v
    out = [_lin(p + "q_proj", h, q), _lin(p + "k_proj", h, kv), _lin(p + "v_proj", h, v), _lin(p + "o_proj", q, h)]
    if s.qkv_bias:
        out.append(_T(p + "qkv_bias", q + kv + v))
    if s.qk_norm:
        out.append(_T(p + "qk_norm", 2 * s.head_dim))
    return out


def _gated(p: str, h: int, inter: int, active: float = 1.0) -> list[_T]:
    return [
        _lin(p + "gate_proj", h, inter, active),
        _lin(p + "up_proj", h, inter, active),
        _lin(p + "down_proj", inter, h, active),
    ]


def _mlp(s: ModelShape, i: int, p: str) -> list[_T]:
    moe = s.moe
    if moe is None or i not in moe.moe_layers:
        return _gated(p, s.hidden_size, s.intermediate_size)
    frac = moe.experts_per_token / moe.num_experts
    out = [_lin(p + "gate", s.hidden_size, moe.num_experts)]
    for e in range(moe.num_experts):
        out += _gated(f"{p}experts.{e}.", s.hidden_size, moe.expert_intermediate_size, frac)
    if moe.shared_intermediate_size:
        out += _gated(p + "shared_expert.", s.hidden_size, moe.shared_intermediate_size)
    if moe.shared_expert_gate:
        out.append(_lin(p + "shared_expert_gate", s.hidden_size, 1))
    return out


def _ignored(q: Quant, name: str) -> bool:
    for entry in q.ignore:
        if entry.startswith("re:"):
            if re.match(entry[3:], name):
                return True
        elif name == entry or name.endswith("." + entry) or (q.method == "awq" and entry in name):
            return True
    return False


def is_quantized(s: ModelShape, t: _T) -> bool:
    """Whether vLLM loads this tensor quantized (else in the model's 16-bit dtype)."""
    return s.quant is not None and t.is_linear and not _unquantized(s.quant, t.name)


def tensor_bytes(s: ModelShape, t: _T) -> int:
    q = s.quant
    if q is None or not is_quantized(s, t):
        return t.numel * s.dtype_bytes
    if q.bits == 8:  # fp8 / int8 weights with per-channel fp32 scales
        return t.numel + 4 * t.rows
    groups = math.ceil(t.cols / (t.cols if q.group_size <= 0 else q.group_size))
    packed = t.numel * q.bits // 8
    scales = t.rows * groups * s.dtype_bytes
    zeros = t.rows * groups * q.bits // 8 if q.zero_point else 0
    return packed + scales + zeros + (4 * t.cols if q.g_idx else 0)


def _unquantized(q: Quant, name: str) -> bool:
    """vLLM keeps these in 16 bits: the ignore list, MoE routers (built with quant_config=None) and the
    LM head (a VocabParallelEmbedding, quantized only by GPTQ with lm_head: true)."""
    if name.endswith((".gate", "shared_expert_gate")):
        return True
    if name == "lm_head":
        return not (q.method == "gptq" and "lm_head" not in q.ignore)
    return _ignored(q, name)
