"""config.json -> ModelShape: model families, the spellings of sliding windows, MoE, MLA and quantization
fields, and defaults a config may omit. A config that lacks a field the budget needs, or names a
model_type we do not know, is a ``ModelSpecError`` naming the file, the field and the fix."""

from __future__ import annotations

from typing import Any

from tuner.errors import ModelSpecError
from tuner.model.config_values import ConfigValues
from tuner.model.quant import parse_quant
from tuner.model.shape import DTYPE_BYTES, MLA, ModelShape, MoE

# model_type -> family rules. Families decide defaults the config may omit (tied embeddings, norms,
# biases) and how sliding windows / MoE fields are spelled.
_FAMILIES: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "mixtral": "mixtral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "qwen2_moe": "qwen2_moe",
    "qwen3_moe": "qwen3_moe",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gemma3": "gemma3",
    "gemma3_text": "gemma3",
    "deepseek_v2": "deepseek",
    "deepseek_v3": "deepseek",
    "kimi_k2": "deepseek",
    "phi3": "phi3",
    "granite": "llama",
    "olmo2": "olmo2",
    "internlm2": "llama",
    "glm4_moe": "glm4_moe",
    "ministral": "mistral",
    "smollm3": "llama",
}

_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3"}
_QKV_BIAS = {"qwen2", "qwen2_moe", "glm4_moe"}
_QK_NORM = {"qwen3", "qwen3_moe", "gemma3", "olmo2"}
_NORMS_PER_LAYER = {"gemma2": 4, "gemma3": 4, "olmo2": 2}


def parse(raw: Any, source: str) -> ModelShape:
    cfg, vision = _language_model(raw, source)
    model_type, family = _family(cfg, source)
    layers = cfg.whole("num_hidden_layers", "the layer count")
    hidden = cfg.whole("hidden_size", "weights and activations")
    heads, kv_heads, head_dim = _attention_heads(cfg, hidden, source)
    dtype = _checkpoint_dtype(cfg, source)
    mla = _parse_mla(cfg, family)
    moe = _parse_moe(cfg, family, layers)
    intermediate = cfg.whole("intermediate_size", low=0, default=0)
    if intermediate == 0 and (moe is None or len(moe.moe_layers) < layers):
        cfg.whole("intermediate_size", "the dense MLP weights")
    layer_types, window = _parse_layer_types(cfg, family, layers, source)
    return ModelShape(
        source=source,
        model_type=str(model_type),
        family=family,
        num_layers=layers,
        hidden_size=hidden,
        num_heads=heads,
        num_kv_heads=kv_heads,
        head_dim=head_dim,
        head_dim_v=cfg.whole("head_dim_v", default=head_dim),
        intermediate_size=intermediate,
        vocab_size=cfg.whole("vocab_size", "embedding and logits sizes"),
        max_position_embeddings=cfg.whole("max_position_embeddings", "the default max_model_len"),
        dtype="bfloat16" if str(dtype) in ("float32", "float") else str(dtype),
        checkpoint_dtype=str(dtype),
        tie_word_embeddings=bool(cfg.get("tie_word_embeddings", family in _TIED_BY_DEFAULT)),
        layer_types=layer_types,
        sliding_window=window,
        mla=mla,
        moe=moe,
        quant=parse_quant(cfg.part("quantization_config"), source),
        qkv_bias=bool(cfg.get("attention_bias", family in _QKV_BIAS)) and family != "deepseek",
        qk_norm=family in _QK_NORM or bool(cfg.get("use_qk_norm")),
        norms_per_layer=_NORMS_PER_LAYER.get(family, 2),
        vision_params=vision,
    )


def _language_model(raw: Any, source: str) -> tuple[ConfigValues, int]:
    """The language model's fields (a multimodal wrapper keeps them in text_config) and the vision
    tower's parameter count (0 without one)."""
    cfg = ConfigValues(raw, source)
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        return cfg, 0
    outer_type = cfg.get("model_type")
    text_cfg = ConfigValues(text, source, "text_config")
    vision_cfg = cfg.part("vision_config")
    vision = _vision_params(vision_cfg, text_cfg.whole("hidden_size", low=0, default=0)) if vision_cfg else 0
    merged = {k: v for k, v in raw.items() if k not in ("text_config", "vision_config")}
    merged.update(text)
    if "model_type" not in text and outer_type:
        merged["model_type"] = outer_type
    return ConfigValues(merged, source), vision


def _family(cfg: ConfigValues, source: str) -> tuple[str, str]:
    """(model_type, family); a missing or unknown model_type is a ModelSpecError."""
    model_type = cfg.get("model_type")
    if not model_type:
        raise ModelSpecError(
            f"{source}: field 'model_type' is missing; add it from the model's published "
            f"config.json (one of: {', '.join(sorted(_FAMILIES))})"
        )
    family = _FAMILIES.get(str(model_type))
    if family is None:
        raise ModelSpecError(
            f"{source}: model_type {model_type!r} is not modelled by the KV budget; known: "
            f"{', '.join(sorted(_FAMILIES))}. Add a family rule in tuner/model/config.py "
            "(layer types, MoE and MLA fields) before tuning this model"
        )
    return str(model_type), family


