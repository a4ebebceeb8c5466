"""tuner.trial.kv_pin: the KV cache a configuration is certified and deployed with is the trial server's blocks.
On the H200 (A30 memory emulated) two starts of one configuration got 52,768 and 65,344 KV tokens: the soak on the
larger held 70.3 req/s, and `vllm bench serve` on a launch with the smaller missed the same rate."""

from __future__ import annotations

import json

from configs import LLAMA_3_8B

from launch.config import ServeConfig
from launch.readback import ReadBack
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import estimate_budget
from tuner.model.spec import ModelSpec
from tuner.trial.kv_pin import kv_bytes_of, kv_mismatch, pin_note, pinned

SPEC = ModelSpec.from_config(LLAMA_3_8B)
MIB = 1024 * 1024
# what run c's trial 2 read back (results/h200-llama-3-8b-a30-predict-2026-12-03-c): fp8, 16-token blocks
TRIAL_2 = ReadBack(kv_cache_size_tokens=52768, num_gpu_blocks=3298, block_size=16, cache_dtype="fp8")
FP8 = ServeConfig(model="/m", gpu_memory_utilization=0.81, max_model_len=1280, max_num_seqs=512, kv_cache_dtype="fp8")


def test_the_pinned_bytes_are_the_blocks_the_trial_had() -> None:
    # 32 layers x 2 (K, V) x 8 KV heads x 128 dims x 1 byte (fp8) x 16 tokens = 1 MiB a block
    assert kv_bytes_of(FP8, TRIAL_2, SPEC) == 3298 * MIB
    auto = ReadBack(kv_cache_size_tokens=48160, num_gpu_blocks=3010, block_size=16, cache_dtype="auto")
    assert kv_bytes_of(ServeConfig(model="/m"), auto, SPEC) == 3010 * 2 * MIB  # bf16: 2 bytes a value


def test_vllm_pages_the_pinned_bytes_into_exactly_those_blocks() -> None:
    # the budget's forward model (num_blocks = bytes // bytes per block, exact on 34 H200 points) gives them back
    config = pinned(FP8, TRIAL_2, SPEC, is_cpu=False)
    budget = estimate_budget(SPEC, GPUProfile.load("a30"), config, vllm_version="0.26.0", env={})
    assert budget.num_blocks == 3298 and budget.basis.startswith("exact: kv_cache_memory_bytes")


def test_nothing_is_pinned_on_the_cpu_without_a_readback_or_over_a_value_set() -> None:
    assert pinned(FP8, TRIAL_2, SPEC, is_cpu=True) is FP8  # VLLM_CPU_KVCACHE_SPACE fixes it there
    assert pinned(FP8, None, SPEC, is_cpu=False) is FP8  # the server never started
    assert pinned(FP8, ReadBack(kv_cache_size_tokens=52768), SPEC, is_cpu=False) is FP8  # no blocks reported
    preset = ServeConfig(model="/m", kv_cache_memory_bytes=4 * 1024 * MIB)
    assert pinned(preset, TRIAL_2, SPEC, is_cpu=False) is preset


def test_the_note_says_what_was_pinned_and_why() -> None:
    after = pinned(FP8, TRIAL_2, SPEC, is_cpu=False)
    note = pin_note(FP8, after, TRIAL_2)
    assert (
        note is not None and "52,768 tokens, 3,298 blocks" in note and f"--kv-cache-memory-bytes {3298 * MIB}" in note
    )
    assert pin_note(FP8, FP8, TRIAL_2) is None


def test_best_json_states_the_deployed_config_beside_the_searched_one(tmp_path) -> None:
    from tuner.document.study import StudyDocument
    from tuner.report.outputs import write_outputs
    from tuner.report.report_html import write_report
    from tuner.trial.result import TrialResult

    base = TrialResult(0, "COMPLETE", True, ServeConfig(model="/m"), slo_met=True, goodput_req_s=50.0, best_rate=60.0)
    best = TrialResult(2, "COMPLETE", False, FP8, slo_met=True, goodput_req_s=60.0, best_rate=70.0, readback=TRIAL_2)
    scripts: list[TrialResult] = []
    meta = {
        "created": "2026-12-03T07:00:00+00:00", "slo": "ttft_p95=2s", "workload": "chat", "notes": [],
        "gpu": {"profile": "a30", "emulated_on": None, "emulation": None},
        "model": {"path": "/m", "fingerprint": "f"}, "vllm": {"version": "0.26.0", "python": "python3"},
    }  # fmt: skip
    write_outputs(tmp_path, [base, best], meta, lambda _p, b, _h: scripts.append(b), write_report,
                  deploy=lambda r: pinned(r.config, r.readback, SPEC, is_cpu=False))  # fmt: skip
    doc = json.loads((tmp_path / "best.json").read_text())
    assert doc["best"]["config"]["kv_cache_memory_bytes"] is None  # what the trial searched
    assert doc["best"]["deployed"]["kv_cache_memory_bytes"] == 3298 * MIB
    assert doc["baseline"]["deployed"]["kv_cache_memory_bytes"] is None  # no blocks read back
    parsed = StudyDocument.from_json(tmp_path / "best.json").best  # what the exports read (tuner.export.study)
    assert parsed is not None and parsed.deployed is not None and parsed.deployed.kv_cache_memory_bytes == 3298 * MIB


def test_a_certifying_server_with_another_kv_cache_is_said() -> None:
    # run c's certification: 65,344 tokens against the trial's 52,768 (before the pin)
    line = kv_mismatch(52768, [65344, 65344])
    assert line is not None and "65,344 KV tokens, the trial's 52,768" in line
    assert kv_mismatch(52768, [52768, None]) is None and kv_mismatch(None, [65344]) is None
