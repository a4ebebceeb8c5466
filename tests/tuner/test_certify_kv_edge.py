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
from tuner.certify.certification import Certification, Soak, certify
from tuner.certify.confirming import STEP
from tuner.certify.edge import LEVEL, SOAK
from tuner.certify.kv_edge import EDGE_SOAKS, EdgeSoak, KvEdge, kv_edge, next_edge_rate, ran_out_of_kv
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


def preempting(counts: dict[float, int], missed: tuple[float, ...] = ()):
    """A soak runner whose soaks hold (but at ``missed``) with ``counts[rate]`` preemptions (0 where absent)."""

    def run_soak(url, rate):
        n = next((c for r, c in counts.items() if r == pytest.approx(rate)), 0)
        return soak_with(rate, not any(rate == pytest.approx(m) for m in missed), ServerSummary(preemptions=n))

    return run_soak


def test_a_kv_edge_whose_held_soaks_preempted_is_soaked_below_before_it_is_stated():
    above = (level(70.877, False, FULL),)
    run = preempting({66.217: 36, STEP * 66.217: 17})
    cert = certify(1, 66.217, 40.0, 90.0, numbered_servers(), run, levels=above)
    rates = [round(s.rate, 3) for s in cert.soaks]
    assert rates == [66.217, 66.217, 59.595, 53.636] and [s.edge for s in cert.soaks] == [False, False, True, True]
    assert [s.server for s in cert.soaks] == [0, 1, 2, 3]  # each soak below the edge on a fresh server
    assert cert.held_rate == 66.217 and cert.servers == 2 and cert.kv_edge.soaked
    assert cert.certified_rate == pytest.approx(STEP * STEP * 66.217)
    assert "certified 53.636 req/s (90-s soaks held on 2 fresh servers; stated below the 66.217 req/s that held" in (
        cert.line()
    )
    assert ("its held soaks preempted too (36 and 36 preemptions), so the rates below were soaked: 59.595 req/s held "
            "with 17 preemptions, then 53.636 req/s held without a preemption") in cert.line()  # fmt: skip
    assert Certification.from_dict(json.loads(json.dumps(cert.to_dict()))) == cert
    # the held soaks kept their cache: the step is stated without a soak, as before
    quiet = certify(1, 66.217, 40.0, 90.0, numbered_servers(), preempting({}), levels=above)
    assert len(quiet.soaks) == 2 and quiet.certified_rate == pytest.approx(STEP * 66.217)


def test_soaks_below_the_edge_stop_after_edge_soaks_and_the_stated_rate_then_says_it_was_not_soaked():
    above = (level(70.877, False, FULL),)
    run = preempting({66.217: 36, STEP * 66.217: 17, STEP * STEP * 66.217: 5})
    cert = certify(1, 66.217, 40.0, 90.0, numbered_servers(), run, levels=above)
    assert sum(s.edge for s in cert.soaks) == EDGE_SOAKS and not cert.kv_edge.soaked
    assert cert.certified_rate == pytest.approx(STEP**3 * 66.217)
    assert "and so did the soaks below: 59.595 req/s held with 17 preemptions, then 53.636 req/s held with 5" in (
        cert.line()
    )
    assert cert.line().endswith("a step below the last, was not soaked itself; the search's estimate 66.217)")


def test_a_miss_below_the_edge_steps_again_and_leaves_the_held_rate_as_it_was():
    above = (level(70.877, False, FULL),)
    run = preempting({66.217: 36}, missed=(STEP * 66.217,))
    cert = certify(1, 66.217, 40.0, 90.0, numbered_servers(), run, levels=above)
    assert [s.holds for s in cert.soaks] == [True, True, False, True]
    assert cert.held_rate == 66.217 and cert.certified_rate == pytest.approx(STEP * STEP * 66.217)
    assert "59.595 req/s missed without a preemption, then 53.636 req/s held without a preemption" in cert.line()


def test_below_the_floor_the_floor_itself_is_soaked_once():
    edge = KvEdge(66.217, 70.877, LEVEL, 5, 1.0, (36,))
    assert next_edge_rate(edge, 40.0) == pytest.approx(STEP * 66.217)
    assert next_edge_rate(edge, 62.0) == 62.0  # a step would pass the floor
    at_floor = replace(edge, below=(EdgeSoak(62.0, True, 3),))
    assert next_edge_rate(at_floor, 62.0) is None and at_floor.stated_req_s == pytest.approx(STEP * 62.0)
    assert next_edge_rate(replace(edge, held_preemptions=(0, 0)), 40.0) is None  # the held soaks kept their cache
    assert next_edge_rate(None, 40.0) is None


def test_a_cut_certification_goes_on_below_the_edge_where_it_stopped():
    above = (level(70.877, False, FULL),)
    run = preempting({66.217: 36, STEP * 66.217: 17})
    whole = certify(1, 66.217, 40.0, 90.0, numbered_servers(), run, levels=above)
    cut = whole.soaks[:3]
    resumed = certify(1, 66.217, 40.0, 90.0, numbered_servers(), run, prior=cut, levels=above)
    assert [round(s.rate, 3) for s in resumed.soaks] == [66.217, 66.217, 59.595, 53.636]
    assert resumed.soaks[-1].edge and resumed.soaks[-1].server == 3
    assert resumed.certified_rate == whole.certified_rate
    old = {k: v for k, v in whole.kv_edge.to_dict().items() if k != "below"}  # stored before soaks below the edge
    assert KvEdge.from_dict(old).below == () and not Soak.from_dict({**whole.soaks[2].to_dict(), "edge": None}).edge
