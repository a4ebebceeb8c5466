"""What the performance model is asked to serve in a study: its workload, SLOs and output length, and the tokens
each prompt carries beyond the length the workload samples. A prompt built with a tokenizer that has a chat
template (``edit`` on an instruct model) goes through that template, whose tokens the model's traffic would not
count otherwise: on SmolLM2's ``edit`` 30 a prompt, 12 % of them (results/perfmodel-kv-edge-draws-2026-12-07), a
tenth of the KV cache unseen at a KV-bound edge."""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING

from loadtest.prompts import PromptFactory, load_tokenizer
from perfmodel.traffic import Demand, requests_of

if TYPE_CHECKING:
    from loadtest.workload import Workload
    from tuner.trial.context import TrialContext

OVERHEAD_SAMPLE = 32  # prompts built to measure it: their overheads differ by a token or two at most


def prompt_overhead(workload: Workload, tokenizer: str | None, sample: int = OVERHEAD_SAMPLE) -> int:
    """The median tokens a prompt of ``workload`` carries beyond its sampled length, as ``loadtest`` builds it with
    ``tokenizer`` (0 without one, or for a replayed workload, whose lengths the model estimates apart; never below 0:
    an edit passage a token or two under its sampled length is left as sampled)."""
    if tokenizer is None or workload.entries or workload.input_tokens is None:
        return 0
    factory = PromptFactory(workload, seed=0, tokenizer=load_tokenizer(tokenizer))
    sampled = requests_of(workload, 0, sample)
    built = [factory.make(i).input_tokens for i in range(sample)]
    extra = [b - r.prompt_tokens for b, r in zip(built, sampled, strict=True) if b is not None]
    return max(0, round(statistics.median(extra))) if extra else 0


def demand_of(ctx: TrialContext) -> Demand:
    """The study's demand, its prompts as long as ``loadtest`` sends them to the study's model."""
    overhead = prompt_overhead(ctx.workload, ctx.tokenizer)
    return Demand(ctx.workload, ctx.slos, ctx.output_tokens, overhead)
