"""The requests the model serves, built exactly as ``loadtest`` builds them: request ``i`` of seed ``s`` has
the lengths ``loadtest.prompts.PromptFactory`` samples (same random stream, no tokenizer needed) and the
same prompt whenever it is sent again under that seed (so a repeated level hits the prefix cache the way it
did on the real server); Poisson send times come from ``loadtest.arrivals.schedule``.
A replayed trace gives its own send times and lengths.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from loadtest import arrivals
from loadtest.slo import SLO
from loadtest.workload import DEFAULT_REPLAY_OUTPUT, Workload

PREDICTED_METRICS = ("ttft", "tpot", "e2e")  # per-token ITL percentiles are not modelled
CHARS_PER_TOKEN = 4  # replayed text without token counts: a typical BPE ratio (an estimate)


@dataclass(frozen=True)
class Demand:
    """What is asked of a server: the workload's requests (``output_tokens`` overrides their answers' length,
    as ``tune --output-tokens`` does) under the SLOs."""

    workload: Workload
    slos: tuple[SLO, ...]
    output_tokens: int | None = None
    prompt_overhead_tokens: int = 0  # tokens each prompt carries beyond its sampled length (a chat template's)

    def __post_init__(self) -> None:
        itl = [str(s) for s in self.slos if s.metric not in PREDICTED_METRICS]
        if itl:
            raise ValueError(
                f"the performance model predicts ttft, tpot and e2e percentiles, not {', '.join(itl)}: "
                "measure such an SLO, or state it as a tpot SLO"
            )

    def open_level(self, rate: float, count: int, seed: int, first: int = 0) -> OpenLoad:
        return poisson_load(
            self.workload,
            rate,
            count,
            seed,
            first=first,
            output_tokens=self.output_tokens,
            overhead=self.prompt_overhead_tokens,
        )

    def closed_level(self, concurrency: int, count: int, seed: int) -> ClosedLoad:
        return closed_load(
            self.workload,
            concurrency,
            count,
            seed,
            output_tokens=self.output_tokens,
            overhead=self.prompt_overhead_tokens,
        )

    @property
    def longest_request(self) -> int:
        out = self.output_tokens or self.workload.max_output_tokens
        return self.workload.max_input_tokens + self.prompt_overhead_tokens + out


@dataclass(frozen=True)
class Request:
    key: Hashable  # the prompt's identity: equal keys are identical prompts (prefix-cache hits)
    prompt_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class OpenLoad:
    """Requests sent at fixed offsets from the level's start, whatever the server does."""

    offsets_s: tuple[float, ...]
    requests: tuple[Request, ...]
    rate: float | None = None


@dataclass(frozen=True)
class ClosedLoad:
    """``concurrency`` clients, each sending its next request when its previous one ends."""

    concurrency: int
    requests: tuple[Request, ...]


@functools.lru_cache(maxsize=256)
def requests_of(
    workload: Workload,
    seed: int,
    count: int,
    *,
    first: int = 0,
    output_tokens: int | None = None,
    overhead: int = 0,
) -> tuple[Request, ...]:
    """Requests ``first … first+count−1`` of ``seed``, lengths as PromptFactory samples them, each prompt
    ``overhead`` tokens longer (cached: a calibration replays the same levels hundreds of times)."""
    return tuple(_request(workload, seed, i, output_tokens, overhead) for i in range(first, first + count))


def _request(workload: Workload, seed: int, i: int, output_tokens: int | None, overhead: int = 0) -> Request:
    rng = random.Random(f"{seed}:{i}")
    if workload.entries:
        e = workload.entries[i % len(workload.entries)]
        prompt = max(1, -(-e.chars // CHARS_PER_TOKEN))
        out = output_tokens or e.output_tokens
        if out is None and e.reference_output:
            out = max(1, len(e.reference_output) // CHARS_PER_TOKEN)
        return Request((seed, i % len(workload.entries)), prompt, out or DEFAULT_REPLAY_OUTPUT)
    assert workload.input_tokens is not None and workload.output_tokens is not None
    prompt = workload.input_tokens.sample(rng)  # PromptFactory.make: input first, then output
    out = output_tokens if output_tokens is not None else workload.output_tokens.sample(rng)
    return Request((seed, i), prompt + overhead, out)


def poisson_load(
    workload: Workload,
    rate: float,
    count: int,
    seed: int,
    *,
    first: int = 0,
    output_tokens: int | None = None,
    overhead: int = 0,
) -> OpenLoad:
    """An open-loop level as ``loadtest.run_load`` sent it before 2026-12-06 (``LoadSpec(rate=…, requests=count,
    seed=…)`` with free Poisson gaps); since then a level's spans send exactly rate x span, which this still omits."""
    offsets = arrivals.schedule(rate, count=count, seed=seed)
    reqs = requests_of(workload, seed, count, first=first, output_tokens=output_tokens, overhead=overhead)
    return OpenLoad(tuple(offsets), reqs, rate)


def closed_load(
    workload: Workload,
    concurrency: int,
    count: int,
    seed: int,
    *,
    output_tokens: int | None = None,
    overhead: int = 0,
) -> ClosedLoad:
    return ClosedLoad(concurrency, requests_of(workload, seed, count, output_tokens=output_tokens, overhead=overhead))


def trace_load(sends: Sequence[tuple[float, int, int]]) -> OpenLoad:
    """A replayed trace: (send offset s, prompt tokens, output tokens) per request, all distinct prompts."""
    ordered = sorted(sends)
    return OpenLoad(
        tuple(t for t, _, _ in ordered),
        tuple(Request(("trace", i), p, o) for i, (_, p, o) in enumerate(ordered)),
    )
