"""What vLLM takes from GPU memory besides weights and KV: peak activation, non-torch memory and the
CUDA-graph estimate — a structural model, scaled by calibration points measured on real runs.

Calibration points live in ``profiles/calibration/*.yaml`` (one file per device and vLLM version;
see docs/budget.md for the format). Each point keeps the vLLM version, the device, the model shape,
the settings and what vLLM *reported* (the "Actual usage is … GiB for weight, … for peak activation,
… for non-torch memory, and … for CUDAGraph memory" line, "Available KV cache memory", "GPU KV cache
size: N tokens"). Adding a GPU measurement is a data edit: paste the numbers, no code changes.

Without a matching point the model is used unscaled and the budget widens its safety margin; the
budget says which basis it used.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from tuner.budget.calibration_points import CalibrationPoint, load_points
from tuner.budget.gpu import GPUProfile
from tuner.budget.vllm_defaults import default_batch_limits
from tuner.budget.vllm_runner import speculative_tokens, subtracts_cudagraph_estimate, uses_v1_runner
from tuner.model.spec import ModelSpec
from tuner.units import GIB

# The model's coefficients, measured on the lent H200 with vLLM 0.26.0 (profiles/calibration/
# h200-vllm-0.26.yaml, six runs: Llama-3-8B x2, Qwen2.5-7B x2, Qwen1.5-MoE-A2.7B, tiny Llama):
# * peak activation = one vocab x hidden buffer (the LM-head size: 0.98 GiB for Llama-3-8B, 0.58 GiB for
#   the MoE, 2 MiB for the tiny model) + ~15.7 KB per batched token (0.12 GiB at 8192 tokens, 0.03 GiB at
#   2048, for every dense shape alike) + ~5 KB per token more for MoE layers' fused-expert buffers;
# * non-torch memory 0.22 GiB at TP=1 in every run;
# * CUDA graphs 0.05 GiB + per layer 0.0036 GiB + 0.0264 GiB x min(max_num_seqs x (1 + k), 512)/512, k the
#   speculative tokens per step (vLLM sizes decode graphs in tokens: max_num_seqs x uniform_decode_query_len);
#   0.98 GiB for 32 layers at 1024 seqs, 0.59 GiB at 256 seqs, 0.11 GiB for 2 layers. vLLM's own *estimate*
#   of it (what the V1 runner takes off the KV budget, tuner/budget/vllm_runner.py) is calibrated separately: on the
#   H200 it came to 0.46-0.61 x this model (0.23-0.37 GiB for 64 seqs, k = 1-5);
# * the CUDA context leaves 139.29 of 139.80 GiB free at startup (0.51 GiB).
# * with the V1 model runner (tuner/budget/vllm_runner.py) the profile run also warms the sampler up on
#   min(max_num_seqs, max_num_batched_tokens) rows of full-vocabulary logits (``_dummy_sampler_run``: fp32
#   logits, top-k/top-p sorting with int64 indices, softmax, cumulative sums), twice; the peak is the larger
#   of that and the forward pass. 512 rows of Llama-3-8B's 128,256 logits peaked at 1.95 GiB (32 B per
#   logit; the a30-w4a16 study's trial 4, ngram); at 64 rows the forward pass's 1.01 GiB stayed the peak.
# * weights on the GPU beyond their packed size: fp8 KV cache ~1 MiB per layer (0.03 GiB on Llama-3-8B and
#   Qwen2.5-7B alike, every fp8 point); compressed-tensors W4A16 (Marlin) 2.4 % of the 4-bit tensors (Llama-3-8B
#   asymmetric, group 128: 5.41 GiB reported for 5.34 GiB packed; one shape measured).
ACT_PER_TOKEN = 15_700
ACT_PER_TOKEN_MOE = 5_000
SAMPLER_BYTES_PER_LOGIT = 32
FP8_KV_BYTES_PER_LAYER = 1 << 20
W4_GPU_OVERHEAD = 0.024
DEFAULT_NON_TORCH_BYTES = int(0.22 * GIB)
DEFAULT_NON_TORCH_PER_EXTRA_RANK = int(1.4 * GIB)  # public log: "1.38 GiB for non-torch memory" at TP=2
CUDAGRAPH_BASE = int(0.05 * GIB)
CUDAGRAPH_PER_LAYER = (int(0.0036 * GIB), int(0.0264 * GIB))  # fixed, and x min(max_num_seqs, 512)/512
CUDA_CONTEXT_BYTES = int(0.51 * GIB)


@dataclass(frozen=True)
class Settings:
    """The engine settings the overheads depend on (vLLM defaults already resolved)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    tensor_parallel_size: int = 1
    enforce_eager: bool = False
    speculative_tokens: int = 0  # draft tokens per decode step (0: speculative decoding off)
    v1_runner: bool = False  # vLLM 0.26's V1 model runner (its profile run warms the sampler up)


