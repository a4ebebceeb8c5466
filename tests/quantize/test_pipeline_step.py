"""`tune … --quantize awq`: quantization is the pipeline's first step and its output becomes a knob."""

import json

import optuna
import pytest

from tests.quantize.conftest import SAMPLES, needs_4bit_kernel
from tuner.inputs import load_inputs
from tuner.quantize_step import maybe_quantize
from tuner.search.space import suggest_config
from tuner.settings.tune_settings import resolve
from tuner.tune_setup import base_config, space_context

pytestmark = [pytest.mark.quantize, pytest.mark.long, pytest.mark.vllm]


def test_quantize_first_then_search_both_variants(
    quant_python, tiny_model, vllm_python, tmp_path, monkeypatch, cpu_kernels
):
    needs_4bit_kernel(cpu_kernels)  # the pipeline refuses to quantize for a vLLM-CPU without 4-bit kernels
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")
    settings = resolve(
        {},
        {
            "model": str(tiny_model),
            "gpu": "cpu",
            "slo": "ttft_p95=2s",
            "quantize": "awq",
            "quantize_python": quant_python,
            "quantize_samples": SAMPLES,  # the pipeline passes it on (128 by default: minutes on 2 cores)
            "out": str(tmp_path / "study"),
            "vllm_python": vllm_python,
        },
    )
    inputs = load_inputs(settings)
    qdir = maybe_quantize(settings, inputs)
    assert qdir is not None and qdir.startswith(str(tmp_path / "study"))
    cfg = (tmp_path / "study" / "quantized" / "config.json").read_text()
    assert "compressed-tensors" in cfg and "pack-quantized" in cfg
    manifest = json.loads((tmp_path / "study" / "quantized" / "slotune-quantize.json").read_text())
    assert manifest["samples"] == SAMPLES
    ctx = space_context(inputs, base_config(inputs), qdir)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    models = {suggest_config(study.ask(), ctx).model for _ in range(12)}
    assert models == {str(inputs.model_dir), qdir}
    # a second run of the same model reuses the quantized output (the cache is keyed by the fingerprint)
    assert maybe_quantize(settings, inputs) == qdir
