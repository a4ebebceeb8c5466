"""The CUDA-graph estimate vLLM takes off the KV budget: which runner does it (tuner/budget/vllm_runner.py), how the
budget applies it, and that the stored H200 points agree with both. The calibration's predictions are
judged on points it was not fitted on: each study's points against a calibration of the other studies."""

from __future__ import annotations

import re

import pytest
from configs import LLAMA_3_8B, MIXTRAL_8X7B, QWEN1_5_MOE_A2_7B

from launch.config import ServeConfig
from tuner.budget.calibration import Settings, structural_activation_bytes, structural_cudagraph_bytes
from tuner.budget.calibration_points import load_points
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import estimate_budget
from tuner.budget.vllm_runner import subtracts_cudagraph_estimate, uses_v1_runner
from tuner.model.spec import ModelSpec

H200 = GPUProfile.load("h200")
LLAMA = ModelSpec.from_config(LLAMA_3_8B)
ROUNDING_GIB = 5 * 0.005  # five figures of the log, each rounded to 0.01 GiB


def cfg(**kw) -> ServeConfig:
    return ServeConfig(
        model="m", gpu_memory_utilization=0.9, max_model_len=1280, max_num_seqs=64, max_num_batched_tokens=2048, **kw
    )


def test_0_26_v1_runner_takes_the_cudagraph_estimate_off_the_kv_cache() -> None:
    plain = estimate_budget(LLAMA, H200, cfg(), vllm_version="0.26.0", env={})
    ngram = estimate_budget(
        LLAMA, H200, cfg(speculative_method="ngram", num_speculative_tokens=4), vllm_version="0.26.0", env={}
    )
    assert plain.cudagraph_subtracted_bytes == 0
    assert 0 < ngram.cudagraph_subtracted_bytes <= ngram.cudagraph_bytes
    assert ngram.kv_cache_bytes == plain.kv_cache_bytes - ngram.cudagraph_subtracted_bytes
    eagle = estimate_budget(
        LLAMA,
        H200,
        cfg(speculative_method="eagle", num_speculative_tokens=4, speculative_model="/d"),
        vllm_version="0.26.0",
        env={},
    )
    assert eagle.cudagraph_subtracted_bytes == 0  # the V2 runner supports EAGLE
    for env in ({"VLLM_USE_V2_MODEL_RUNNER": "1"}, {"VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS": "0"}):
        forced = estimate_budget(
            LLAMA, H200, cfg(speculative_method="ngram", num_speculative_tokens=4), vllm_version="0.26.0", env=env
        )
        assert forced.kv_cache_bytes == plain.kv_cache_bytes


def test_runner_choice_follows_vllm_0_26() -> None:
    assert not uses_v1_runner(LLAMA, None, {}) and not uses_v1_runner(LLAMA, "off", {})
    assert uses_v1_runner(LLAMA, "ngram", {}) and uses_v1_runner(LLAMA, "draft", {})
    assert not uses_v1_runner(LLAMA, "eagle", {}) and not uses_v1_runner(LLAMA, "mtp", {})
    assert uses_v1_runner(LLAMA, None, {"VLLM_USE_V2_MODEL_RUNNER": "0"})
    assert uses_v1_runner(ModelSpec.from_config(MIXTRAL_8X7B), None, {})  # MoE outside vLLM's V2 list
    assert not uses_v1_runner(ModelSpec.from_config(QWEN1_5_MOE_A2_7B), None, {})  # on the list
    assert subtracts_cudagraph_estimate(LLAMA, "0.32.0", None, {})  # 0.32 profiles in both runners


def test_decode_graphs_are_sized_in_tokens() -> None:
    # vLLM captures decode graphs up to max_num_seqs x (1 + speculative tokens) tokens
    assert structural_cudagraph_bytes(LLAMA, Settings(64, 2048, speculative_tokens=4)) == structural_cudagraph_bytes(
        LLAMA, Settings(320, 2048)
    )
    assert structural_cudagraph_bytes(LLAMA, Settings(512, 2048, speculative_tokens=4)) == structural_cudagraph_bytes(
        LLAMA, Settings(512, 2048)
    )


def _gpu_points_with_figures() -> list:
    keys = ("requested_gib", "weights_gib", "activation_gib", "non_torch_gib", "available_kv_gib")
    return [p for p in load_points() if p.device != "cpu" and all(k in p.reported for k in keys)]


