"""The lowest rate seen to miss above the stated capacity (tuner.certify.edge), and every file stating it."""

from __future__ import annotations

import json
from dataclasses import replace
from html import unescape

from launch.config import ServeConfig
from loadtest.dist import Dist
from loadtest.summary import ReportSummary
from tests.tuner.certify_fakes import soak
from tuner.certify.certification import Certification
from tuner.certify.edge import LEVEL, SOAK, MissAbove, lowest_miss_above
from tuner.certify.headline import headline
from tuner.document.parts import StatedHeadline
from tuner.document.reader import Fields
from tuner.report.outputs import summarize, write_outputs
from tuner.report.report_html import write_report
from tuner.trial.level import Level
from tuner.trial.result import TrialResult


def level(rate: float, passed: bool, seconds: float = 40.0, kind: str = "rate") -> Level:
    return Level(kind, rate, None, passed, rate, rate, duration_s=seconds)


def trial(n: int, rate: float, levels: tuple[Level, ...], baseline: bool = False) -> TrialResult:
    cfg = ServeConfig(model="/m", max_num_seqs=n + 1)
    return TrialResult(number=n, state="COMPLETE", is_baseline=baseline, config=cfg, slo_met=True,
                       goodput_req_s=rate, best_rate=rate, levels=levels,
                       report=ReportSummary(ttft_ms=Dist(p95=500.0)))  # fmt: skip


def test_the_lowest_miss_above_comes_from_soaks_and_search_levels_alike():
    levels = (level(8.0, True), level(12.0, False, 72.0), level(10.5, False, 30.0), level(9.5, True))
    soaks = (soak(11.0, False), soak(9.5, True))
    assert lowest_miss_above(9.5, soaks, levels) == MissAbove(10.5, 30.0, LEVEL)
    assert lowest_miss_above(9.5, soaks, levels[:2]) == MissAbove(11.0, 30.0, SOAK)
    # a tie goes to the soak (the longer measurement); a miss at or below the stated rate bounds nothing above it
    assert lowest_miss_above(9.5, (soak(10.5, False),), levels).source == SOAK
    assert lowest_miss_above(12.0, soaks, levels) is None


def test_a_miss_cleared_on_its_own_server_and_the_probe_bound_nothing():
    retried = (soak(11.0, False), soak(11.0, True), soak(10.0, True))  # the retry after a shared host held 11.0
    probe = level(20.0, False, kind="probe")
    assert lowest_miss_above(10.0, retried, (probe,)) is None
    other_server = (soak(11.0, False), replace(soak(11.0, True), server=1))  # another server: the miss stands
    assert lowest_miss_above(10.0, other_server, ()) == MissAbove(11.0, 30.0, SOAK)
    # held on the first server, missed on the second: the miss is told, with its own length, not the hold's
    held_first = (replace(soak(11.0, True), seconds=103.0), replace(soak(11.0, False), server=1, seconds=141.0))
    assert lowest_miss_above(10.0, held_first, ()) == MissAbove(11.0, 141.0, SOAK)


def test_the_phrase_names_the_rate_its_distance_and_what_missed():
    assert MissAbove(32.44, 71.9, LEVEL).phrase(30.746) == (
        "the lowest rate seen to miss: 32.440 req/s (+5.5 %), a 72-s search level"
    )
    no_length = MissAbove(11.0, None, SOAK).phrase(10.0)
    assert no_length == "the lowest rate seen to miss: 11.000 req/s (+10.0 %), a soak on a fresh server"


def test_every_file_of_a_study_states_the_lowest_miss_above_its_capacity(tmp_path):
    base = trial(0, 4.0, (level(4.0, True), level(6.0, False)), baseline=True)
    best = trial(1, 10.0, (level(10.0, True), level(12.0, False, 41.2)))
    cert = Certification(1, 10.0, 60.0, (soak(10.0, False), soak(9.0, True), replace(soak(9.0, True), server=1)))

    def script(path, b, head):
        path.write_text(f"# capacity: {head.rate_text()}\n")

    write_outputs(tmp_path, [base, best], {"slo": "ttft_p95=2s", "notes": []}, script, write_report, None, {1: cert})
    doc = json.loads((tmp_path / "best.json").read_text())
    phrase = "the lowest rate seen to miss: 10.000 req/s (+11.1 %), a 30-s soak on a fresh server"
    assert phrase in doc["headline"]["line"] and phrase in (tmp_path / "launch.sh").read_text()
    assert doc["headline"]["line"] in unescape((tmp_path / "report.html").read_text())
    assert doc["headline"]["lowest_miss_above"] == {"rate_req_s": 10.0, "seconds": 30.0, "source": SOAK}
    stated = StatedHeadline.from_fields(Fields(doc["headline"], "headline"))
    assert stated.lowest_miss_above == MissAbove(10.0, 30.0, SOAK)


def test_an_uncertified_estimate_states_the_search_level_that_missed_above_it():
    base = trial(0, 4.0, (level(4.0, True),), baseline=True)
    best = trial(1, 10.0, (level(10.0, True), level(12.0, False, 41.2)))
    head = headline(summarize([base, best]), {}, None)
    assert head.rate_text() == (
        "10.000 req/s, the search's estimate (not certified; the lowest rate seen to miss: 12.000 req/s (+20.0 %), "
        "a 41-s search level)"
    )
    failed = Certification(1, 10.0, 60.0, (soak(10.0, False), soak(9.0, False)))
    assert headline(summarize([base, best]), {1: failed}, None).miss_above is None  # the soaks missed below it
