"""Which vLLM model runner a configuration gets, and so whether vLLM takes its CUDA-graph estimate off the KV
budget.

vLLM 0.26.0 (``v1/worker/gpu_worker.py::determine_available_memory``) subtracts
``model_runner.profile_cudagraph_memory()`` from the KV budget unless VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0.
The V1 runner (``v1/worker/gpu_model_runner.py``) really profiles the graphs ("Profiling CUDA graph memory",
"Estimated CUDA graph memory: X GiB total"); the V2 runner (``v1/worker/gpu/model_runner.py``) returns 0 — so
with V2, the default for dense models, nothing is subtracted, and with V1 the estimate is. 0.32 profiles in both
runners. ``VllmConfig.use_v2_model_runner`` (0.26.0) picks V1 for: VLLM_USE_V2_MODEL_RUNNER=0; MoE models
outside DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES; and features V2 lacks — for what slotune launches, speculative
methods other than eagle/eagle3/mtp/dflash/dspark (ngram and draft_model). Measured on the H200: ngram trials
lost 0.23-0.37 GiB of KV cache this way (profiles/calibration/h200-vllm-0.26.yaml).
"""

from __future__ import annotations

from collections.abc import Mapping

from launch.command import SPEC_METHODS
from launch.config import speculation_on
from tuner.model.spec import ModelSpec

# DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES of vLLM 0.26.0 (vllm/config/vllm.py), as model_type: the MoE models
# that keep the V2 runner. (InklingFor* and LongcatFlashNgramForCausalLM too; slotune does not parse them.)
V2_MOE_MODEL_TYPES = frozenset({"deepseek_v2", "granitemoe", "qwen2_moe"})
# speculative methods the 0.26.0 V2 runner supports (_get_v2_model_runner_unsupported_features)
V2_SPECULATIVE_METHODS = frozenset({"eagle", "eagle3", "mtp", "dflash", "dspark"})


def speculative_tokens(method: str | None, num_tokens: int | None) -> int:
    """Draft tokens per decode step (0 with speculative decoding off)."""
    return int(num_tokens or 0) if speculation_on(method) else 0


def uses_v1_runner(spec: ModelSpec, speculative_method: str | None, environ: Mapping[str, str]) -> bool:
    """Whether vLLM 0.26 runs this model with the V1 GPU model runner (else V2)."""
    forced = environ.get("VLLM_USE_V2_MODEL_RUNNER")
    if forced not in (None, ""):
        return not bool(int(forced))
    if spec.moe is not None and spec.model_type not in V2_MOE_MODEL_TYPES:
        return True
    if not speculation_on(speculative_method):
        return False
    return SPEC_METHODS.get(speculative_method, speculative_method) not in V2_SPECULATIVE_METHODS


def subtracts_cudagraph_estimate(
    spec: ModelSpec, vllm_version: str, speculative_method: str | None, environ: Mapping[str, str]
) -> bool:
    """Whether vLLM takes its CUDA-graph memory estimate off the KV budget (enforce_eager: the estimate is 0)."""
    if environ.get("VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS", "1") == "0":
        return False
    return at_least(vllm_version, "0.32") or uses_v1_runner(spec, speculative_method, environ)


def at_least(version: str, floor: str) -> bool:
    """Whether vLLM ``version`` is ``floor`` (major.minor) or later."""

    def key(v: str) -> tuple[int, ...]:
        return tuple(int(x) for x in v.split("+")[0].split(".")[:2] if x.isdigit())

    return key(version) >= key(floor)