def test_stored_points_show_the_estimate_exactly_where_the_runner_rule_says() -> None:
    points = _gpu_points_with_figures()
    assert any(p.settings.get("speculative_method") == "ngram" for p in points)
    for p in points:
        r = p.reported
        missing = (
            r["requested_gib"] - r["weights_gib"] - r["activation_gib"] - r["non_torch_gib"] - r["available_kv_gib"]
        )
        env = {str(k): str(v) for k, v in (p.settings.get("env") or {}).items()}
        if subtracts_cudagraph_estimate(p.spec(), p.vllm_version, p.settings.get("speculative_method"), env):
            assert missing > ROUNDING_GIB, p.origin
        else:
            assert abs(missing) <= ROUNDING_GIB + 1e-9, p.origin


def _point_id(p) -> str:
    return p.origin.rsplit("/", 1)[-1].replace(": ", " ")


def _study(p) -> str:
    """The run a point comes from: a study under results/, else its source up to the first comma."""
    m = re.search(r"results/([\w.-]+)", p.source)
    return m.group(1) if m else p.source.split(",")[0].split("(")[0].strip()


def _held_out_error(point) -> float:
    """KV tokens predicted for ``point`` by a calibration that never saw its study, relative to vLLM's."""
    others = [q for q in load_points() if _study(q) != _study(point)]
    knobs = {k: v for k, v in point.settings.items() if k in ServeConfig.__dataclass_fields__ and k != "env"}
    b = estimate_budget(
        point.spec(),
        GPUProfile.load(point.device),
        ServeConfig(model="m", **knobs),
        vllm_version=point.vllm_version,
        env={},
        calibration=others,
    )
    return b.kv_tokens / point.reported["kv_tokens"] - 1


def test_points_come_from_several_studies() -> None:
    studies = {_study(p) for p in _gpu_points_with_figures()}
    assert len(studies) >= 4, studies  # else holding one out leaves too little to calibrate on


@pytest.mark.parametrize("point", _gpu_points_with_figures(), ids=_point_id)
def test_calibrated_budget_does_not_promise_more_kv_than_vllm_reported(point) -> None:
    # each point predicted from the other studies' points only: the calibration is tested on data it was not
    # fitted on. Promising more KV cache than vLLM gives is the unsafe side (before the V1-runner estimate was
    # modelled, the ngram points were over-promised by 0.3-7 %); under-promising by the activation margin is
    # allowed. Measured held out (2026-12-01): at most +0.06 % over (the issue-#5 runs)
    assert _held_out_error(point) <= 0.001


def test_stored_points_are_predicted_closely_not_only_safely() -> None:
    # the safe side alone is not enough: one point's activation far off the model (a V1-runner sampler warm-up
    # at 512 sequences, 1.95 GiB) once scaled every prediction down by up to 31 % through the calibration's
    # largest-ratio rule. Held out by study (2026-12-01): worst -5.9 % (a30-w4a16 trial 4), mean |error| 0.8 %
    errors = [_held_out_error(p) for p in _gpu_points_with_figures()]
    assert min(errors) > -0.07
    assert sum(abs(e) for e in errors) / len(errors) < 0.015


def test_v1_runner_sampler_warmup_can_set_the_activation_peak() -> None:
    gib = 1 << 30
    # measured (H200, vLLM 0.26, Llama-3-8B, ngram k=4, 512 sequences, 2048 batched tokens): 1.95 GiB
    v1 = structural_activation_bytes(LLAMA, Settings(512, 2048, speculative_tokens=4, v1_runner=True))
    assert 1.90 < v1 / gib < 2.00
    # at 64 sequences the forward pass stays the peak (1.01 GiB measured, V1 and V2 alike)
    assert (
        structural_activation_bytes(LLAMA, Settings(64, 2048, v1_runner=True))
        == structural_activation_bytes(LLAMA, Settings(64, 2048))
        < 1.05 * gib
    )
    assert structural_activation_bytes(LLAMA, Settings(512, 2048)) < 1.05 * gib  # V2: no sampler warm-up peak


def test_gpu_weights_include_what_vllm_adds_at_load() -> None:
    from tuner.budget.calibration import gpu_weight_bytes
    from tuner.synthetic import shape_config, w4a16_quantization_config

    gib = 1 << 30
    # reported on the H200 (vLLM 0.26): 14.96 GiB (16-bit KV), 14.99 (fp8 KV); the W4A16 variant 5.41 / 5.44
    assert abs(gpu_weight_bytes(LLAMA, "auto") / gib - 14.96) < 0.005
    assert abs(gpu_weight_bytes(LLAMA, "fp8") / gib - 14.99) < 0.005
    q4 = ModelSpec.from_config(
        {**shape_config("llama-3-8b"), "quantization_config": w4a16_quantization_config(shape_config("llama-3-8b"))}
    )
    assert abs(gpu_weight_bytes(q4, "auto") / gib - 5.41) < 0.01
    assert abs(gpu_weight_bytes(q4, "fp8") / gib - 5.44) < 0.01
