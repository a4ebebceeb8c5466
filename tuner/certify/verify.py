"""Re-measure one frozen configuration at one load: the nightly check and the gate before a new
launch.sh replaces the old one. One soak (tuner.certify.soak) on a fresh server: the SLOs over the whole soak
and its last half, and no growing queue (loadtest.steady), as a certification judges it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from loadtest.summary import ReportSummary
from tuner.certify.soak import fresh_server, run_soak
from tuner.trial.context import TrialContext


@dataclass(frozen=True)
class Verification:
    rate: float
    slo_met: bool  # the soak held: every SLO over the whole soak and its last half, no growing queue
    goodput_req_s: float
    report: ReportSummary | None
    fail_reason: str | None = None
    seconds: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "slo_met": self.slo_met,
            "goodput_req_s": self.goodput_req_s,
            "fail_reason": self.fail_reason,
            "seconds": self.seconds,
            "metrics": self.report.to_dict() if self.report else None,
        }


def verification_seconds(ctx: TrialContext) -> float:
    """The soak's length: the plan's soak, or a search level's minimum when certification is off."""
    return ctx.plan.soak_s if ctx.plan.soak_s > 0 else ctx.plan.level_duration_s


def verify_at_rate(
    config: ServeConfig, ctx: TrialContext, rate: float, progress: Callable[[str], None] = lambda _m: None
) -> Verification:
    """Start ``config`` on a fresh server, warm up, hold ``rate`` for a soak and judge it."""
    seconds = verification_seconds(ctx)
    try:
        with fresh_server(config, ctx, "verify", progress) as server:
            soak = run_soak(server.url, config, ctx, rate, seconds)
    except LaunchFailure as exc:
        return Verification(rate, False, 0.0, None, f"{exc.reason}: {exc.detail}")
    progress(f"verification: {soak.line()}")
    reason = None if soak.holds else "slo_not_met: " + "; ".join(soak.reasons)
    return Verification(rate, soak.holds, soak.goodput_req_s, soak.report, reason, soak.seconds)
