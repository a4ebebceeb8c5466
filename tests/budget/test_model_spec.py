"""ModelSpec on real published config.json shapes: parameter counts, KV bytes per token, layer patterns,
MoE/MLA parsing, 4-bit weight bytes, and the errors for bad input."""

from __future__ import annotations

import json
import math

import pytest
from configs import (
    CT_W4A16_ASYM,
    DEEPSEEK_V2_LITE,
    GEMMA2_9B,
    GEMMA3_1B,
    LLAMA_3_8B,
    MIXTRAL_8X7B,
    QWEN1_5_MOE_A2_7B,
    QWEN2_5_7B,
    QWEN3_8B,
)

from tuner.errors import ModelSpecError, UsageError
from tuner.model.spec import ModelSpec

# Published parameter counts (the "Model size"/safetensors totals on the models' Hugging Face pages).
PUBLISHED_PARAMS = [
    (LLAMA_3_8B, 8_030_261_248),
    (QWEN2_5_7B, 7_615_616_512),
    (QWEN3_8B, 8_190_735_360),
    (MIXTRAL_8X7B, 46_702_792_704),
    (QWEN1_5_MOE_A2_7B, 14_315_784_192),
    (DEEPSEEK_V2_LITE, 15_706_484_224),
    (GEMMA2_9B, 9_241_705_984),
    (GEMMA3_1B, 999_885_952),
]


@pytest.mark.parametrize(
    ("cfg", "params"), PUBLISHED_PARAMS, ids=lambda v: v.get("model_type", "") if isinstance(v, dict) else ""
)
def test_parameter_count_matches_the_published_size(cfg: dict, params: int) -> None:
    assert ModelSpec.from_config(cfg).num_params == params


@pytest.mark.parametrize(("cfg", "params"), PUBLISHED_PARAMS[:4])
def test_weight_bytes_are_two_bytes_per_param_within_2_percent(cfg: dict, params: int) -> None:
    spec = ModelSpec.from_config(cfg)
    assert spec.weight_bytes == pytest.approx(2 * params, rel=0.02)
    assert spec.weight_bytes >= 2 * params  # plus the rotary cache vLLM allocates


def test_gqa_kv_bytes_per_token_16bit_and_fp8() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)  # 32 layers x (K+V) x 8 heads x 128 dims
    assert spec.kv_bytes_per_token() == 32 * 2 * 8 * 128 * 2
    assert spec.kv_bytes_per_token("fp8") == 32 * 2 * 8 * 128
    assert spec.kv_bytes_per_token(tp=2) == spec.kv_bytes_per_token() // 2


def test_missing_kv_heads_means_multi_head_attention() -> None:
    cfg = {k: v for k, v in LLAMA_3_8B.items() if k != "num_key_value_heads"}
    spec = ModelSpec.from_config(cfg)
    assert spec.num_kv_heads == spec.num_heads == 32
    assert spec.head_dim == 4096 // 32


def test_qwen_sliding_window_is_off_when_use_sliding_window_is_false() -> None:
    spec = ModelSpec.from_config(QWEN2_5_7B)
    assert spec.sliding_window is None and set(spec.layer_types) == {"full_attention"}
    assert spec.qkv_bias and not spec.tie_word_embeddings
    on = ModelSpec.from_config({**QWEN2_5_7B, "use_sliding_window": True, "max_window_layers": 20})
    assert on.layer_types.count("sliding_attention") == 8 and on.sliding_window == 131072


def test_qwen3_explicit_head_dim_and_qk_norm() -> None:
    spec = ModelSpec.from_config(QWEN3_8B)
    assert spec.head_dim == 128 and spec.qk_norm
    assert spec.kv_bytes_per_token() == 36 * 2 * 8 * 128 * 2


def test_gemma2_alternates_sliding_and_full_layers() -> None:
    spec = ModelSpec.from_config(GEMMA2_9B)
    assert spec.layer_types[:4] == ("sliding_attention", "full_attention") * 2
    assert spec.layer_types.count("sliding_attention") == 21 and spec.sliding_window == 4096
    assert spec.tie_word_embeddings  # Gemma ties by default
    assert spec.checkpoint_dtype == "float32" and spec.dtype == "bfloat16"  # vLLM --dtype auto downcasts


def test_gemma3_five_sliding_layers_per_full_layer() -> None:
    spec = ModelSpec.from_config(GEMMA3_1B)
    full = [i for i, t in enumerate(spec.layer_types) if t == "full_attention"]
    assert full == [5, 11, 17, 23] and spec.sliding_window == 512


def test_explicit_layer_types_win_over_the_pattern() -> None:
    types = ["full_attention"] * 2 + ["sliding_attention"] * 24
    spec = ModelSpec.from_config({**GEMMA3_1B, "layer_types": types})
    assert spec.layer_types == tuple(types)