def _attention_heads(cfg: ConfigValues, hidden: int, source: str) -> tuple[int, int, int]:
    """(attention heads, KV heads, head_dim); head_dim defaults to hidden_size / heads."""
    heads = cfg.whole("num_attention_heads", "attention shapes")
    kv_heads = cfg.whole("num_key_value_heads", default=heads)
    if kv_heads > heads:
        raise ModelSpecError(
            f"{source}: num_key_value_heads {kv_heads} exceeds num_attention_heads {heads}; fix config.json"
        )
    head_dim = cfg.whole("head_dim", default=0) or None
    if head_dim is None:
        if hidden % heads:
            raise ModelSpecError(
                f"{source}: field 'head_dim' is missing and hidden_size {hidden} is not a "
                f"multiple of num_attention_heads {heads}; add head_dim"
            )
        head_dim = max(1, hidden // heads)
    return heads, kv_heads, head_dim


def _checkpoint_dtype(cfg: ConfigValues, source: str) -> str:
    dtype = cfg.get("torch_dtype") or cfg.get("dtype")
    if dtype is None:
        raise ModelSpecError(
            f"{source}: field 'torch_dtype' is missing (needed for weight and KV bytes); "
            'add "torch_dtype": "bfloat16" (or the dtype the checkpoint was saved in)'
        )
    if str(dtype) not in DTYPE_BYTES:
        raise ModelSpecError(f"{source}: torch_dtype {dtype!r} is not one of {', '.join(DTYPE_BYTES)}")
    return str(dtype)


def _parse_mla(cfg: ConfigValues, family: str) -> MLA | None:
    if family != "deepseek" or cfg.get("kv_lora_rank") is None:
        return None
    return MLA(
        kv_lora_rank=cfg.whole("kv_lora_rank", "MLA"),
        qk_rope_head_dim=cfg.whole("qk_rope_head_dim", "MLA"),
        qk_nope_head_dim=cfg.whole("qk_nope_head_dim", "MLA"),
        v_head_dim=cfg.whole("v_head_dim", "MLA"),
        q_lora_rank=cfg.whole("q_lora_rank", default=0) or None,
    )


def _parse_moe(cfg: ConfigValues, family: str, layers: int) -> MoE | None:
    if family == "mixtral":
        return MoE(
            cfg.whole("num_local_experts", "MoE"),
            cfg.whole("num_experts_per_tok", "MoE"),
            cfg.whole("intermediate_size", "expert size"),
            0,
            False,
            tuple(range(layers)),
        )
    if family in ("qwen2_moe", "qwen3_moe"):
        experts = cfg.whole("num_experts", low=0, default=0)
        if experts == 0:
            return None
        step, dense = cfg.whole("decoder_sparse_step", default=1), set(cfg.wholes("mlp_only_layers"))
        moe_layers = tuple(i for i in range(layers) if i not in dense and (i + 1) % step == 0)
        shared = cfg.whole("shared_expert_intermediate_size", low=0, default=0)
        return MoE(
            experts,
            cfg.whole("num_experts_per_tok", "MoE"),
            cfg.whole("moe_intermediate_size", "MoE"),
            shared,
            shared > 0,
            moe_layers,
        )
    if family in ("deepseek", "glm4_moe"):
        experts = cfg.whole("n_routed_experts", low=0, default=0)
        if experts == 0:
            return None
        first = cfg.whole("first_k_dense_replace", low=0, default=0)
        freq = cfg.whole("moe_layer_freq", default=1)
        size = cfg.whole("moe_intermediate_size", "MoE")
        shared = size * cfg.whole("n_shared_experts", low=0, default=0)
        moe_layers = tuple(i for i in range(layers) if i >= first and i % freq == 0)
        return MoE(experts, cfg.whole("num_experts_per_tok", "MoE"), size, shared, False, moe_layers)
    return None


def _parse_layer_types(cfg: ConfigValues, family: str, layers: int, source: str) -> tuple[tuple[str, ...], int | None]:
    window = cfg.get("sliding_window")
    full = ("full_attention",) * layers
    if family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe") and not cfg.get("use_sliding_window", False):
        return full, None  # Qwen ships sliding_window with use_sliding_window: false -> off
    if cfg.get("use_sliding_window") is False or window is None:
        return full, None
    explicit = cfg.get("layer_types")
    if isinstance(explicit, list) and len(explicit) == layers:
        unknown = sorted({str(t) for t in explicit} - {"full_attention", "sliding_attention"})
        if unknown:
            raise ModelSpecError(
                f"{source}: layer_types has {unknown}, which the KV budget does not model "
                "(only full_attention and sliding_attention)"
            )
        types = tuple(str(t) for t in explicit)
    elif family == "gemma2":
        types = tuple("sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers))
    elif family == "gemma3":
        pattern = cfg.whole("sliding_window_pattern", default=6)
        types = tuple("full_attention" if (i + 1) % pattern == 0 else "sliding_attention" for i in range(layers))
    elif family in ("qwen2", "qwen3", "qwen2_moe", "qwen3_moe"):
        first = cfg.whole("max_window_layers", low=0, default=0)
        types = tuple("sliding_attention" if i >= first else "full_attention" for i in range(layers))
    else:  # Mistral-style: a window in the config applies to every layer
        types = ("sliding_attention",) * layers
    return types, (cfg.whole("sliding_window") if "sliding_attention" in types else None)


def _vision_params(vc: ConfigValues, text_hidden: int) -> int:
    """Rough size of a ViT tower + projector (vLLM loads it with the language model)."""
    h = vc.whole("hidden_size", low=0, default=0)
    if not h:
        return 0
    i = vc.whole("intermediate_size", default=4 * h)
    n, p = vc.whole("num_hidden_layers", low=0, default=0), vc.whole("patch_size", default=14)
    side = vc.whole("image_size", default=224) // p
    return n * (4 * h * h + 2 * h * i + 9 * h) + 3 * p * p * h + side * side * h + h * text_hidden
