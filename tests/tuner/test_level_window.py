"""A search level that met its SLO but was refused on its window alone (arrivals under four request lifetimes) is
stored as unjudged, and a trial whose estimate stops under one says its estimate may be understated."""

from __future__ import annotations

from dataclasses import replace

from loadtest.metrics import compute_metrics
from loadtest.slo import parse_slos
from tests.loadtest.batching import batched_decoding
from tuner.trial.level import Level, level_of, unjudged_note

SLOS = tuple(parse_slos("ttft_p95=2s"))


def long_lived(seconds: float) -> Level:
    """2 req/s of 400-token requests living ~24 s, every first token within a step: the SLO met."""
    out, gauges = batched_decoding(2.0, seconds, seed=5, step_s=0.05, per_seq_s=0.0002, tokens=400)
    return level_of("rate", 2.0, None, compute_metrics(out, slos=SLOS, gauges=gauges))


def test_a_level_whose_requests_outlive_its_window_is_unjudged_not_missed_on_its_slo():
    short = long_lived(60.0)  # 2.5 lifetimes of arrivals
    assert short.slo_met and not short.steady_holds and short.unjudged
    assert short.lifetimes is not None and short.lifetimes < 4 and short.lifetime_s is not None
    assert short.lifetime_s > 20
    judged = long_lived(150.0)
    assert judged.lifetimes is not None and judged.lifetimes >= 4 and not judged.unjudged
    assert Level.from_dict(short.to_dict()) == short
    older = {k: v for k, v in short.to_dict().items() if k not in ("lifetimes", "lifetime_s", "unjudged")}
    assert not Level.from_dict(older).unjudged  # stored before 2026-12-05


def test_a_trial_says_when_its_estimate_stops_under_an_unjudged_level():
    held = Level("rate", 2.01, None, True, 2.0, 2.0)
    refused = replace(
        Level("rate", 2.52, None, True, 2.4, 2.4, steady_holds=False), lifetimes=3.7, lifetime_s=32.2, unjudged=True
    )
    missed = Level("rate", 2.27, None, False, 1.3, 1.3, steady_holds=False)
    note = unjudged_note((held, refused, missed), 2.014, 120.0)
    assert note is not None and "a level at 2.52 req/s met the SLO but ended unjudged" in note
    assert "3.7 request lifetimes of 32.2 s" in note and "at most 120 s" in note and "2.014 req/s" in note
    assert unjudged_note((held, missed), 2.014, 120.0) is None
    assert unjudged_note((replace(refused, rate=1.5), held), 2.014, 120.0) is None  # below the estimate


def test_the_trial_prints_that_note_with_its_result(tmp_path):
    from launch.config import ServeConfig
    from tuner.trial.capacity import CapacityResult
    from tuner.trial.device_rules import DeviceRules
    from tuner.trial.runner import run_trial
    from tuner.trial.testing import FakeLauncher, fake_context

    out, _ = batched_decoding(2.0, 30.0, seed=5)
    best = compute_metrics(out, slos=SLOS)
    refused = replace(Level("rate", 2.52, None, True, 2.4, 2.4, steady_holds=False), lifetimes=3.7, lifetime_s=32.2)
    levels = (Level("rate", 2.01, None, True, 2.0, 2.0), replace(refused, unjudged=True))

    def measure(*_a, **_k):  # type: ignore[no-untyped-def]
        return CapacityResult(1.0, 2.01, best, None, levels)

    said: list[str] = []
    ctx = fake_context(tmp_path, FakeLauncher(), measure, DeviceRules())
    run_trial(1, ServeConfig(model="/m", max_num_seqs=8), False, ctx, progress=said.append)
    assert any("met the SLO but ended unjudged" in m for m in said)
    said.clear()
    levels = (levels[0], refused)  # refused for another reason too: not unjudged
    run_trial(2, ServeConfig(model="/m", max_num_seqs=8), False, ctx, progress=said.append)
    assert not any("unjudged" in m for m in said)
