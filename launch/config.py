"""ServeConfig: one vLLM configuration, frozen and serialisable.

Built by ``tuner.search.space`` (the only place values are suggested), turned into argv + env by
``launch.command``, stored in ``best.json`` and re-launched by ``launch.sh``. ``None`` always means
"leave it to vLLM's default": the baseline trial is ``ServeConfig(model=...)`` with nothing else.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, TypeGuard

# Knobs the search may vary; each maps to one vLLM flag (see launch.command for the mapping).
KNOBS = (
    "gpu_memory_utilization",
    "max_model_len",
    "max_num_seqs",
    "max_num_batched_tokens",
    "enable_chunked_prefill",
    "enable_prefix_caching",
    "kv_cache_dtype",
    "block_size",
    "tensor_parallel_size",
    "speculative_method",
    "num_speculative_tokens",
)


SPECULATION_OFF = (None, "", "off", "none")  # speculative_method values that mean "no speculative decoding"


def speculation_on(method: str | None) -> TypeGuard[str]:
    """Whether a ``speculative_method`` value turns speculative decoding on."""
    return method not in SPECULATION_OFF


@dataclass(frozen=True)
class ServeConfig:
    """Everything needed to start one vLLM server. Hashable; ``to_dict``/``from_dict`` round-trip."""

    model: str
    served_model_name: str | None = None
    tokenizer: str | None = None
    dtype: str | None = None
    load_format: str | None = None  # "dummy" for random weights generated on the device
    quantization: str | None = None
    gpu_memory_utilization: float | None = None
    max_model_len: int | None = None
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    enable_chunked_prefill: bool | None = None
    enable_prefix_caching: bool | None = None
    kv_cache_dtype: str | None = None
    kv_cache_memory_bytes: int | None = None  # caps KV memory (memory emulation of a smaller GPU)
    block_size: int | None = None
    tensor_parallel_size: int | None = None
    data_parallel_size: int | None = None  # replicas behind one front end (--devices with several GPUs)
    api_server_count: int | None = None  # front-end (API server) processes; > 1 starts through vLLM's CLI
    enforce_eager: bool | None = None
    speculative_method: str | None = None  # None/"off", "ngram", "draft", "eagle"
    num_speculative_tokens: int | None = None
    speculative_model: str | None = None  # draft / EAGLE head directory
    seed: int | None = None
    extra_args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        """The model name clients send (vLLM serves the path unless a name is given)."""
        return self.served_model_name or self.model

    @property
    def gpus(self) -> int:
        """GPUs one server of this configuration takes: tensor-parallel size x data-parallel replicas."""
        return (self.tensor_parallel_size or 1) * (self.data_parallel_size or 1)

    def knobs(self) -> dict[str, Any]:
        """The searched knobs only (None = vLLM default)."""
        return {k: getattr(self, k) for k in KNOBS}

    def with_env(self, **env: str) -> ServeConfig:
        merged = dict(self.env)
        merged.update(env)
        return replace(self, env=tuple(sorted(merged.items())))

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["extra_args"] = list(self.extra_args)
        d["env"] = dict(self.env)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ServeConfig:
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ValueError(f"unknown ServeConfig keys {sorted(unknown)}; known: {sorted(known)}")
        d = dict(d)
        d["extra_args"] = tuple(d.get("extra_args") or ())
        d["env"] = tuple(sorted((d.get("env") or {}).items()))
        return cls(**d)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)
