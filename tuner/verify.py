"""Re-measure one frozen configuration at one load: the nightly check and the gate before a new
launch.sh replaces the old one."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from launch.config import ServeConfig
from launch.errors import LaunchFailure
from loadtest.runner import LoadSpec, run_load
from tuner.objective import TrialContext, launched_config


@dataclass(frozen=True)
class Verification:
    rate: float
    slo_met: bool
    goodput_req_s: float
    report: dict[str, Any] | None
    fail_reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "rate": self.rate,
            "slo_met": self.slo_met,
            "goodput_req_s": self.goodput_req_s,
            "fail_reason": self.fail_reason,
            "metrics": self.report,
        }


def verify_at_rate(
    config: ServeConfig, ctx: TrialContext, rate: float, progress: Callable[[str], None] = lambda _m: None
) -> Verification:
    """Start ``config``, warm up, run one Poisson level at ``rate`` and score it against the SLOs."""
    from launch.server import start_server

    try:
        with start_server(
            launched_config(config, ctx),
            python=ctx.python,
            log_dir=ctx.log_dir / "verify",
            startup_timeout_s=ctx.startup_timeout_s,
            warmup_requests=ctx.plan.warmup_requests,
            on_progress=progress,
            nice=ctx.server_nice,
        ) as srv:
            rep = run_load(
                LoadSpec(
                    url=srv.url,
                    model=config.name,
                    workload=ctx.workload,
                    slos=ctx.slos,
                    tokenizer=ctx.tokenizer,
                    output_tokens=ctx.output_tokens,
                    seed=ctx.plan.seed,
                    rate=rate,
                    requests=ctx.plan.level_requests(rate),
                )
            )
    except LaunchFailure as exc:
        return Verification(rate, False, 0.0, None, f"{exc.reason}: {exc.detail}")
    progress(
        f"verification at {rate:.3f} req/s: SLO {'met' if rep.slo_met else 'missed'}, "
        f"goodput {rep.goodput_req_s:.3f} req/s"
    )
    return Verification(
        rate, bool(rep.slo_met), rep.goodput_req_s, rep.to_dict(), None if rep.slo_met else "slo_not_met"
    )
