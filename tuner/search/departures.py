"""Which of the model's unresolved ties ``tune --predict`` launches: the one that leaves the most to vLLM.

A predicted capacity is found by bisection to within ``STEADY.rel_tolerance`` (2 %), so two predictions closer than
that are one figure to the model. Among such ties the search launches the configuration that sets the fewest
engine settings away from what vLLM would run with (its defaults, resolved for this GPU and model): every knob
moved is a mechanism the model may not capture. On H200 run e the bytes-scaled fp8 ranking put unchunked prefill
without prefix caching (launched: 68.231 req/s) 0.2 % above the same batch limits with vLLM's chunking and prefix
caching, the A30 grid's best point (72.9-78.1 measured; results/h200-tiebreak-offline-2026-12-03)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from launch.config import KNOBS
from perfmodel.rank import STEADY
from tuner.budget.vllm_defaults import DEFAULT_GMU

if TYPE_CHECKING:
    from launch.config import ServeConfig
    from perfmodel.config import EngineConfig
    from perfmodel.rank import Prediction

UNRESOLVED = STEADY.rel_tolerance  # predictions this close (relative) are one figure to the model
Departures = Callable[["ServeConfig"], int]


def no_departures(config: ServeConfig) -> int:
    """Every configuration counts alike (a model that resolves no engine, a test's fake): ties keep their order."""
    return 0


def departures(config: ServeConfig, engine: EngineConfig, vllms: EngineConfig) -> int:
    """How many engine settings ``config`` (run as ``engine``) sets away from vLLM's own choice (``vllms``: the
    same model and GPU with every searched knob left to vLLM). A batch size counts only where both chunk prompts
    (without chunked prefill vLLM sizes the batch by the prompt)."""
    both_chunk = engine.chunked_prefill and vllms.chunked_prefill
    moved = [
        (config.gpu_memory_utilization or DEFAULT_GMU) != DEFAULT_GMU,
        engine.max_model_len != vllms.max_model_len,
        engine.max_num_seqs != vllms.max_num_seqs,
        engine.chunked_prefill != vllms.chunked_prefill,
        both_chunk and engine.max_num_batched_tokens != vllms.max_num_batched_tokens,
        engine.prefix_caching != vllms.prefix_caching,
        engine.block_size != vllms.block_size,
        (config.kv_cache_dtype or "auto") != "auto",
        (config.tensor_parallel_size or 1) != 1,
        config.speculative_method is not None,
    ]
    return sum(moved)


def with_vllms_defaults(config: ServeConfig) -> ServeConfig:
    """``config`` with every searched knob left to vLLM (its model, weights format and environment kept)."""
    unset: dict[str, Any] = dict.fromkeys(KNOBS)
    return replace(config, **unset)


def closest_to_defaults(
    preds: Sequence[Prediction], moved: Departures, figure: Callable[[Prediction], float | None]
) -> Prediction | None:
    """Of ``preds`` (best first by ``figure``), the one with the fewest departures among those within UNRESOLVED of
    the first's figure; the higher figure on equal departures. None when ``preds`` is empty."""
    if not preds:
        return None
    top = figure(preds[0])
    if top is None:
        return preds[0]
    ties = [p for p in preds if (f := figure(p)) is not None and f >= top * (1.0 - UNRESOLVED)]
    return min(ties, key=lambda p: (moved(p.config), -(figure(p) or 0.0)))
