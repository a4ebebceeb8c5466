"""loadtest.summary: a report's stored form reads back equal, also as older versions stored it."""

from __future__ import annotations

import json
from dataclasses import replace

from loadtest.host_cpu import HostCpu
from loadtest.metrics import compute_metrics
from loadtest.records import Chunk, RequestRecord
from loadtest.server_metrics import ServerSummary
from loadtest.slo import parse_slos
from loadtest.summary import ReportSummary

SERVER = {"preemptions": 2, "queue_time_mean_ms": 12.5, "spec_decode_drafts": 0, "kv_cache_usage_peak": 0.75}


def report():  # type: ignore[no-untyped-def]
    """40 requests a quarter second apart, TTFT growing 1 ms each: SLOs, steadiness, a server and the host."""
    recs = [
        RequestRecord(i, i / 4, i / 4, (Chunk(i / 4 + 0.1 + i / 1000, 1), Chunk(i / 4 + 0.12, 1)), i / 4 + 0.12, 10, 2)
        for i in range(40)
    ]
    rep = compute_metrics(recs, slos=parse_slos("ttft_p95=2s,tpot_p90=50ms"), server=dict(SERVER))
    return replace(rep, host=HostCpu(2, 10.0, 1.5, 1.0))


def test_the_stored_json_reads_back_to_the_same_summary_and_json() -> None:
    rep = report()
    assert rep.steady is not None and rep.host is not None  # every part of the record is exercised
    stored = json.loads(json.dumps(rep.to_dict()))
    back = ReportSummary.from_dict(stored)
    assert back == rep.summary() and back.to_dict() == stored
    assert (
        back.server.preemptions == 2
        and back.server.spec_decode_drafts == 0
        and back.server.prefix_cache_hit_rate is None
    )
    assert back.ttft_ms.p95 == rep.ttft_ms.p95 and [str(s) for s in back.slos] == ["ttft_p95=2s", "tpot_p90=50ms"]


def test_a_report_stored_before_steadiness_and_host_cpu_reads_back_without_them() -> None:
    stored = json.loads(json.dumps(report().to_dict()))
    for key in ("steady", "host_cpu"):
        del stored[key]
    back = ReportSummary.from_dict(stored)
    assert back.steady is None and back.host_cpu is None
    assert {k: v for k, v in back.to_dict().items() if k in stored} == stored


def test_server_summary_writes_only_what_vllm_reported() -> None:
    assert ServerSummary.from_dict(SERVER).to_dict() == SERVER
    assert ServerSummary.from_dict({}).to_dict() == {} and ServerSummary.from_dict(None) == ServerSummary()
