"""Engine families: configurations whose step times one calibration describes. Same weights (a quantized
variant is another family), same speculative decoding, same tensor parallelism, same KV cache dtype, same GPU
and vLLM build. The KV dtype is part of it because an fp8 cache changes the attention kernels vLLM runs, not
only the bytes read: on the H200 with vLLM 0.26 two fp8 configurations certified 8 % below vLLM's defaults
where halving their KV reads predicted them 21-22 % higher (results/h200-llama-3-8b-a30-predict-2026-12-02-b-each).
``rank.predict(..., extrapolate_kv=True)`` still makes that bytes-scaled prediction, marked extrapolated, for
the offline benches that compare it. Measured once, such a family keeps its sibling's costs but what its KV reads
cost (perfmodel.kv_sibling)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from launch.config import ServeConfig


@dataclass(frozen=True)
class Family:
    model: str  # the weights' directory name
    speculative: str  # "off", or method and tokens: draft-and-verify steps are another machine
    tensor_parallel: int
    kv_dtype: str  # "auto" or the cache dtype (fp8, ...)

    def __str__(self) -> str:
        return f"{self.model}, speculative {self.speculative}, TP {self.tensor_parallel}, KV {self.kv_dtype}"

    def but_kv(self, kv_dtype: str) -> Family:
        return replace(self, kv_dtype=kv_dtype)


def family_of(config: ServeConfig) -> Family:
    from launch.config import speculation_on

    spec = "off"
    if speculation_on(config.speculative_method):
        spec = f"{config.speculative_method}:{config.num_speculative_tokens or 1}"
    return Family(PurePath(config.model).name, spec, config.tensor_parallel_size or 1, kv_dtype_of(config))


def kv_dtype_of(config: ServeConfig) -> str:
    return config.kv_cache_dtype or "auto"
