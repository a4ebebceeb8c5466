"""How long things take in one engine family: an engine step (one forward pass and its scheduling) and the
front end's work (vLLM's API server process: parsing, tokenizing, streaming).

Step time, in the spirit of BLIS's blackbox model (β0 + β1·prefill tokens + β2·decode tokens), split
into the device's work and the host's (vLLM's engine-core process: scheduling, input preparation, sampling
bookkeeping, all per sequence), with two physical terms so that one calibration carries over between
configurations:

    device = fixed + per_prefill_token · (prefill tokens + attn_ratio · Σ chunk × context)
                   + per_kv_byte · KV bytes decode attention reads
    host   = per_seq · sequences in the step
    step   = max(device, host) with async scheduling (vLLM on a GPU: the host prepares step n+1 while the
             device runs step n), device + host without (vLLM-CPU, speculative decoding)

The max is what makes a large batch expensive: on the H200 a step of ~130 sequences lasts ~9 ms (device
bound) and one of ~1,000 ~140 ms (host bound; DESIGN.md's 60-second check of the defaults).
``per_kv_byte`` starts at the roofline (1 / memory bandwidth), so an fp8 KV cache reads half the bytes of a
16-bit one; ``attn_ratio`` is the model's attention FLOPs per (query, context) token pair over its matmul
FLOPs per token, so long prompts cost what causal attention costs at the matmuls' efficiency.
The front end is one FIFO server (the API server's event loop): each request costs ``per_request`` on
arrival, each engine step's output ``per_token`` per token streamed; a backlog there delays both the
engine's view of new requests and the client's view of tokens. Where it competes for the engine's cores
(vLLM-CPU on a small machine: ``shared_front_end``) the engine's next step waits for it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

# the coefficients a calibration fits; the others are physical and fixed (see the module docstring)
FITTED = ("fixed_s", "per_prefill_token_s", "per_seq_s", "per_request_s", "per_token_s")


@dataclass(frozen=True)
class Costs:
    fixed_s: float  # per engine step
    per_prefill_token_s: float  # per prompt token computed (a prefill chunk's tokens)
    per_seq_s: float  # host, per sequence in a step (decode or prefill): scheduling, sampling, bookkeeping
    per_kv_byte_s: float  # per byte of KV cache read by decode attention
    attn_ratio: float  # prefill attention work per (token, context token), in prefill-token units
    per_request_s: float  # front end, per request
    per_token_s: float  # front end, per output token streamed
    overlap: bool = True  # async scheduling: host and device work overlap (step = max, else sum)
    shared_front_end: bool = False  # the front end competes for the engine's cores (vLLM-CPU on few cores)

    def step_s(self, prefill_tokens: int, prefill_pairs: float, seqs: int, kv_bytes: float) -> float:
        device = (
            self.fixed_s
            + self.per_prefill_token_s * (prefill_tokens + self.attn_ratio * prefill_pairs)
            + self.per_kv_byte_s * kv_bytes
        )
        host = self.per_seq_s * seqs
        return max(device, host) if self.overlap else device + host

    def slowed(self, factor: float) -> Costs:
        """These costs on a machine ``factor`` times slower: every time coefficient scaled, the ratios kept."""
        if factor <= 0:
            raise ValueError(f"slowdown factor {factor}: give a positive number (1.1 = 10 % slower)")
        timed = ("fixed_s", "per_prefill_token_s", "per_seq_s", "per_kv_byte_s", "per_request_s", "per_token_s")
        return replace(self, **{name: getattr(self, name) * factor for name in timed})

    def fitted(self) -> tuple[float, ...]:
        return tuple(getattr(self, name) for name in FITTED)

    def with_fitted(self, values: tuple[float, ...] | list[float]) -> Costs:
        fitted: dict[str, Any] = dict(zip(FITTED, values, strict=True))
        return replace(self, **fitted)

    def to_dict(self) -> dict[str, float]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Costs:
        flags = ("overlap", "shared_front_end")
        values: dict[str, Any] = {f.name: bool(d[f.name]) if f.name in flags else float(d[f.name]) for f in fields(cls)}
        return cls(**values)
