"""Roofline floors: bytes / bandwidth for decode, FLOPs / peak for prefill."""

from __future__ import annotations

import pytest
from configs import LLAMA_3_8B, MIXTRAL_8X7B

from tuner.budget.gpu import GPUProfile
from tuner.budget.roofline import decode_tpot_floor_ms, prefill_floor_ms, prefill_flops
from tuner.model.spec import ModelSpec

H200 = GPUProfile.load("h200")


def test_decode_floor_is_weight_bytes_over_bandwidth() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    floor = decode_tpot_floor_ms(spec, H200)
    assert floor == pytest.approx(1e3 * spec.decode_weight_bytes(1) / H200.bandwidth_bytes_s)
    assert floor < 4.72  # DESIGN.md: TPOT measured 4.72 ms at concurrency 1 on this GPU


def test_decode_floor_grows_with_kv_read() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    assert decode_tpot_floor_ms(spec, H200, batch=64, context_tokens=2000) > decode_tpot_floor_ms(spec, H200)
    fp8 = decode_tpot_floor_ms(spec, H200, batch=64, context_tokens=2000, kv_dtype="fp8")
    assert fp8 < decode_tpot_floor_ms(spec, H200, batch=64, context_tokens=2000)


def test_moe_decode_reads_only_routed_experts() -> None:
    spec = ModelSpec.from_config(MIXTRAL_8X7B)
    one, many = spec.decode_weight_bytes(1), spec.decode_weight_bytes(256)
    assert one < 0.35 * spec.weight_bytes and many == pytest.approx(spec.weight_bytes - 2 * 32000 * 4096, rel=0.01)


def test_prefill_floor_scales_with_tokens_and_peak() -> None:
    spec = ModelSpec.from_config(LLAMA_3_8B)
    assert prefill_flops(spec, 2048) > 2 * prefill_flops(spec, 1024)  # attention is quadratic
    long = prefill_floor_ms(spec, H200, 8192)
    assert long == pytest.approx(1e3 * prefill_flops(spec, 8192) / (H200.bf16_tflops * 1e12))
    assert prefill_floor_ms(spec, H200, 8192, fp8=True) < long
    short = prefill_floor_ms(spec, H200, 1)  # one token: bounded by reading the weights
    assert short == pytest.approx(decode_tpot_floor_ms(spec, H200))