def test_multimodal_wrapper_reads_text_config() -> None:
    text = {k: v for k, v in GEMMA3_1B.items() if k not in ("architectures", "torch_dtype")}
    cfg = {
        "model_type": "gemma3",
        "torch_dtype": "bfloat16",
        "text_config": text,
        "vision_config": {
            "hidden_size": 1152,
            "intermediate_size": 4304,
            "num_hidden_layers": 27,
            "patch_size": 14,
            "image_size": 896,
        },
    }
    spec = ModelSpec.from_config(cfg)
    assert spec.num_layers == 26 and spec.vision_params > 0
    assert spec.num_params > ModelSpec.from_config(GEMMA3_1B).num_params


def test_mixtral_experts() -> None:
    spec = ModelSpec.from_config(MIXTRAL_8X7B)
    assert spec.moe is not None and spec.moe.num_experts == 8 and len(spec.moe.moe_layers) == 32
    assert spec.active_params == pytest.approx(12.9e9, rel=0.01)  # "12.9B active parameters"


def test_qwen_moe_shared_expert() -> None:
    spec = ModelSpec.from_config(QWEN1_5_MOE_A2_7B)
    assert spec.moe is not None and spec.moe.shared_intermediate_size == 5632 and spec.moe.shared_expert_gate
    assert spec.active_params == pytest.approx(2.7e9, rel=0.01)  # "A2.7B"


def test_deepseek_mla_kv_is_the_latent_plus_rope_key() -> None:
    spec = ModelSpec.from_config(DEEPSEEK_V2_LITE)
    assert spec.mla is not None
    assert spec.kv_bytes_per_token() == 27 * (512 + 64) * 2
    assert spec.kv_bytes_per_token(tp=4) == spec.kv_bytes_per_token()  # the latent is replicated
    assert spec.moe is not None and spec.moe.moe_layers == tuple(range(1, 27))  # first layer dense
    assert spec.moe.shared_intermediate_size == 2 * 1408


def test_compressed_tensors_w4a16_weight_bytes_from_packed_shapes() -> None:
    spec = ModelSpec.from_config({**LLAMA_3_8B, "quantization_config": CT_W4A16_ASYM})
    h, i, layers, vocab = 4096, 14336, 32, 128256
    linears = [(h, h), (h, 1024), (h, 1024), (h, h), (h, i), (h, i), (i, h)]  # (in, out)
    per_layer = 0
    for cols, rows in linears:
        groups = math.ceil(cols / 128)
        per_layer += rows * cols // 2 + rows * groups * 2 + rows * groups // 2  # int4 + bf16 scale + int4 zp
    unquantized = 2 * (2 * vocab * h + h + layers * 2 * h + 8192 * 128)  # embed, lm_head, norms, rotary
    assert spec.weight_bytes == layers * per_layer + unquantized
    assert spec.weight_bytes < 0.4 * ModelSpec.from_config(LLAMA_3_8B).weight_bytes


def test_awq_and_gptq_configs_are_understood() -> None:
    awq = ModelSpec.from_config(
        {
            **QWEN2_5_7B,
            "quantization_config": {
                "quant_method": "awq",
                "bits": 4,
                "group_size": 128,
                "zero_point": True,
                "version": "gemm",
            },
        }
    )
    gptq = ModelSpec.from_config(
        {
            **QWEN2_5_7B,
            "quantization_config": {
                "quant_method": "gptq",
                "bits": 4,
                "group_size": 128,
                "desc_act": False,
                "sym": True,
            },
        }
    )
    dense = ModelSpec.from_config(QWEN2_5_7B).weight_bytes
    assert 0.25 * dense < awq.weight_bytes < 0.45 * dense
    assert gptq.weight_bytes > awq.weight_bytes  # g_idx


def test_from_dir_reads_config_json(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA_3_8B))
    assert ModelSpec.from_dir(tmp_path).num_layers == 32


@pytest.mark.parametrize(
    "field",
    ["num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size", "max_position_embeddings", "torch_dtype"],
)
def test_missing_field_names_file_field_and_fix(tmp_path, field: str) -> None:
    (tmp_path / "config.json").write_text(json.dumps({k: v for k, v in LLAMA_3_8B.items() if k != field}))
    with pytest.raises(ModelSpecError) as err:
        ModelSpec.from_dir(tmp_path)
    assert isinstance(err.value, UsageError)
    assert str(tmp_path / "config.json") in str(err.value) and f"'{field}'" in str(err.value)


def test_unknown_model_type_is_rejected_with_the_known_list(tmp_path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA_3_8B, "model_type": "mamba"}))
    with pytest.raises(ModelSpecError, match=r"model_type 'mamba' is not modelled.*known: .*llama"):
        ModelSpec.from_dir(tmp_path)


def test_missing_mla_field_is_named() -> None:
    cfg = {k: v for k, v in DEEPSEEK_V2_LITE.items() if k != "qk_rope_head_dim"}
    with pytest.raises(ModelSpecError, match="'qk_rope_head_dim'"):
        ModelSpec.from_config(cfg)


def test_no_config_json(tmp_path) -> None:
    with pytest.raises(ModelSpecError, match="no config.json"):
        ModelSpec.from_dir(tmp_path)


def test_unknown_quant_method_is_rejected() -> None:
    with pytest.raises(ModelSpecError, match="quant_method 'bitsandbytes'"):
        ModelSpec.from_config({**LLAMA_3_8B, "quantization_config": {"quant_method": "bitsandbytes"}})
