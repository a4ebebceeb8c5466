"""A soak's load (tuner.certify.soak): its seconds at the least, longer while they hold too few request lifetimes
for loadtest.steady to judge, and never past SOAK_STRETCH times its seconds."""

from __future__ import annotations

from pathlib import Path

from launch.config import ServeConfig
from loadtest.steady import MIN_LIFETIMES
from tuner.certify.soak import SOAK_LIFETIMES, SOAK_STRETCH, soak_spec
from tuner.trial.device_rules import DeviceRules
from tuner.trial.testing import FakeLauncher, fake_context


def test_a_soak_outlasts_the_lifetimes_its_judgement_needs_within_a_bound(tmp_path: Path) -> None:
    ctx = fake_context(tmp_path, FakeLauncher(), lambda *_a, **_k: None, DeviceRules())
    spec = soak_spec("http://127.0.0.1:1", ServeConfig(model="/m"), ctx, rate=7.0, seconds=60.0, attempt=0)
    assert spec.rate == 7.0 and spec.requests == 420 and spec.abandon_when_lost
    assert spec.steady_e2e_multiple == SOAK_LIFETIMES and SOAK_LIFETIMES > MIN_LIFETIMES
    assert spec.max_duration_s == SOAK_STRETCH * 60.0
    other = soak_spec("http://127.0.0.1:1", ServeConfig(model="/m"), ctx, rate=7.0, seconds=60.0, attempt=1)
    assert other.seed != spec.seed  # another attempt on one server draws other prompts
