"""Synthetic models: a real architecture's config.json, a tokenizer of exactly ``vocab_size``
entries and (optionally) random weights.

Used by the demo, the tests and GPU runs (with ``--load-format dummy`` the weights are skipped and
vLLM generates them on the device). Output text is meaningless; timings and memory are real.
The tokenizer is a WordLevel vocabulary ``w0 … w{V-4}`` + ``<s> </s> <unk>``, split on whitespace,
so a prompt of N words is exactly N tokens (plus BOS if the server adds one).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tuner.model.spec import ModelSpec
from tuner.quantize.groups import choose_group_size
from tuner.quantize.recipe import SCHEMES, QuantizeRecipe

_LLAMA_TINY: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 256,
    "intermediate_size": 512,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 4096,
    "max_position_embeddings": 4096,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "torch_dtype": "bfloat16",
    "tie_word_embeddings": False,
}

# name -> config.json overrides on top of the tiny Llama. Real shapes are for --load-format dummy.
SHAPES: dict[str, dict[str, Any]] = {
    "llama-tiny": {},
    "qwen2-tiny": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "use_sliding_window": False,
        "sliding_window": 4096,
        "tie_word_embeddings": True,
    },
    "qwen3-tiny": {
        "architectures": ["Qwen3ForCausalLM"],
        "model_type": "qwen3",
        "head_dim": 64,
        "use_sliding_window": False,
        "tie_word_embeddings": True,
    },
    "qwen2-moe-tiny": {
        "architectures": ["Qwen2MoeForCausalLM"],
        "model_type": "qwen2_moe",
        "moe_intermediate_size": 128,
        "shared_expert_intermediate_size": 256,
        "num_experts": 4,
        "num_experts_per_tok": 2,
        "decoder_sparse_step": 1,
        "norm_topk_prob": False,
        "use_sliding_window": False,
    },
    "mixtral-tiny": {
        "architectures": ["MixtralForCausalLM"],
        "model_type": "mixtral",
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    "llama-3-8b": {
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "vocab_size": 128256,
        "max_position_embeddings": 8192,
        "rope_theta": 500000.0,
    },
    "qwen2.5-7b": {
        "architectures": ["Qwen2ForCausalLM"],
        "model_type": "qwen2",
        "hidden_size": 3584,
        "intermediate_size": 18944,
        "num_hidden_layers": 28,
        "num_attention_heads": 28,
        "num_key_value_heads": 4,
        "vocab_size": 152064,
        "max_position_embeddings": 32768,
        "rope_theta": 1000000.0,
        "rms_norm_eps": 1e-6,
        "use_sliding_window": False,
        "sliding_window": 131072,
        "tie_word_embeddings": False,
    },
}

CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"


def w4a16_quantization_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The ``quantization_config`` ``tune quantize`` writes with its default ``QuantizeRecipe``
    (compressed-tensors, 4-bit integer weights in groups, 16-bit activations, the recipe's ignore list
    kept 16-bit), for a config-only model served with ``--load-format dummy``: the 4-bit variant's memory
    and kernels are real, its (random) weights need no calibration. No layer is restored to 16-bit (a real
    quantization may restore a few: docs/quantize.md)."""
    recipe = QuantizeRecipe()
    group = choose_group_size(ModelSpec.from_config(cfg), recipe.group_size)
    weights = {
        "num_bits": SCHEMES[recipe.scheme],
        "type": "int",
        "symmetric": recipe.symmetric,
        "strategy": "group",
        "group_size": group.group_size,
        "dynamic": False,
        "actorder": None,
        "observer": "memoryless_minmax",
        "observer_kwargs": {},
    }
    return {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "quantization_status": "compressed",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": weights,
                "input_activations": None,
                "output_activations": None,
                "format": "pack-quantized",
            }
        },
        "ignore": [*recipe.ignore, *group.ignore_patterns()],
        "kv_cache_scheme": None,
        "sparsity_config": {},
    }


def shape_config(shape: str, **overrides: Any) -> dict[str, Any]:
    """The config.json dict of a named shape (``SHAPES``), with overrides applied."""
    if shape not in SHAPES:
        raise ValueError(f"unknown model shape {shape!r}; choose one of: {', '.join(SHAPES)}")
    cfg = {**_LLAMA_TINY, **SHAPES[shape], **overrides}
    vocab = int(cfg["vocab_size"])
    cfg.update(bos_token_id=vocab - 3, eos_token_id=vocab - 2)
    return cfg


def write_tokenizer(out: Path, vocab_size: int) -> None:
    """A fast tokenizer with exactly ``vocab_size`` entries (needs only the ``tokenizers`` package)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    vocab = {f"w{i}": i for i in range(vocab_size - 3)}
    vocab.update({"<s>": vocab_size - 3, "</s>": vocab_size - 2, "<unk>": vocab_size - 1})
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##")  # joins tokens with spaces
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(
        json.dumps(
            {
                "tokenizer_class": "PreTrainedTokenizerFast",
                "bos_token": "<s>",
                "eos_token": "</s>",
                "unk_token": "<unk>",
                "pad_token": "<unk>",
                "model_max_length": 1 << 20,
                "chat_template": CHAT_TEMPLATE,
            },
            indent=1,
        )
    )


def write_model(
    out: str | Path,
    shape: str = "llama-tiny",
    *,
    weights: bool = True,
    seed: int = 0,
    w4a16: bool = False,
    **overrides: Any,
) -> Path:
    """Write a synthetic model directory and return its path.

    ``weights=False`` writes config + tokenizer only (serve with ``--load-format dummy``); with ``w4a16``
    that config is of the 4-bit variant (``w4a16_quantization_config``), which has no random-weights form.
    ``weights=True`` needs torch + transformers and is meant for tiny shapes.
    """
    if w4a16 and weights:
        raise ValueError(
            "a 4-bit synthetic model is config-only (weights=False): quantize real weights with tune quantize instead"
        )
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    cfg = shape_config(shape, **overrides)
    if w4a16:
        cfg["quantization_config"] = w4a16_quantization_config(cfg)
    write_tokenizer(out, int(cfg["vocab_size"]))
    (out / "generation_config.json").write_text(
        json.dumps({"bos_token_id": cfg["bos_token_id"], "eos_token_id": cfg["eos_token_id"]})
    )
    if not weights:
        # what save_pretrained would record; without it transformers ≥ 5 suspects a Mistral tokenizer and
        # warns about its regex every time the tokenizer loads
        (out / "config.json").write_text(json.dumps({**cfg, **_transformers_version()}, indent=1))
        return out
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    torch.manual_seed(seed)
    config = AutoConfig.for_model(**cfg)
    model = AutoModelForCausalLM.from_config(config, torch_dtype=getattr(torch, cfg["torch_dtype"]))
    with torch.no_grad():  # default init leaves norms at 1 and is fine; make linear weights small
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    model.save_pretrained(out)
    # save_pretrained rewrites config.json; keep our exact dict (plus what transformers added)
    saved = json.loads((out / "config.json").read_text())
    saved.update(cfg)
    (out / "config.json").write_text(json.dumps(saved, indent=1))
    return out


def _transformers_version() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return {"transformers_version": version("transformers")}
    except PackageNotFoundError:
        return {}
