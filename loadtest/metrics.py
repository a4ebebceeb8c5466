"""THE pure function: raw request records → :class:`LoadReport`. No clock, no I/O.

Definitions (all in ms, per successful non-warmup request):
- TTFT = first token-carrying event − *scheduled* send time (client lag counts; it is also
  reported alone as ``schedule_lag`` = actual send − scheduled send).
- E2E = end of stream ([DONE]) − scheduled send time.
- TPOT = (E2E − TTFT) / (output tokens − 1), output tokens from the server's usage; undefined for
  one-token answers.
- ITL = per token: an event carrying k tokens after a gap g gives k samples of g / k, and extra
  tokens in the first event give zeros, so a request has (tokens − 1) samples whose sum is the
  time from its first to its last token (= E2E − TTFT when [DONE] comes with the last token).
- Goodput = requests meeting every SLO / duration. Per request: ttft, tpot, e2e are compared with
  the limit directly; for an ``itl_pNN`` SLO the request's own pNN of its ITL samples is compared.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from loadtest import steady
from loadtest.backlog import mean_lifetime
from loadtest.dist import Dist, percentile
from loadtest.records import RequestRecord
from loadtest.report import LoadReport
from loadtest.server_metrics import GaugeSample
from loadtest.slo import SLO


@dataclass(frozen=True)
class Timings:
    """Derived latencies of one successful request, in ms."""

    ttft: float
    e2e: float
    tpot: float | None
    itl: tuple[float, ...]
    tokens: int
    exact: bool


def chunk_tokens(rec: RequestRecord) -> tuple[list[int], bool]:
    """Tokens carried by each event, and whether they are exact (from running usage).

    Without running usage the final usage total is spread over the events: one token in the
    first, the rest as evenly as possible over the others (an estimate, flagged not exact).
    """
    known = [c.tokens for c in rec.chunks]
    total = rec.completion_tokens
    if known and all(k is not None for k in known):
        exact = [int(k) for k in known if k is not None]
        if total is None or sum(exact) == total:
            return exact, True
    n = len(rec.chunks)
    if n == 0:
        return [], False
    total = n if total is None else max(total, n)
    if n == 1:
        return [total], False
    q, r = divmod(total - 1, n - 1)
    return [1] + [q + (1 if i < r else 0) for i in range(n - 1)], False


def timings(rec: RequestRecord) -> Timings:
    """Latencies of one successful request (a record with at least one token-carrying event)."""
    toks, exact = chunk_tokens(rec)
    t0 = rec.scheduled_at
    first = rec.chunks[0].t
    end = rec.done_at if rec.done_at is not None else rec.chunks[-1].t
    ttft = (first - t0) * 1000.0
    e2e = (end - t0) * 1000.0
    n = rec.completion_tokens if rec.completion_tokens is not None else sum(toks)
    tpot = (e2e - ttft) / (n - 1) if n > 1 else None
    itl: list[float] = [0.0] * (toks[0] - 1)
    for prev, cur, k in zip(rec.chunks, rec.chunks[1:], toks[1:], strict=False):
        if k <= 0:
            continue
        gap = (cur.t - prev.t) * 1000.0 / k
        itl.extend([gap] * k)
    return Timings(ttft, e2e, tpot, tuple(itl), n, exact)


def _meets(t: Timings, slo: SLO) -> bool:
    if slo.metric == "ttft":
        return t.ttft <= slo.limit_ms
    if slo.metric == "e2e":
        return t.e2e <= slo.limit_ms
    if slo.metric == "tpot":
        return t.tpot is None or t.tpot <= slo.limit_ms
    if slo.metric == "itl":
        v = percentile(sorted(t.itl), slo.percentile)
        return v is None or v <= slo.limit_ms
    raise ValueError(f"unknown SLO metric {slo.metric!r}")


def _slo_value(slo: SLO, per_req: list[Timings], n_failed: int) -> float | None:
    vals: list[float]
    if slo.metric == "itl":
        vals = [x for t in per_req for x in t.itl]
    else:
        vals = [v for t in per_req if (v := getattr(t, slo.metric)) is not None]
    vals.extend([math.inf] * n_failed)
    v = percentile(sorted(vals), slo.percentile)
    return None if v is None or math.isinf(v) else v


def sent_rate(records: Sequence[RequestRecord]) -> float | None:
    """Requests sent per second over the sending span: (n - 1) / (last scheduled send - first). For an open-loop
    run, the arrival rate its schedule realized (a Poisson schedule's count in a window varies by ~1/sqrt(n))."""
    times = sorted(r.scheduled_at for r in records)
    if len(times) < 2 or times[-1] <= times[0]:
        return None
    return (len(times) - 1) / (times[-1] - times[0])


def compute_metrics(
    records: Iterable[RequestRecord],
    *,
    slos: tuple[SLO, ...] = (),
    server: dict[str, float] | None = None,
    duration_s: float | None = None,
    gauges: tuple[GaugeSample, ...] = (),
) -> LoadReport:
    """Score raw records. Warmup records are ignored; ``duration_s`` defaults to first scheduled
    send → last end among the measured requests. ``gauges``: vLLM's running and waiting counts polled
    during the run, for the steady-state judgement (loadtest.backlog)."""
    every = tuple(records)
    recs = [r for r in every if not r.warmup]
    ok = [r for r in recs if r.ok]
    failed = [r for r in recs if not r.ok]
    per_req = [timings(r) for r in ok]
    if duration_s is None:
        ends = [r.done_at if r.done_at is not None else r.sent_at for r in recs]
        duration_s = max(ends) - min(r.scheduled_at for r in recs) if recs else 0.0
    dur = max(duration_s, 1e-9)
    out_tokens = sum(t.tokens for t in per_req)
    in_tokens = sum(r.prompt_tokens or 0 for r in ok)
    good = sum(1 for t in per_req if all(_meets(t, s) for s in slos))
    samples = {
        "ttft": tuple(sorted(t.ttft for t in per_req)),
        "tpot": tuple(sorted(t.tpot for t in per_req if t.tpot is not None)),
        "itl": tuple(sorted(x for t in per_req for x in t.itl)),
        "e2e": tuple(sorted(t.e2e for t in per_req)),
        "schedule_lag": tuple(sorted((r.sent_at - r.scheduled_at) * 1000.0 for r in recs)),
    }
    slo_values = {s.key: _slo_value(s, per_req, len(failed)) for s in slos}
    return LoadReport(
        requests_ok=len(ok),
        requests_failed=len(failed),
        failures=dict(Counter(r.failure for r in failed if r.failure is not None)),
        output_tokens=out_tokens,
        input_tokens=in_tokens,
        duration_s=duration_s,
        throughput_req_s=len(ok) / dur,
        throughput_tok_s=out_tokens / dur,
        goodput_req_s=(good if slos else len(ok)) / dur,
        requests_good=good if slos else len(ok),
        ttft_ms=Dist.of(samples["ttft"]),
        tpot_ms=Dist.of(samples["tpot"]),
        itl_ms=Dist.of(samples["itl"]),
        e2e_ms=Dist.of(samples["e2e"]),
        schedule_lag_ms=Dist.of(samples["schedule_lag"]),
        server=dict(server or {}),
        slos=tuple(slos),
        slo_met=all(s.met_by(slo_values[s.key]) for s in slos) if slos else None,
        slo_values=slo_values,
        token_counts_exact=all(t.exact for t in per_req),
        sent_rate_req_s=sent_rate(recs),
        samples=samples,
        records=every,
        gauges=gauges,
        steady=steady.judge(recs, slos, _tail_slo_values(recs, slos), gauges=gauges),
    )


MIN_SUSTAINED = 10  # completions a sustained rate is read from; fewer: not known (0.0)


def sustained_rate(records: Iterable[RequestRecord]) -> float:
    """The rate the server kept up with from its first answer until arrivals stopped (the last scheduled send,
    or an abandoned run's last answer): the output tokens streamed per second over that span, in requests (the
    completed requests' mean output tokens). Tokens, not completions: a batch that grows completes few requests
    while it streams at full speed, and requests that outlive the span count in part. Without token counts, the
    requests completed per second. Unlike ``throughput_req_s``, neither the start before any answer nor the drain
    after the last send dilutes it; nor does the batch filling up (_streaming_start). 0.0: too few answers."""
    recs = [r for r in records if not r.warmup]
    done = sorted(r.done_at for r in recs if r.ok and r.done_at is not None)
    if len(done) < MIN_SUSTAINED:
        return 0.0
    end = min(max(r.scheduled_at for r in recs), done[-1])
    chunks = [c for r in recs for c in r.chunks]
    per_request = [sum(c.tokens or 0 for c in r.chunks) for r in recs if r.ok]
    if chunks and all(c.tokens is not None for c in chunks) and sum(per_request) > 0:
        start = _streaming_start(recs, min(c.t for c in chunks), end)
        streamed = sum(c.tokens or 0 for c in chunks if start < c.t <= end)
        return streamed / (end - start) / (sum(per_request) / len(per_request)) if end > start else 0.0
    answered = sum(1 for t in done[1:] if t <= end)
    return answered / (end - done[0]) if answered >= MIN_SUSTAINED and end > done[0] else 0.0


def _streaming_start(recs: list[RequestRecord], first_answer: float, end: float) -> float:
    """Where the streamed tokens are counted from: one mean request lifetime after the first send, once the batch
    has filled, when at least another lifetime of arrivals follows; else the first answer. Over its first lifetime
    the batch holds fewer requests than it will, and counting it understates long-lived requests' rate."""
    lifetime = mean_lifetime(recs) or 0.0
    filled = min(r.scheduled_at for r in recs) + lifetime
    return filled if end - filled >= lifetime and filled > first_answer else first_answer


def _tail_slo_values(recs: list[RequestRecord], slos: tuple[SLO, ...]) -> dict[str, float | None]:
    """SLO values over the requests scheduled in the last half of the send window."""
    if not recs:
        return {}
    first, last = min(r.scheduled_at for r in recs), max(r.scheduled_at for r in recs)
    tail = [r for r in recs if r.scheduled_at >= first + (last - first) / 2]
    per_req = [timings(r) for r in tail if r.ok]
    failed = sum(1 for r in tail if not r.ok)
    return {s.key: _slo_value(s, per_req, failed) for s in slos}
