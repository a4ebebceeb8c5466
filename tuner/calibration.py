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

import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.errors import ProfileError
from tuner.model_spec import ModelSpec

GIB = 1 << 30
ROOT = Path(__file__).resolve().parent.parent / "profiles" / "calibration"

# Uncalibrated defaults, each from a public vLLM startup log (sources in docs/budget.md):
# non-torch 0.02–0.26 GiB at TP=1 (Llama-8B-class on H100/RTX PRO 6000) -> 0.3 GiB upper bound;
# CUDA graphs "Estimated CUDA graph memory: 0.84 GiB" for Llama-3.1-8B (32 layers) -> per layer.
DEFAULT_NON_TORCH_BYTES = int(0.3 * GIB)
DEFAULT_NON_TORCH_PER_EXTRA_RANK = int(1.4 * GIB)  # "1.38 GiB for non-torch memory" at TP=2 (NCCL)
DEFAULT_CUDAGRAPH_PER_LAYER = int(0.84 * GIB / 32)
CUDA_CONTEXT_BYTES = int(0.6 * GIB)  # H200 here: 139.21 of 139.80 GiB free at startup (public log)


@dataclass(frozen=True)
class Settings:
    """The engine settings the overheads depend on (vLLM defaults already resolved)."""

    max_num_seqs: int
    max_num_batched_tokens: int
    tensor_parallel_size: int = 1
    enforce_eager: bool = False


@dataclass(frozen=True)
class Overheads:
    activation_bytes: int
    non_torch_bytes: int
    cudagraph_bytes: int
    margin_bytes: int  # what the prediction may be off by; feasibility keeps this much spare
    basis: str


@dataclass(frozen=True)
class CalibrationPoint:
    vllm_version: str
    device: str
    shape: dict[str, Any]  # config.json keys (enough for ModelSpec.from_config)
    settings: dict[str, Any]
    reported: dict[str, float]  # weights_gib, activation_gib, non_torch_gib, cudagraph_gib, kv_tokens, …
    source: str = ""
    origin: str = field(default="", compare=False)

    def spec(self) -> ModelSpec:
        return ModelSpec.from_config(self.shape, source=f"{self.origin} ({self.source})")


