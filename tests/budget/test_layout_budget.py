"""The budget per GPU of a parallel layout, by hand-computed numbers on real architectures' shapes, and the
layouts vLLM accepts (tuner.layout)."""

from __future__ import annotations

import pytest
from configs import LLAMA_3_8B, QWEN2_5_7B

from launch.config import ServeConfig
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import estimate_budget
from tuner.layout import Layout, layouts, per_gpu, searched_layouts, tp_problem
from tuner.model.spec import ModelSpec
from tuner.units import GIB

H200 = GPUProfile.load("h200")
# meta-llama/Meta-Llama-3-70B: Llama-3-8B's vocabulary and rope, 80 layers of hidden 8192, 64 heads, 8 KV heads
LLAMA_3_70B = dict(LLAMA_3_8B, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80, num_attention_heads=64)
LLAMA8 = ModelSpec.from_config(LLAMA_3_8B)
LLAMA70 = ModelSpec.from_config(LLAMA_3_70B)

# weights by hand (bf16, untied): embed + lm_head 2 x 128256 x h; per layer q,o h x h, k,v h x 1024, gate/up/down
# 3 x h x inter, two norms; the final norm; the rotary cache 8192 x 128 (all x 2 bytes)
W8 = 2 * (
    2 * 128256 * 4096 + 32 * (2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096) + 4096 + 8192 * 128
)
W70 = 2 * (
    2 * 128256 * 8192 + 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672 + 2 * 8192) + 8192 + 8192 * 128
)


def per_gpu_budget(spec: ModelSpec, tp: int, dp: int = 1, kv_gib: int = 10):
    config = Layout(tp, dp).apply(ServeConfig(model="m", max_model_len=8192, kv_cache_memory_bytes=kv_gib * GIB))
    return estimate_budget(spec, H200, config, vllm_version="0.26.0", env={})


def test_hand_computed_weights_match_the_spec() -> None:
    assert W8 == 16_062_619_648 and LLAMA8.weight_bytes == W8
    assert W70 == 141_109_510_144 and LLAMA70.weight_bytes == W70


@pytest.mark.parametrize(
    ("spec", "tp", "weights", "kv_per_token", "kv_tokens"),
    [
        # 8 KV heads x (128 + 128) x 2 bytes x 32 layers = 131072 B/token; 10 GiB / (16 x that) = 5120 blocks
        (LLAMA8, 1, 16_062_619_648, 131_072, 81_920),
        (LLAMA8, 2, 8_031_309_824, 65_536, 163_840),  # 4 KV heads per GPU
        (LLAMA8, 8, 2_007_827_456, 16_384, 655_360),  # 1 KV head per GPU
        # 70B: 80 layers; TP 4: 2 KV heads per GPU = 81920 B/token, 10 GiB = 8192 blocks of 16 tokens
        (LLAMA70, 4, 35_277_377_536, 81_920, 131_072),
        (LLAMA70, 8, 17_638_688_768, 40_960, 262_144),
    ],
)
def test_per_gpu_weights_and_kv_tokens_by_hand(spec, tp, weights, kv_per_token, kv_tokens) -> None:
    b = per_gpu_budget(spec, tp)
    assert b.tensor_parallel_size == tp
    assert b.weight_bytes == weights
    assert b.kv_bytes_per_token == kv_per_token
    assert b.kv_tokens == kv_tokens and b.feasible, b.reasons


def test_kv_heads_replicate_when_tp_exceeds_them() -> None:
    # 16 GPUs over 8 KV heads: each GPU still holds one whole KV head (vLLM replicates it on 2 GPUs)
    assert LLAMA70.kv_bytes_per_token("auto", 16) == 80 * 1 * 256 * 2 == LLAMA70.kv_bytes_per_token("auto", 8)


def test_data_parallel_replicas_keep_the_per_gpu_budget() -> None:
    one, two = per_gpu_budget(LLAMA8, 2), per_gpu_budget(LLAMA8, 2, dp=2)
    assert (two.weight_bytes, two.kv_tokens) == (one.weight_bytes, one.kv_tokens) == (8_031_309_824, 163_840)


def test_70b_on_one_h200_is_pruned_with_the_reason() -> None:
    b = per_gpu_budget(LLAMA70, 1)
    assert not b.feasible
    assert any("kv_cache_memory_bytes 10.00 GiB + weights 131.42 GiB" in r for r in b.reasons), b.reasons
    assert per_gpu_budget(LLAMA70, 2).feasible


def test_tp_rules_follow_vllm() -> None:
    assert tp_problem(LLAMA8, 3) == "num_attention_heads 32 is not divisible by tensor_parallel_size 3"
    assert tp_problem(LLAMA70, 16) is None  # 64 heads; 8 KV heads replicated twice
    qwen = ModelSpec.from_config(QWEN2_5_7B)  # 28 heads, 4 KV heads
    assert tp_problem(qwen, 4) is None and tp_problem(qwen, 8) is not None
    odd = ModelSpec.from_config(dict(LLAMA_3_8B, num_attention_heads=24, num_key_value_heads=12, head_dim=128))
    assert tp_problem(odd, 16) == "num_attention_heads 24 is not divisible by tensor_parallel_size 16"
    assert "num_key_value_heads 12 is not divisible by tensor_parallel_size 8" == tp_problem(
        ModelSpec.from_config(dict(LLAMA_3_8B, num_attention_heads=48, num_key_value_heads=12, head_dim=128)), 8
    )
    six = ModelSpec.from_config(dict(LLAMA_3_8B, num_attention_heads=48, num_key_value_heads=6, head_dim=128))
    assert "exceeds num_key_value_heads 6 but is not a multiple" in (tp_problem(six, 8) or "")
    b = per_gpu_budget(six, 8)
    assert not b.feasible and any("exceeds num_key_value_heads 6" in r for r in b.reasons)


def test_layouts_of_four_gpus() -> None:
    names = [x.name for x in layouts(LLAMA8, 4, data_parallel=True)]
    assert names == ["tp1xdp1", "tp1xdp2", "tp1xdp3", "tp1xdp4", "tp2xdp1", "tp2xdp2", "tp4xdp1"]
    assert [x.name for x in layouts(LLAMA8, 4, data_parallel=False)] == ["tp1xdp1", "tp2xdp1", "tp4xdp1"]
    assert Layout.parse("tp2xdp2") == Layout(2, 2) and Layout(2, 2).gpus == 4


def test_layouts_are_searched_only_with_several_gpus_and_the_flags() -> None:
    assert searched_layouts(LLAMA8, [None], frozenset()) == ()
    assert searched_layouts(LLAMA8, ["0"], frozenset()) == ()
    assert [x.name for x in searched_layouts(LLAMA8, ["0", "1"], frozenset({"--tensor-parallel-size"}))] == [
        "tp1xdp1",
        "tp2xdp1",
    ]
    assert len(searched_layouts(LLAMA8, ["0", "1"], frozenset({"--tensor-parallel-size", "--data-parallel-size"}))) == 3


def test_single_gpu_layout_leaves_the_config_as_today() -> None:
    base = ServeConfig(model="m")
    assert Layout(1, 1).apply(base) == base and base.gpus == 1
    four = Layout(2, 2).apply(base)
    assert (four.tensor_parallel_size, four.data_parallel_size, four.gpus) == (2, 2, 4)
    assert per_gpu(10.0, four) == 2.5
