"""How many GPUs one vLLM server of a configuration occupies: tensor × pipeline × data parallel.

Tensor and data parallelism are ServeConfig knobs; pipeline parallelism (and data parallelism in older
studies) comes in through ``extra_args`` (``--pipeline-parallel-size N``, ``-pp N``, ``--data-parallel-size=N``).
"""

from __future__ import annotations

from launch.config import ServeConfig
from tuner.errors import UsageError

_PARALLEL_FLAGS = {
    "--pipeline-parallel-size": "pipeline",
    "-pp": "pipeline",
    "--data-parallel-size": "data",
    "-dp": "data",
}


def _extra_sizes(extra: tuple[str, ...]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for i, arg in enumerate(extra):
        flag, eq, inline = arg.partition("=")
        if flag not in _PARALLEL_FLAGS:
            continue
        value = inline if eq else (extra[i + 1] if i + 1 < len(extra) else "")
        if not value.isdigit() or int(value) < 1:
            raise UsageError(f"extra argument {arg!r}: {flag} needs a whole number >= 1 (got {value!r})")
        sizes[_PARALLEL_FLAGS[flag]] = int(value)
    return sizes


def gpu_count(config: ServeConfig) -> int:
    """GPUs of one server: tensor_parallel_size (default 1) × pipeline × data parallel sizes."""
    sizes = _extra_sizes(config.extra_args)
    data = sizes.get("data", config.data_parallel_size or 1)
    return (config.tensor_parallel_size or 1) * sizes.get("pipeline", 1) * data
