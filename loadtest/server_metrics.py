"""vLLM's Prometheus ``/metrics``: scraped before and after a run (and polled for peaks during it).

Names as in vLLM 0.32 (``vllm/v1/metrics/loggers.py``, ``vllm/v1/spec_decode/metrics.py``); 0.26
uses the same ones. Older builds' ``vllm:gpu_cache_usage_perc`` / ``vllm:gpu_prefix_cache_*`` are
read as aliases. A server without ``/metrics`` (not vLLM) gives an empty dict.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from loadtest.transport import Clock, MonotonicClock, Transport

_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')
COUNTERS = {  # report key suffix -> metric names (first present wins)
    "preemptions": ("vllm:num_preemptions_total",),
    "prefix_queries": ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"),
    "prefix_hits": ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"),
    "spec_drafts": ("vllm:spec_decode_num_drafts_total",),
    "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total",),
    "spec_accepted": ("vllm:spec_decode_num_accepted_tokens_total",),
    "queue_sum": ("vllm:request_queue_time_seconds_sum",),
    "queue_count": ("vllm:request_queue_time_seconds_count",),
    "prefill_sum": ("vllm:request_prefill_time_seconds_sum",),
    "prefill_count": ("vllm:request_prefill_time_seconds_count",),
    "prompt_tokens": ("vllm:prompt_tokens_total",),
    "generation_tokens": ("vllm:generation_tokens_total",),
    "ttft_sum": ("vllm:time_to_first_token_seconds_sum",),
    "ttft_count": ("vllm:time_to_first_token_seconds_count",),
    "itl_sum": ("vllm:inter_token_latency_seconds_sum", "vllm:time_per_output_token_seconds_sum"),
    "itl_count": ("vllm:inter_token_latency_seconds_count", "vllm:time_per_output_token_seconds_count"),
    "requests_done": ("vllm:e2e_request_latency_seconds_count",),
}
GAUGES = {
    "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"),
    "requests_waiting": ("vllm:num_requests_waiting",),
    "requests_running": ("vllm:num_requests_running",),
}


@dataclass(frozen=True)
class GaugeSample:
    """vLLM's scheduler gauges as read at ``t`` (the run's clock, when the response came): requests running
    in the engine and waiting in its scheduler."""

    t: float
    running: float
    waiting: float


@dataclass(frozen=True)
class ServerSummary:
    """A report's ``server`` figures (what :func:`summarize` gives) as a record; None: vLLM did not report it.
    Field order is summarize's, so ``to_dict`` writes the same JSON as the dict it replaces."""

    preemptions: int | None = None
    queue_time_mean_ms: float | None = None  # waiting in the engine's scheduler (engine timestamps)
    prefill_time_mean_ms: float | None = None  # first scheduled to first token (engine timestamps)
    server_requests: int | None = None
    server_ttft_mean_ms: float | None = None  # from a request's arrival in the API server to its first output there
    server_itl_mean_ms: float | None = None
    prefix_cache_hit_rate: float | None = None
    spec_decode_drafts: int | None = None  # 0 on a speculating server that proposed nothing
    spec_decode_acceptance_rate: float | None = None  # accepted / drafted tokens
    spec_decode_mean_accepted_per_draft: float | None = None
    server_prompt_tokens: int | None = None
    server_generation_tokens: int | None = None
    kv_cache_usage_peak: float | None = None
    requests_waiting_peak: float | None = None
    requests_running_peak: float | None = None
    kv_cache_tokens: int | None = None

    @property
    def outside_engine_ttft_ms(self) -> float | None:
        """The mean TTFT less its means in the engine (queue and prefill): time in the API server before the
        engine queued a request and after its first token left the engine. The TTFT mean counts requests at
        their first token, the others at their end, so over a short run it is approximate (and can be < 0)."""
        ttft, queue, prefill = self.server_ttft_mean_ms, self.queue_time_mean_ms, self.prefill_time_mean_ms
        if ttft is None or queue is None or prefill is None:
            return None
        return ttft - queue - prefill

    def ttft_split(self) -> str | None:
        """vLLM's mean TTFT in a phrase, split where vLLM times it (None: not all three reported)."""
        outside = self.outside_engine_ttft_ms
        if outside is None:
            return None
        return (
            f"vLLM's mean TTFT {self.server_ttft_mean_ms:.0f} ms: queue {self.queue_time_mean_ms:.0f}, prefill "
            f"{self.prefill_time_mean_ms:.0f}, outside the engine {outside:.0f}"
        )

    def to_dict(self) -> dict[str, float]:
        """Only the figures vLLM reported, as summarize writes them."""
        return {f.name: v for f in fields(self) if (v := getattr(self, f.name)) is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> ServerSummary:
        """The stored form back; names this version does not know are dropped."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in (d or {}).items() if k in known})


def parse_prometheus(text: str) -> tuple[dict[str, float], dict[str, dict[str, str]]]:
    """Values summed over label sets per name, and the labels of ``*_info`` metrics."""
    values: dict[str, float] = {}
    infos: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        brace = line.find("{")
        if brace >= 0:
            end = line.rfind("}")
            name, labels, rest = line[:brace], line[brace + 1 : end], line[end + 1 :]
        else:
            name, _, rest = line.partition(" ")
            labels = ""
        parts = rest.split()
        if not parts:
            continue
        try:
            v = float(parts[0])
        except ValueError:
            continue
        values[name] = values.get(name, 0.0) + v
        if name.endswith("_info") and labels:
            infos[name] = dict(_LABEL.findall(labels))
    return values, infos


def _pick(values: Mapping[str, float], names: tuple[str, ...]) -> float | None:
    return next((values[n] for n in names if n in values), None)


def summarize(
    before: dict[str, float],
    after: dict[str, float],
    peaks: dict[str, float],
    infos: dict[str, dict[str, str]],
) -> dict[str, float]:
    """The report's ``server`` dict: deltas over the run, peaks seen, and derived rates (ServerSummary's fields)."""
    d: dict[str, float] = {}
    for key, names in COUNTERS.items():
        a, b = _pick(before, names), _pick(after, names)
        if a is not None and b is not None:
            d[key] = b - a
    out: dict[str, float] = {}
    if "preemptions" in d:
        out["preemptions"] = int(d["preemptions"])
    for key in ("queue", "prefill"):  # vLLM records both when a request ends
        if d.get(f"{key}_count"):
            out[f"{key}_time_mean_ms"] = 1000.0 * d[f"{key}_sum"] / d[f"{key}_count"]
    if "requests_done" in d:
        out["server_requests"] = int(d["requests_done"])
    for key in ("ttft", "itl"):  # the server's own view (from a request's arrival; between engine outputs)
        if d.get(f"{key}_count"):
            out[f"server_{key}_mean_ms"] = 1000.0 * d[f"{key}_sum"] / d[f"{key}_count"]
    if d.get("prefix_queries"):
        out["prefix_cache_hit_rate"] = d.get("prefix_hits", 0.0) / d["prefix_queries"]
    if "spec_drafts" in d:  # a speculating server; 0 drafts (nothing to propose, e.g. ngram on random text)
        out["spec_decode_drafts"] = int(d["spec_drafts"])  # is a finding too, not a missing figure
    if d.get("spec_draft_tokens"):
        out["spec_decode_acceptance_rate"] = d.get("spec_accepted", 0.0) / d["spec_draft_tokens"]
        if d.get("spec_drafts"):
            out["spec_decode_mean_accepted_per_draft"] = d.get("spec_accepted", 0.0) / d["spec_drafts"]
    for key in ("prompt_tokens", "generation_tokens"):
        if key in d:
            out[f"server_{key}"] = int(d[key])
    for key, v in peaks.items():
        out[f"{key}_peak"] = v
    info = infos.get("vllm:cache_config_info", {})
    if info.get("num_gpu_blocks") and info.get("block_size"):
        try:
            out["kv_cache_tokens"] = int(info["num_gpu_blocks"]) * int(info["block_size"])
        except ValueError:
            pass
    return out


def gauge_sample(values: Mapping[str, float], t: float) -> GaugeSample | None:
    """The running and waiting counts of one ``/metrics`` read (``parse_prometheus``'s values), at ``t``; None
    where vLLM did not report both."""
    running, waiting = _pick(values, GAUGES["requests_running"]), _pick(values, GAUGES["requests_waiting"])
    return GaugeSample(t, running, waiting) if running is not None and waiting is not None else None


def raise_peaks(peaks: dict[str, float], values: Mapping[str, float]) -> None:
    """Raise each gauge's peak in ``peaks`` (GAUGES' keys) to its value in this read (``parse_prometheus``'s)."""
    for key, names in GAUGES.items():
        v = _pick(values, names)
        if v is not None:
            peaks[key] = max(peaks.get(key, v), v)


class Scraper:
    """Reads ``/metrics`` through the run's transport; polls gauges every ``interval_s`` (0.2 s) for peaks
    and keeps each poll's running and waiting counts (``samples``, timed by the run's ``clock``)."""

    def __init__(
        self, transport: Transport, metrics_url: str, interval_s: float = 0.2, clock: Clock | None = None
    ) -> None:
        self.transport, self.url, self.interval = transport, metrics_url, interval_s
        self.clock = clock or MonotonicClock()
        self.peaks: dict[str, float] = {}
        self.samples: list[GaugeSample] = []
        self.available = True
        self._task: asyncio.Task[None] | None = None

    async def scrape(self) -> tuple[dict[str, float], dict[str, dict[str, str]]] | None:
        if not self.available:
            return None
        try:
            async with self.transport.request("GET", self.url, None, 5.0) as resp:
                if resp.status != 200:
                    self.available = False
                    return None
                text = b"\n".join([line async for line in resp.lines()]).decode("utf-8", "replace")
        except (OSError, TimeoutError):
            self.available = False
            return None
        values, infos = parse_prometheus(text)
        if not any(k.startswith("vllm:") for k in values):
            self.available = False
            return None
        raise_peaks(self.peaks, values)
        if (sample := gauge_sample(values, self.clock.now())) is not None:
            self.samples.append(sample)
        return values, infos

    async def _poll(self) -> None:
        while self.available:
            await asyncio.sleep(self.interval)  # real time, whatever clock the run is timed with
            await self.scrape()

    def start(self) -> None:
        if self.available:
            self._task = asyncio.create_task(self._poll())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, OSError, TimeoutError):
                pass
