"""A stand-in for vLLM-CPU's batch, for the judgements over raw records (no server, no clock): Poisson arrivals
into a batch whose every step lasts ``step_s`` + ``per_seq_s`` per running sequence and gives each one token.
An arrival gets its first token at the next step (chunked prefill admits it at once) and ends after ``tokens``.
The batch streams at most 1/per_seq_s tokens/s (5.2 req/s of 64 tokens with the defaults)."""

from __future__ import annotations

import random

from loadtest.records import Chunk, RequestRecord
from loadtest.server_metrics import GaugeSample


def batched_decoding(
    rate: float, seconds: float, seed: int, step_s: float = 0.05, per_seq_s: float = 0.003, tokens: int = 64
) -> tuple[list[RequestRecord], tuple[GaugeSample, ...]]:
    """The records, one chunk per token, and vLLM's gauges at each step (every request runs: none waits)."""
    rng, arrivals, t = random.Random(seed), [], 0.0
    while (t := t + rng.expovariate(rate)) < seconds:
        arrivals.append(t)
    now, nxt, running, recs, gauges = 0.0, 0, {}, [], []
    while nxt < len(arrivals) or running:
        while nxt < len(arrivals) and arrivals[nxt] <= now:
            running[nxt] = []
            nxt += 1
        if not running:
            now = arrivals[nxt]
            continue
        now += step_s + per_seq_s * len(running)
        gauges.append(GaugeSample(now, float(len(running)), 0.0))
        for i, times in list(running.items()):
            times.append(now)
            if len(times) == tokens:
                chunks = tuple(Chunk(x, 1) for x in running.pop(i))
                at = arrivals[i]
                recs.append(RequestRecord(i, at, at, chunks, done_at=now, completion_tokens=tokens))
    return sorted(recs, key=lambda r: r.index), tuple(gauges)
