"""Engine families: configurations whose step times one calibration describes. Same weights (a quantized
variant is another family), same speculative decoding, same tensor parallelism, same GPU and vLLM build.
The KV cache dtype is carried over physically (``Costs.per_kv_byte_s``: an fp8 cache reads half the bytes),
so a prediction for a dtype the calibration has not seen is made but marked as extrapolated."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from launch.config import ServeConfig


@dataclass(frozen=True)
class Family:
    model: str  # the weights' directory name
    speculative: str  # "off", or method and tokens: draft-and-verify steps are another machine
    tensor_parallel: int

    def __str__(self) -> str:
        return f"{self.model}, speculative {self.speculative}, TP {self.tensor_parallel}"


def family_of(config: ServeConfig) -> Family:
    from launch.config import speculation_on

    spec = "off"
    if speculation_on(config.speculative_method):
        spec = f"{config.speculative_method}:{config.num_speculative_tokens or 1}"
    return Family(PurePath(config.model).name, spec, config.tensor_parallel_size or 1)


def kv_dtype_of(config: ServeConfig) -> str:
    return config.kv_cache_dtype or "auto"
