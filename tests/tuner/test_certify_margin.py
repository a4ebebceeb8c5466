"""A held rate whose soaks left too little room under an SLO's limit is stated a step lower (tuner.certify.margin),
in every file alike; a KV-bound edge takes precedence, and a roomy margin keeps the held rate."""

from __future__ import annotations

import csv
import json
from dataclasses import replace
from html import unescape

import pytest

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.server_metrics import ServerSummary
from loadtest.slo import parse_slos
from loadtest.steady import Interval
from loadtest.summary import ReportSummary
from tests.tuner.certify_fakes import numbered_servers, soak
from tuner.certify.certification import Certification, certify
from tuner.certify.confirming import STEP
from tuner.certify.margin import ThinMargin, thin_margin
from tuner.document.parts import StatedHeadline
from tuner.document.reader import Fields
from tuner.report.outputs import write_outputs
from tuner.report.report_html import write_report
from tuner.trial.level import Level
from tuner.trial.result import TrialResult

SLOS = tuple(parse_slos("ttft_p95=2s,tpot_p95=60ms"))


def held(rate: float, ttft: float, high: float | None = None, tpot: float = 20.0, server: int = 0):
    s = soak(rate, True)
    intervals = {"ttft_p95": Interval(ttft, ttft * 0.9, high)} if high is not None else {}
    return replace(s, slo_values={"ttft_p95": ttft, "tpot_p95": tpot}, intervals=intervals, server=server)


def test_two_servers_that_differ_by_more_than_the_room_left_are_a_thin_margin():
    # the paced SmolLM2 study's soaks: 1,223 and 1,728 ms; 505 ms apart, 272 ms left under 2 s
    thin = thin_margin(0.833, (held(0.833, 1223.0), held(0.833, 1728.0, server=1)), SLOS)
    assert thin == ThinMargin(0.833, "ttft_p95", 2000.0, (1223.0, 1728.0), None)
    assert thin.stated_req_s == pytest.approx(STEP * 0.833)
    assert thin.phrase() == (
        "stated a step below the 0.833 req/s that held: its soaks' ttft_p95 (1,223 and 1,728 ms) differ by 505 ms, "
        "more than the 272 ms the worse left under the 2,000-ms limit"
    )
    # the same worst soak with a close twin has room to spare; the spread is judged, not the worst alone
    assert thin_margin(0.833, (held(0.833, 1700.0), held(0.833, 1728.0, server=1)), SLOS) is None


def test_an_interval_reaching_past_the_limit_is_a_thin_margin_even_for_one_soak():
    one = thin_margin(30.652, (held(30.652, 1967.0, high=2005.0),), SLOS)
    assert one is not None and one.interval_high_ms == 2005.0
    assert "its soak's ttft_p95 of 1,967 ms has a 90 % interval reaching 2,005 ms, past the 2,000-ms limit" in (
        one.phrase()
    )
    assert thin_margin(30.652, (held(30.652, 1967.0, high=1990.0),), SLOS) is None


def test_only_soaks_that_held_the_held_rate_count_and_the_thinnest_slo_is_named():
    soaks = (held(2.0, 1900.0), soak(2.2, False), held(1.8, 600.0, tpot=50.0), held(1.8, 700.0, tpot=58.0, server=1))
    thin = thin_margin(1.8, soaks, SLOS)  # TPOT: 58 + 8 > 60; TTFT has room; the 2.0 soak is not the held rate
    assert thin is not None and thin.slo == "tpot_p95" and thin.values_ms == (50.0, 58.0)
    assert thin_margin(None, soaks, SLOS) is None and thin_margin(1.8, soaks, ()) is None


def test_certify_states_a_step_below_a_thin_margin_and_a_kv_edge_comes_first():
    values = iter([1223.0, 1728.0])

    def run_soak(url, rate):
        return held(rate, next(values), server=int(url))

    cert = certify(0, 0.833, 0.4, 120.0, numbered_servers(), run_soak, slos=SLOS)
    assert [s.rate for s in cert.soaks] == [0.833, 0.833]  # no soak at the stated rate
    assert cert.held_rate == 0.833 and cert.certified_rate == pytest.approx(STEP * 0.833) and cert.servers == 2
    assert cert.kv_edge is None and cert.step == cert.thin_margin
    assert "certified 0.750 req/s (120-s soaks held on 2 fresh servers; stated a step below the 0.833" in cert.line()
    assert Certification.from_dict(json.loads(json.dumps(cert.to_dict()))) == cert
    old = {k: v for k, v in cert.to_dict().items() if k != "thin_margin"}  # stored before the rule: the held rate
    assert Certification.from_dict(old).certified_rate == 0.833
    full = Level("rate", 0.9, None, False, 0.9, 0.9, duration_s=120.0, server=ServerSummary(preemptions=3))
    kv = Certification(0, 0.833, 120.0, cert.soaks).with_step((full,), SLOS)
    assert kv.kv_edge is not None and kv.thin_margin is None and kv.certified_rate == pytest.approx(STEP * 0.833)
    roomy = Certification(0, 0.833, 120.0, (held(0.833, 900.0), held(0.833, 1000.0, server=1))).with_step((), SLOS)
    assert roomy.step is None and roomy.certified_rate == 0.833


def test_every_file_of_a_study_states_the_thin_margin_step(tmp_path):
    levels = (Level("rate", 0.833, None, True, 0.833, 0.833, duration_s=150.0),)
    best = TrialResult(number=0, state="COMPLETE", is_baseline=True, config=ServeConfig(model="/m"), slo_met=True,
                       goodput_req_s=0.833, best_rate=0.833, levels=levels,
                       report=ReportSummary(ttft_ms=Dist(p95=1200.0)))  # fmt: skip
    soaks = (held(0.833, 1223.0), held(0.833, 1728.0, server=1))
    cert = Certification(0, 0.833, 120.0, soaks).with_step(levels, SLOS)

    def script(path, b, head):
        path.write_text(f"# capacity: {head.rate_text()}\n")

    write_outputs(tmp_path, [best], {"slo": "ttft_p95=2s", "notes": []}, script, write_report, None, {0: cert})
    head = json.loads((tmp_path / "best.json").read_text())["headline"]
    assert head["certified_rate_req_s"] == pytest.approx(STEP * 0.833) == head["rate_req_s"]
    assert head["kv_edge"] is None and head["thin_margin"]["values_ms"] == [1223.0, 1728.0]
    assert head["line"].startswith("Best: trial 0, 0.750 req/s certified (120-s soaks held on 2 fresh servers; stated")
    assert "differ by 505 ms" in head["line"] and head["line"] in unescape((tmp_path / "report.html").read_text())
    assert "0.750 req/s certified" in (tmp_path / "launch.sh").read_text()
    rows = list(csv.DictReader((tmp_path / "trials.csv").open()))
    assert float(rows[0]["certified_rate_req_s"]) == pytest.approx(STEP * 0.833)
    stated = StatedHeadline.from_fields(Fields(head, "headline"))
    assert stated.thin_margin == cert.thin_margin and stated.step == cert.thin_margin
