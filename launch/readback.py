"""Read back what vLLM decided: KV cache size and the memory budget it worked out at startup.

Two sources, both as vLLM prints them (checked against 0.26, 0.32 and 0.33 source):
- ``/metrics``: ``vllm:cache_config_info{num_gpu_blocks="8192",kv_cache_size_tokens="1048576",
  block_size="128",cache_dtype="auto",kv_cache_memory_bytes="1073741824",
  kv_cache_max_concurrency="256.0",...} 1.0`` (one series per engine).
- the startup log (GPU): "Model loading took X GiB memory", "Available KV cache memory: X GiB",
  "Actual usage is X GiB for weight, Y GiB for peak activation, Z GiB for non-torch memory, and
  W GiB for CUDAGraph memory", "GPU KV cache size: N tokens", "Maximum concurrency for L tokens
  per request: C x"; (CPU) "Explicitly set (X/Y) GiB for KV cache" or "Auto set (X/Y) GiB ...",
  "CPU KV cache size: N tokens, Maximum concurrency ...".
Metrics win over the log where both report a value. Absent values stay None.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

_NUM = r"([0-9][0-9,]*(?:\.[0-9]+)?)"


@dataclass(frozen=True)
class ReadBack:
    kv_cache_size_tokens: int | None = None
    num_gpu_blocks: int | None = None
    block_size: int | None = None
    cache_dtype: str | None = None
    kv_cache_memory_bytes: int | None = None
    weights_gib: float | None = None
    peak_activation_gib: float | None = None
    non_torch_gib: float | None = None
    cudagraph_gib: float | None = None
    available_kv_gib: float | None = None
    max_concurrency: float | None = None
    max_model_len: int | None = None  # the context length vLLM settled on ("Using max model len N")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ReadBack:
        """A stored read-back back; a value an older version did not read stays None."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def merged(self, other: ReadBack) -> ReadBack:
        """``self`` with its None fields filled from ``other``."""
        return replace(self, **{f.name: getattr(other, f.name) for f in fields(self) if getattr(self, f.name) is None})


def _int(s: str | None) -> int | None:
    if s is None or s in ("None", ""):
        return None
    try:
        return int(float(s.replace(",", "")))
    except ValueError:
        return None


def _float(s: str | None) -> float | None:
    if s is None or s in ("None", ""):
        return None
    try:
        return float(s.replace(",", ""))
    except ValueError:
        return None


def parse_cache_config_info(metrics_text: str) -> ReadBack:
    """The first ``vllm:cache_config_info`` series of a Prometheus /metrics page."""
    for line in metrics_text.splitlines():
        if not line.startswith("vllm:cache_config_info{"):
            continue
        labels = dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', line))
        return ReadBack(
            kv_cache_size_tokens=_int(labels.get("kv_cache_size_tokens")),
            num_gpu_blocks=_int(labels.get("num_gpu_blocks")),
            block_size=_int(labels.get("block_size")),
            cache_dtype=labels.get("cache_dtype") or None,
            kv_cache_memory_bytes=_int(labels.get("kv_cache_memory_bytes")),
            max_concurrency=_float(labels.get("kv_cache_max_concurrency")),
        )
    return ReadBack()


_LOG_PATTERNS: dict[str, re.Pattern[str]] = {
    "weights_gib": re.compile(rf"Actual usage is {_NUM} GiB for weight"),
    "peak_activation_gib": re.compile(rf"{_NUM} GiB for peak activation"),
    "non_torch_gib": re.compile(rf"{_NUM} GiB for non-torch memory"),
    "cudagraph_gib": re.compile(rf"{_NUM} GiB for CUDAGraph memory"),
    "available_kv_gib": re.compile(rf"Available KV cache memory: {_NUM} GiB"),
    "kv_cache_size_tokens": re.compile(rf"KV cache size: {_NUM} tokens"),
    "max_concurrency": re.compile(rf"Maximum concurrency for {_NUM} tokens per request: {_NUM}x"),
    "max_model_len": re.compile(rf"Using max model len {_NUM}"),
}
_MODEL_LOADING = re.compile(rf"Model loading took {_NUM} GiB")
_CPU_KV = re.compile(rf"(?:Explicitly|Auto) set \({_NUM}/{_NUM}\) GiB for KV cache")


def parse_startup_log(log_text: str) -> ReadBack:
    """Memory and KV figures from a vLLM startup log (the last occurrence of each wins)."""
    found: dict[str, Any] = {}
    for name, pattern in _LOG_PATTERNS.items():
        matches = pattern.findall(log_text)
        if not matches:
            continue
        last = matches[-1]
        value = last[-1] if isinstance(last, tuple) else last
        found[name] = _int(value) if name in ("kv_cache_size_tokens", "max_model_len") else _float(value)
    if "weights_gib" not in found:
        m = _MODEL_LOADING.findall(log_text)
        if m:
            found["weights_gib"] = _float(m[-1])
    if "available_kv_gib" not in found:
        m = _CPU_KV.findall(log_text)
        if m:
            found["available_kv_gib"] = _float(m[-1][0])
    return ReadBack(**found)
