"""The parallel layout of one server on several GPUs: tensor-parallel size x data-parallel replicas.

Searched only when ``--devices`` lists several GPUs (tuner.search.space). vLLM's rules for a tensor-parallel size
(vllm/config ModelConfig.verify_with_parallel_config, model_executor/layers/linear.py QKVParallelLinear):
the attention heads divide by it; the KV heads divide by it, or, when it exceeds them, it divides by the KV
heads (each KV head is then replicated on tp / kv_heads GPUs). MLA models keep one latent KV per GPU.
Data-parallel replicas (``--data-parallel-size``: one front end over ``dp`` engines) only where the
installed vLLM accepts the flag.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from launch.config import ServeConfig
from tuner.model.spec import ModelSpec

DP_FLAG = "--data-parallel-size"
TP_FLAG = "--tensor-parallel-size"


@dataclass(frozen=True)
class Layout:
    """``tp`` GPUs per replica, ``dp`` replicas: ``tp * dp`` GPUs for one server."""

    tp: int = 1
    dp: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.dp

    @property
    def name(self) -> str:
        """The Optuna categorical value (stable across versions: studies store it)."""
        return f"tp{self.tp}xdp{self.dp}"

    @classmethod
    def of(cls, config: ServeConfig) -> Layout:
        return cls(config.tensor_parallel_size or 1, config.data_parallel_size or 1)

    @classmethod
    def parse(cls, name: str) -> Layout:
        tp, _, dp = name.removeprefix("tp").partition("xdp")
        return cls(int(tp), int(dp))

    def apply(self, config: ServeConfig) -> ServeConfig:
        """``config`` with this layout; a size of 1 stays unset (vLLM's default), as in today's configs."""
        return replace(
            config,
            tensor_parallel_size=self.tp if self.tp > 1 else None,
            data_parallel_size=self.dp if self.dp > 1 else None,
        )


def tp_problem(spec: ModelSpec, tp: int) -> str | None:
    """Why vLLM rejects tensor-parallel size ``tp`` for ``spec`` (None: it accepts it)."""
    if tp < 1:
        return f"tensor_parallel_size {tp} must be at least 1"
    if spec.num_heads % tp:
        return f"num_attention_heads {spec.num_heads} is not divisible by tensor_parallel_size {tp}"
    kv = spec.num_kv_heads
    if spec.mla is not None or tp == 1:
        return None
    if tp >= kv and tp % kv:
        return (
            f"tensor_parallel_size {tp} exceeds num_key_value_heads {kv} but is not a multiple of it; "
            "vLLM replicates KV heads only by whole multiples — choose a tensor_parallel_size dividing "
            f"or divisible by {kv}"
        )
    if tp < kv and kv % tp:
        return f"num_key_value_heads {kv} is not divisible by tensor_parallel_size {tp}"
    return None


def layouts(spec: ModelSpec, gpus: int, *, data_parallel: bool) -> tuple[Layout, ...]:
    """Every layout of at most ``gpus`` GPUs vLLM accepts for ``spec``: tensor-parallel sizes that pass
    ``tp_problem``, times 1..gpus // tp replicas where ``data_parallel`` (the installed vLLM has the flag).
    Smaller layouts are kept: trials that fit run side by side on disjoint GPU groups (tuner.trial.placement)."""
    out = []
    for tp in range(1, gpus + 1):
        if tp_problem(spec, tp) is not None:
            continue
        for dp in range(1, (gpus // tp if data_parallel else 1) + 1):
            out.append(Layout(tp, dp))
    return tuple(out)


def searched_layouts(spec: ModelSpec, devices: list[str | None], flags: frozenset[str]) -> tuple[Layout, ...]:
    """The layouts the search varies: none (today's one-GPU trials) unless several GPUs are listed and the
    installed vLLM takes ``--tensor-parallel-size``; ``flags`` empty means every flag (tests)."""
    listed = [d for d in devices if d is not None]
    if len(listed) < 2 or (flags and TP_FLAG not in flags):
        return ()
    return layouts(spec, len(listed), data_parallel=not flags or DP_FLAG in flags)


def per_gpu(goodput: float, config: ServeConfig) -> float:
    """Goodput per GPU, so layouts of different sizes compare."""
    return goodput / config.gpus


def layout_columns(config: ServeConfig, goodput: float) -> dict[str, float | int | None]:
    """trials.csv's layout columns (only in studies that searched layouts: others keep today's columns)."""
    return {
        "data_parallel_size": config.data_parallel_size,
        "gpus": config.gpus,
        "goodput_per_gpu_req_s": round(per_gpu(goodput, config), 4),
    }