def structural_activation_bytes(spec: ModelSpec, s: Settings) -> int:
    """Peak torch memory of vLLM's profile run: one forward over ``max_num_batched_tokens`` tokens
    (residual + hidden, then the widest of attention projections or the MLP intermediates) plus the
    fp32 logits of ``min(max_num_seqs, max_num_batched_tokens)`` sampled rows."""
    t, b, h = s.max_num_batched_tokens, spec.dtype_bytes, spec.hidden_size
    tp = max(1, s.tensor_parallel_size)
    if spec.mla is not None:
        m = spec.mla
        attn = spec.num_heads * (m.qk_nope_head_dim + m.qk_rope_head_dim + m.v_head_dim) // tp
    else:
        attn = (2 * spec.num_heads + 2 * spec.num_kv_heads) * spec.head_dim // tp
    mlp = 3 * spec.intermediate_size // tp
    if spec.moe is not None:
        moe = spec.moe
        mlp = max(mlp, moe.experts_per_token * (3 * moe.expert_intermediate_size // tp + h)
                  + 3 * moe.shared_intermediate_size // tp)
    forward = t * b * (2 * h + max(attn, mlp))
    rows = min(s.max_num_seqs, t)
    logits = rows * spec.vocab_size * 4
    return forward + logits


def structural_cudagraph_bytes(spec: ModelSpec, s: Settings) -> int:
    return 0 if s.enforce_eager else DEFAULT_CUDAGRAPH_PER_LAYER * spec.num_layers


def _default_non_torch(s: Settings) -> int:
    return DEFAULT_NON_TORCH_BYTES + DEFAULT_NON_TORCH_PER_EXTRA_RANK * (max(1, s.tensor_parallel_size) > 1)


def overheads(spec: ModelSpec, device: str, vllm_version: str, s: Settings) -> Overheads:
    """Activation / non-torch / CUDA-graph bytes for one GPU, scaled by calibration when available."""
    act = structural_activation_bytes(spec, s)
    cg = structural_cudagraph_bytes(spec, s)
    nt = _default_non_torch(s)
    points = [p for p in load_points() if p.device == device and _same_minor(p.vllm_version, vllm_version)
              and "activation_gib" in p.reported]
    if not points:
        margin = int(0.5 * (act + cg) + 0.5 * GIB)
        basis = f"uncalibrated model (no {device} point for vLLM {vllm_version})"
        return Overheads(act, nt, cg, margin, basis)
    ratios, nts, cg_ratios = [], [], []
    for p in points:
        ps = _settings_of(p, s)
        pspec = p.spec()
        ratios.append(p.reported["activation_gib"] * GIB / max(1, structural_activation_bytes(pspec, ps)))
        if "non_torch_gib" in p.reported:
            nts.append(p.reported["non_torch_gib"] * GIB)
        if "cudagraph_estimate_gib" in p.reported and not ps.enforce_eager:
            cg_ratios.append(p.reported["cudagraph_estimate_gib"] * GIB
                             / max(1, structural_cudagraph_bytes(pspec, ps)))
    scale = max(ratios)  # the conservative end of what was seen
    act = int(act * scale)
    if nts:
        nt = int(max(nts)) if max(1, s.tensor_parallel_size) == 1 else nt
    if cg_ratios:
        cg = int(cg * max(cg_ratios))
    spread = (max(ratios) - min(ratios)) / max(ratios) if len(ratios) > 1 else 0.25
    margin = int(max(spread, 0.1) * (act + cg) + 0.25 * GIB)
    basis = f"calibrated on {len(points)} {device} point(s), vLLM {vllm_version} (activation x{scale:.2f})"
    return Overheads(act, nt, cg, margin, basis)


def _same_minor(a: str, b: str) -> bool:
    return a.split(".")[:2] == b.split(".")[:2]


def _settings_of(p: CalibrationPoint, fallback: Settings) -> Settings:
    st = p.settings
    return Settings(int(st.get("max_num_seqs", fallback.max_num_seqs)),
                    int(st.get("max_num_batched_tokens", fallback.max_num_batched_tokens)),
                    int(st.get("tensor_parallel_size", 1)), bool(st.get("enforce_eager", False)))


def load_points(root: Path = ROOT) -> list[CalibrationPoint]:
    """Every calibration point under ``profiles/calibration``; a malformed file is a ProfileError."""
    import yaml

    points: list[CalibrationPoint] = []
    for path in sorted(root.glob("*.yaml")):
        data = yaml.safe_load(path.read_text()) or {}
        for i, raw in enumerate(data.get("points") or []):
            where = f"{path}: points[{i}]"
            for key in ("vllm_version", "device", "shape", "settings", "reported"):
                if key not in raw and key not in data:
                    raise ProfileError(f"{where}: field '{key}' is missing; see docs/budget.md for the "
                                       "format")
            points.append(CalibrationPoint(
                vllm_version=str(raw.get("vllm_version", data.get("vllm_version"))),
                device=str(raw.get("device", data.get("device"))), shape=dict(raw["shape"]),
                settings=dict(raw["settings"]), reported=dict(raw["reported"]),
                source=str(raw.get("source", "")), origin=where))
    return points


_LOG_PATTERNS = {
    "weights_gib": r"Actual usage is ([\d.]+) GiB for weight",
    "activation_gib": r"([\d.]+) GiB for peak activation",
    "non_torch_gib": r"([\d.]+) GiB for non-torch memory",
    "cudagraph_gib": r"([\d.]+) GiB for CUDAGraph memory",
    "cudagraph_estimate_gib": r"CUDA graph pool memory: [\d.]+ GiB \(actual\), ([\d.]+) GiB \(estimated\)",
    "available_kv_gib": r"Available KV cache memory: ([\d.]+) GiB",
    "kv_tokens": r"(?:GPU|CPU) KV cache size: ([\d,]+) tokens",
    "requested_gib": r"Desired GPU memory utilization is \([\d.]+, ([\d.]+) GiB\)",
    "total_gib": r"Free memory on device \([\d.]+/([\d.]+) GiB\)",
}


def parse_log(text: str) -> dict[str, float]:
    """The budget figures a vLLM startup log states (what a calibration point's ``reported`` holds)."""
    out: dict[str, float] = {}
    for key, pattern in _LOG_PATTERNS.items():
        m = re.search(pattern, text)
        if m:
            out[key] = float(m.group(1).replace(",", ""))
    return out


def median_or(values: list[float], default: float) -> float:
    return statistics.median(values) if values else default
