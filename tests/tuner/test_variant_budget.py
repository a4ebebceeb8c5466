"""A trial of the quantized variant is budgeted with the variant's own shape, not the 16-bit model's."""

from __future__ import annotations

from launch.config import ServeConfig
from tuner.budget.gpu import GPUProfile
from tuner.model.spec import ModelSpec
from tuner.synthetic import write_model
from tuner.trial.context import TrialContext, spec_of
from tuner.trial.runner import run_trial


def _ctx(spec: ModelSpec) -> TrialContext:
    return TrialContext(
        spec=spec,
        gpu=GPUProfile.load("a30"),
        slos=(),
        workload=None,
        plan=None,
        python="py",
        log_dir=None,
        vllm_version="0.26.0",
    )


def test_the_variant_trial_gets_the_variants_kv_budget(tmp_path):
    full = write_model(tmp_path / "llama-3-8b", "llama-3-8b", weights=False)
    q4 = write_model(tmp_path / "llama-3-8b-w4a16", "llama-3-8b", weights=False, w4a16=True)
    ctx = _ctx(ModelSpec.from_dir(full))
    assert spec_of(ServeConfig(model=str(full)), ctx) is ctx.spec
    assert spec_of(ServeConfig(model=str(tmp_path / "." / "llama-3-8b")), ctx) is ctx.spec
    assert spec_of(ServeConfig(model=str(q4)), ctx).quant is not None
    # max_model_len past the model's maximum: PRUNED before any launch, with the budget it was judged by
    knobs = {"max_model_len": 1_000_000, "gpu_memory_utilization": 0.9}
    r16 = run_trial(1, ServeConfig(model=str(full), **knobs), False, ctx)
    r4 = run_trial(2, ServeConfig(model=str(q4), **knobs), False, ctx)
    assert r16.state == r4.state == "PRUNED"
    # Llama-3-8B on an A30 at gmu 0.9: ~15 GiB of 16-bit weights leave ~43k KV tokens, 5.3 GiB of 4-bit ~122k
    kv16, kv4 = r16.budget.kv_tokens, r4.budget.kv_tokens
    assert 35_000 < kv16 < 50_000
    assert 110_000 < kv4 < 135_000