@dataclass(frozen=True)
class Overheads:
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int  # the graph pool vLLM captures once the KV cache is allocated
    cudagraph_estimate_bytes: int  # vLLM's profiled estimate of it (subtracted from KV where vLLM does)
    margin_bytes: int  # what the prediction may be off by; feasibility keeps this much spare
    basis: str


def structural_activation_bytes(spec: ModelSpec, s: Settings) -> int:
    """Peak torch memory of vLLM's profile run (compiled, CUDA): one LM-head-sized buffer plus a few
    KB per batched token (more with MoE layers). Coefficients: see the module constants."""
    tp = max(1, s.tensor_parallel_size)
    vocab = -(-spec.vocab_size // 64) * 64
    per_token = ACT_PER_TOKEN + (ACT_PER_TOKEN_MOE if spec.moe is not None else 0)
    forward = vocab * spec.hidden_size * spec.dtype_bytes // tp + per_token * s.max_num_batched_tokens
    if not s.v1_runner:
        return forward
    sampler = SAMPLER_BYTES_PER_LOGIT * min(s.max_num_seqs, s.max_num_batched_tokens) * spec.vocab_size
    return max(forward, sampler)


def structural_cudagraph_bytes(spec: ModelSpec, s: Settings) -> int:
    """Memory the CUDA-graph pool takes after the KV cache is allocated (0 with enforce_eager)."""
    if s.enforce_eager:
        return 0
    fixed, per_seq = CUDAGRAPH_PER_LAYER
    decode_tokens = min(s.max_num_seqs * (1 + s.speculative_tokens), 512)
    return CUDAGRAPH_BASE + spec.num_layers * (fixed + per_seq * decode_tokens // 512)


def _default_non_torch(s: Settings) -> int:
    return DEFAULT_NON_TORCH_BYTES + DEFAULT_NON_TORCH_PER_EXTRA_RANK * (max(1, s.tensor_parallel_size) > 1)


def overheads(
    spec: ModelSpec,
    device: str,
    vllm_version: str,
    s: Settings,
    calibration: Sequence[CalibrationPoint] | None = None,
) -> Overheads:
    """Activation / non-torch / CUDA-graph bytes for one GPU. Calibration points of the same device and
    vLLM minor version scale each term to the largest ratio reported/model seen (the safe side); without
    them the unscaled model is used with a wider margin. The CUDA-graph estimate is scaled by the points
    that show it (see ``cudagraph_estimate_gib``); without such points it is taken as the graph pool.
    ``calibration``: the points to use (default: every stored point, ``load_points()``)."""
    act = structural_activation_bytes(spec, s)
    cg = structural_cudagraph_bytes(spec, s)
    nt = _default_non_torch(s)
    points = [
        p
        for p in (load_points() if calibration is None else calibration)
        if p.device == device and _same_minor(p.vllm_version, vllm_version) and "activation_gib" in p.reported
    ]
    if not points:
        margin = int(0.5 * act + 0.5 * GIB)
        basis = f"uncalibrated model (no {device} point for vLLM {vllm_version}; H200/0.26 coefficients)"
        return Overheads(act, nt, cg, cg, margin, basis)
    structural_cg = cg
    act_ratio, cg_ratio, est_ratio, nts = [], [], [], []
    for p in points:
        pspec = p.spec()
        ps = _settings_of(p, pspec)
        act_ratio.append(p.reported["activation_gib"] * GIB / max(1, structural_activation_bytes(pspec, ps)))
        if "cudagraph_gib" in p.reported and not ps.enforce_eager:
            cg_ratio.append(p.reported["cudagraph_gib"] * GIB / max(1, structural_cudagraph_bytes(pspec, ps)))
        if (estimate := cudagraph_estimate_gib(p)) is not None and not ps.enforce_eager:
            est_ratio.append(estimate * GIB / max(1, structural_cudagraph_bytes(pspec, ps)))
        if "non_torch_gib" in p.reported and ps.tensor_parallel_size == s.tensor_parallel_size:
            nts.append(p.reported["non_torch_gib"] * GIB)
    scale = max(max(act_ratio), 1.0)
    act = int(act * scale)
    cg = int(cg * max(cg_ratio + [1.0]))
    estimate = int(structural_cg * max(est_ratio)) if est_ratio else cg
    nt = int(max(nts)) if nts else nt
    margin = int(0.1 * act + 0.15 * GIB)
    basis = f"calibrated on {len(points)} {device} point(s), vLLM {vllm_version}"
    return Overheads(act, nt, cg, estimate, margin, basis)


def cudagraph_estimate_gib(p: CalibrationPoint) -> float | None:
    """The CUDA-graph estimate vLLM took off this point's KV budget: logged by 0.32 ("… GiB (estimated)"),
    else implied by the 0.26 figures (requested - weights - activation - non-torch - available KV, each
    rounded to 0.01 GiB) when its runner subtracts one (tuner/budget/vllm_runner.py); None when it does not."""
    r = p.reported
    if "cudagraph_estimate_gib" in r:
        return float(r["cudagraph_estimate_gib"])
    env = {str(k): str(v) for k, v in (p.settings.get("env") or {}).items()}
    keys = ("requested_gib", "weights_gib", "activation_gib", "non_torch_gib", "available_kv_gib")
    if any(k not in r for k in keys) or not subtracts_cudagraph_estimate(
        p.spec(), p.vllm_version, p.settings.get("speculative_method"), env
    ):
        return None
    return max(
        0.0, r["requested_gib"] - r["weights_gib"] - r["activation_gib"] - r["non_torch_gib"] - r["available_kv_gib"]
    )


def _same_minor(a: str, b: str) -> bool:
    return a.split(".")[:2] == b.split(".")[:2]


def _settings_of(p: CalibrationPoint, spec: ModelSpec) -> Settings:
    """The engine settings of a point; unset limits are vLLM's defaults for that device and version."""
    st = p.settings
    tp = int(st.get("tensor_parallel_size") or 1)
    seqs, batched = default_batch_limits(_device_profile(p.device), p.vllm_version, tp)
    env = {str(k): str(v) for k, v in (st.get("env") or {}).items()}
    return Settings(
        int(st.get("max_num_seqs") or seqs),
        int(st.get("max_num_batched_tokens") or batched),
        tp,
        bool(st.get("enforce_eager", False)),
        speculative_tokens(st.get("speculative_method"), st.get("num_speculative_tokens")),
        uses_v1_runner(spec, st.get("speculative_method"), env),
    )


@functools.lru_cache(maxsize=16)
def _device_profile(device: str) -> GPUProfile:
    """A point's GPU profile, read once (every budget estimate goes over every point)."""
    return GPUProfile.load(device)


def gpu_weight_bytes(spec: ModelSpec, kv_dtype: str) -> int:
    """What the weights take on a GPU: their packed size plus what vLLM adds at load (see the module
    constants: fp8 KV cache per layer, Marlin's 4-bit layers)."""
    extra = FP8_KV_BYTES_PER_LAYER * spec.num_layers if kv_dtype.startswith("fp8") else 0
    if spec.quant is not None and spec.quant.bits == 4:
        extra += int(W4_GPU_OVERHEAD * spec.quantized_weight_bytes)
    return spec.weight_bytes + extra
