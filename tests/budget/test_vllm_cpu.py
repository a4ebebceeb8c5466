"""Real vLLM-CPU: the KV tokens it reports equal the prediction, and a configuration the budget rejects
really fails to start. Two server starts (~1-2 min each on the 2-core machine, serialised by a lock)."""

from __future__ import annotations

import pytest

from bench.budget_vllm_cpu import start_and_read
from launch.config import ServeConfig
from tuner.budget import estimate_budget
from tuner.gpu import GPUProfile
from tuner.model_spec import ModelSpec
from tuner.vllm_defaults import installed_vllm_version

pytestmark = pytest.mark.vllm
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


@pytest.fixture(scope="module")
def qwen3_tiny(tmp_path_factory):
    pytest.importorskip("torch")
    from tuner.synthetic import write_model

    return write_model(
        tmp_path_factory.mktemp("budget-models") / "qwen3-tiny", "qwen3-tiny", max_position_embeddings=4_000_000
    )


def _budget(model, max_model_len: int):
    spec = ModelSpec.from_dir(model)
    config = ServeConfig(model=str(model), max_model_len=max_model_len)
    return estimate_budget(spec, GPUProfile.load("cpu"), config, vllm_version=installed_vllm_version(), env=ENV)


def test_reported_kv_tokens_equal_the_prediction(vllm_python, qwen3_tiny, tmp_path) -> None:
    budget = _budget(qwen3_tiny, 1000)  # not a multiple of the 128-token block
    assert budget.feasible
    result = start_and_read(qwen3_tiny, ["--max-model-len", "1000"], ENV, tmp_path, python=vllm_python)
    assert result.started, result.error
    assert result.kv_tokens == budget.kv_tokens


def test_a_rejected_length_really_fails_to_start(vllm_python, qwen3_tiny, tmp_path) -> None:
    fit = _budget(qwen3_tiny, 1000).max_model_len_fit
    too_long = fit + 128
    budget = _budget(qwen3_tiny, too_long)
    assert not budget.feasible and "largest max_model_len that fits" in budget.reasons[0]
    result = start_and_read(qwen3_tiny, ["--max-model-len", str(too_long)], ENV, tmp_path, python=vllm_python)
    assert not result.started
    assert "KV cache" in result.error or "memory" in result.error
