"""A held rate whose edge is the KV cache is stated a step lower (tuner.certify.kv_edge), in every file alike."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from html import unescape

import pytest

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.server_metrics import ServerSummary
from loadtest.summary import ReportSummary
from tests.tuner.certify_fakes import numbered_servers, soak
from tuner.certify.certification import Certification, certify
from tuner.certify.confirming import STEP
from tuner.certify.edge import LEVEL, SOAK
from tuner.certify.kv_edge import KvEdge, kv_edge, ran_out_of_kv
from tuner.document.parts import StatedHeadline
from tuner.document.reader import Fields
from tuner.report.outputs import write_outputs
from tuner.report.report_html import write_report
from tuner.trial.level import Level
from tuner.trial.result import TrialResult

FULL = ServerSummary(preemptions=5, kv_cache_usage_peak=1.0)
ROOMY = ServerSummary(preemptions=0, kv_cache_usage_peak=0.6)


def level(rate: float, passed: bool, server: ServerSummary | None = None) -> Level:
    return Level("rate", rate, None, passed, rate, rate, duration_s=120.0, server=server or ServerSummary())


def soak_with(rate: float, holds: bool, server: ServerSummary):
    s = soak(rate, holds)
    return replace(s, report=replace(s.report, server=server))


def test_a_full_cache_is_a_preemption_or_a_peak_at_99_percent():
    assert ran_out_of_kv(FULL) and ran_out_of_kv(ServerSummary(preemptions=1))
    assert ran_out_of_kv(ServerSummary(kv_cache_usage_peak=0.995))
    assert not ran_out_of_kv(ROOMY) and not ran_out_of_kv(ServerSummary())  # nothing reported: not a full cache


def test_only_the_lowest_miss_above_the_held_rate_decides():
    levels = (level(2.08, True), level(2.606, False, FULL), level(3.127, False, FULL))
    edge = kv_edge(2.345, (soak(2.345, True),), levels)
    assert edge == KvEdge(2.345, 2.606, LEVEL, 5, 1.0, (0,))  # the held soak kept its cache
    assert edge.stated_req_s == pytest.approx(STEP * 2.345)
    # the lowest miss above kept its cache (a seq-bound edge): no step, though a higher miss ran out
    assert kv_edge(2.345, (), (level(2.6, False, ROOMY), level(3.1, False, FULL))) is None
    # a soak's miss counts as a level's does, and wins a tie; nothing held, or nothing above missed: no edge
    assert kv_edge(2.0, (soak_with(2.4, False, FULL),), (level(2.4, False, ROOMY),)).miss_source == SOAK
    assert kv_edge(None, (), levels) is None and kv_edge(3.2, (), levels) is None


def test_certify_states_a_step_below_what_held_where_the_miss_above_ran_out_of_kv():
    def run_soak(url, rate):
        return soak(rate, holds=True)

    above = (level(2.606, False, FULL),)
    cert = certify(0, 2.345, 1.0, 120.0, numbered_servers(), run_soak, levels=above)
    assert [s.rate for s in cert.soaks] == [2.345, 2.345]  # held on two servers; no soak at the stated rate
    assert cert.held_rate == 2.345 and cert.certified_rate == pytest.approx(STEP * 2.345) and cert.servers == 2
    assert "certified 2.111 req/s" in cert.line()
    assert "a step below the 2.345 req/s that held: the lowest miss above it, at 2.606 req/s, ran out" in cert.line()
    assert Certification.from_dict(json.loads(json.dumps(cert.to_dict()))) == cert
    roomy = certify(0, 2.345, 1.0, 120.0, numbered_servers(), run_soak, levels=(level(2.606, False, ROOMY),))
    assert roomy.kv_edge is None and roomy.certified_rate == 2.345
    old = {k: v for k, v in cert.to_dict().items() if k != "kv_edge"}  # stored before the rule: the held rate
    assert Certification.from_dict(old).certified_rate == 2.345


def trial(n: int, rate: float, levels: tuple[Level, ...], baseline: bool = False) -> TrialResult:
    cfg = ServeConfig(model="/m", max_num_seqs=n + 1)
    return TrialResult(number=n, state="COMPLETE", is_baseline=baseline, config=cfg, slo_met=True,
                       goodput_req_s=rate, best_rate=rate, levels=levels,
                       report=ReportSummary(ttft_ms=Dist(p95=500.0)))  # fmt: skip


def test_every_file_of_a_study_states_the_step_and_why(tmp_path):
    levels = (level(2.08, True), level(2.345, True), level(2.606, False, FULL))
    best = trial(0, 2.345, levels, baseline=True)
    held = (soak(2.345, True), replace(soak(2.345, True), server=1))
    cert = Certification(0, 2.345, 120.0, held).with_step(levels)

    def script(path, b, head):
        path.write_text(f"# capacity: {head.rate_text()}\n")

    write_outputs(tmp_path, [best], {"slo": "ttft_p95=2s", "notes": []}, script, write_report, None, {0: cert})
    doc = json.loads((tmp_path / "best.json").read_text())
    head = doc["headline"]
    assert head["certified_rate_req_s"] == pytest.approx(STEP * 2.345) == head["rate_req_s"]
    assert head["kv_edge"]["held_rate_req_s"] == 2.345 and head["kv_edge"]["preemptions"] == 5
    assert head["line"].startswith("Best: trial 0, 2.111 req/s certified (120-s soaks held on 2 fresh servers; stated")
    assert "the lowest rate seen to miss: 2.606 req/s (+23.5 %)" in head["line"]
    assert head["line"] in unescape((tmp_path / "report.html").read_text())
    assert "2.111 req/s certified" in (tmp_path / "launch.sh").read_text()
    rows = list(csv.DictReader((tmp_path / "trials.csv").open()))
    assert float(rows[0]["certified_rate_req_s"]) == pytest.approx(STEP * 2.345)
    assert StatedHeadline.from_fields(Fields(head, "headline")).kv_edge == cert.kv_edge


def test_held_soaks_that_preempted_are_named_in_the_step_and_kept_in_every_record():
    above = (level(70.877, False, FULL),)
    held = (soak_with(66.217, True, ServerSummary(preemptions=36)), soak_with(66.217, True, ServerSummary()))
    edge = kv_edge(66.217, (*held, soak_with(61.0, True, ServerSummary(preemptions=9))), above)
    assert edge.held_preemptions == (36, 0) and edge.held_preempted  # only the held rate's soaks, in soak order
    assert edge.stated_req_s == pytest.approx(STEP * 66.217)  # the caveat says more; the stated rate is the same
    assert "; its held soaks preempted too (36 and 0 preemptions): another draw of prompts, or a longer run" in (
        edge.phrase()
    )
    assert KvEdge.from_dict(json.loads(json.dumps(edge.to_dict()))) == edge
    assert Fields({"kv_edge": edge.to_dict()}, "h").opt_obj("kv_edge") is not None
    cert = Certification(1, 70.877, 90.0, held).with_step(above)
    assert "its held soaks preempted too" in cert.line()
    quiet = kv_edge(66.217, (soak_with(66.217, True, ServerSummary()),), above)
    assert not quiet.held_preempted and "preempted too" not in quiet.phrase()
    old = {k: v for k, v in edge.to_dict().items() if k != "held_preemptions"}  # stored before the field
    assert KvEdge.from_dict(old).held_preemptions == ()
