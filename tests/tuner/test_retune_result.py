"""`tune retune`'s result is a frozen record; its JSON (``--json``, retune-history.jsonl) has the keys, and their
order, it had as a dict. retune reads best.json through the study's record."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from launch.config import ServeConfig
from loadtest.summary import ReportSummary
from tuner.certify.verify import Verification
from tuner.errors import UsageError
from tuner.retune import read_study, stated_rate
from tuner.retune_result import NO_WINNER, CertifiedCheck, OldBest, Retuned, RetunedBest, RetuneResult, Reverified

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ServeConfig(model="/m", max_num_seqs=32)
OLD = OldBest(2.0, 3.0, True, CONFIG, "f" * 64, {"vllm": "0.32.0"})
HEAD = {
    "study": "/s",
    "model_changed": True,
    "versions_changed": True,
    "changes": {"vllm": {"old": "0.32.0", "new": "0.33.0"}},
}
OLD_JSON = {
    "goodput_req_s": 2.0,
    "rate": 3.0,
    "certified": True,
    "config": CONFIG.to_dict(),
    "fingerprint": "f" * 64,
    "versions": {"vllm": "0.32.0"},
}


def result(new: Reverified | Retuned, regression: bool, updated: bool, changed: bool = True) -> RetuneResult:
    changes = {"vllm": ("0.32.0", "0.33.0")} if changed else {}
    return RetuneResult(Path("/s"), changed, changes, 0.1, OLD, new, regression, updated)


def test_a_reverification_states_the_soak_and_the_goodput_at_its_rate() -> None:
    check = Verification(2.7, True, 2.5, ReportSummary(requests_ok=10, requests_good=9), None, 120.0)
    old = OldBest(2.0, 3.0, True, CONFIG, "f" * 64, {"vllm": "0.32.0"}, goodput_at_rate_req_s=2.4)
    r = RetuneResult(Path("/s"), False, {}, 0.1, old, Reverified(check, 2.43), False, False)
    expected = {
        "study": "/s",
        "model_changed": False,
        "versions_changed": False,
        "changes": {},
        "tolerance": 0.1,
        "old": {**OLD_JSON, "goodput_at_rate_req_s": 2.4},
        "action": "reverified",
        "new": {**check.to_dict(), "goodput_at_rate_req_s": 2.43},
        "regression": False,
        "launch_sh_updated": False,
    }
    assert json.dumps(r.to_dict(), indent=2) == json.dumps(expected, indent=2)


def test_a_retune_without_a_winner_is_a_regression_with_its_reason() -> None:
    r = result(Retuned(Path("/s/retune-1"), None), True, False)
    expected = {
        **HEAD,
        "tolerance": 0.1,
        "old": OLD_JSON,
        "action": "retuned",
        "new": {"study": "/s/retune-1", "slo_met": False, "verification": {"slo_met": False, "fail": NO_WINNER}},
        "regression": True,
        "launch_sh_updated": False,
    }
    assert json.dumps(r.to_dict(), indent=2) == json.dumps(expected, indent=2)
    assert r.action == "retuned" and r.versions_changed and not r.new.verified


@pytest.mark.parametrize(
    ("check", "verification"),
    [
        (CertifiedCheck(2.9), {"certified_rate_req_s": 2.9}),
        (CertifiedCheck(None), {"certified_rate_req_s": None, "fail": "no soak held"}),
        (
            CertifiedCheck(None, held_unconfirmed=True),
            {"certified_rate_req_s": None, "fail": "every rate that held missed on another fresh server"},
        ),
        (Verification(2.6, False, 0.0, None, "slo_not_met: x", 60.0), None),
    ],
)
def test_a_retuned_winner_states_how_it_was_verified(check, verification) -> None:  # type: ignore[no-untyped-def]
    retuned = Retuned(Path("/s/retune-1"), RetunedBest(3, 2.8, 2.9, check.slo_met, CONFIG, check))
    r = result(retuned, not retuned.verified, retuned.verified)
    expected = {
        **HEAD,
        "tolerance": 0.1,
        "old": OLD_JSON,
        "action": "retuned",
        "launch_sh_updated": retuned.verified,
        "new": {
            "study": "/s/retune-1",
            "trial": 3,
            "goodput_req_s": 2.8,
            "rate": 2.9,
            "certified": check.slo_met,
            "config": CONFIG.to_dict(),
            "verification": verification if verification is not None else check.to_dict(),
        },
        "regression": not retuned.verified,
    }
    assert json.dumps(r.to_dict(), indent=2) == json.dumps(expected, indent=2)


def test_retune_reads_the_stated_rate_through_the_record() -> None:
    uncertified = read_study(ROOT / "results" / "h200-llama-3-8b-a30-w4a16")
    assert uncertified.best is not None and stated_rate(uncertified) == uncertified.best.best_rate_req_s
    certified = read_study(ROOT / "results" / "h200-llama-3-8b-a30-w4a16-longdoc")
    assert certified.certified_rate_req_s is not None and stated_rate(certified) == certified.certified_rate_req_s
    assert certified.headline is not None and stated_rate(certified) == certified.headline.certified_rate_req_s


def test_retune_refuses_a_study_without_settings_or_winner(tmp_path: Path) -> None:
    shutil.copy(ROOT / "results" / "h200-llama-3-8b-a30" / "best.json", tmp_path / "best.json")
    raw = json.loads((tmp_path / "best.json").read_text())
    (tmp_path / "best.json").write_text(json.dumps({k: v for k, v in raw.items() if k != "settings"}))
    with pytest.raises(UsageError, match="no settings"):
        read_study(tmp_path)
    (tmp_path / "best.json").write_text(json.dumps({**raw, "slo_met": False, "best": None}))
    with pytest.raises(UsageError, match="no configuration that met its SLO"):
        read_study(tmp_path)
    (tmp_path / "best.json").write_text(
        json.dumps({**raw, "certified_rate_req_s": None, "best": {**raw["best"], "best_rate_req_s": None}})
    )
    with pytest.raises(UsageError, match=r"no key 'best\.best_rate_req_s'"):
        stated_rate(read_study(tmp_path))


def test_a_regression_compares_held_rates_where_a_kv_bound_edge_stated_a_step_below_one() -> None:
    from dataclasses import replace

    from tuner.retune_result import retune_regressed

    def retuned(rate: float, held: float | None = None) -> Retuned:
        return Retuned(Path("/s/r"), RetunedBest(1, rate, rate, True, CONFIG, CertifiedCheck(rate), held))

    # the old study stated what it held (3.0); the new one held 2.95 and states 0.9 x that at a KV-bound edge
    assert not retune_regressed(OLD, retuned(2.655, held=2.95), 0.05)
    assert retune_regressed(OLD, retuned(2.655), 0.05)  # without the record of what held, 2.655 is a regression
    # the old study stated 2.7, a step below the 3.0 it held: a new one holding 2.7 regressed, one holding 2.9 not
    stepped = replace(OLD, rate=2.7, held_rate=3.0)
    assert retune_regressed(stepped, retuned(2.7), 0.05) and not retune_regressed(stepped, retuned(2.9), 0.05)
    assert retune_regressed(OLD, Retuned(Path("/s/r"), None), 0.05)  # no winner
    assert stepped.to_dict()["held_rate"] == 3.0 and "held_rate" not in OLD.to_dict()
