"""TrialResult: the frozen record of one trial, as stored in the study and written to trials.csv.

A failed trial is a *state* (FAIL with ``fail_reason``), an infeasible one is PRUNED before launch.
Stored in Optuna as the user attribute ``result`` (JSON), so a resumed study reads it back unchanged.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from launch.config import KNOBS, ServeConfig


class TrialState(StrEnum):
    """How a trial ended. Its value is what trials.csv, best.json and the stored study say (a str: the
    files read and write the same text as the plain strings before it)."""

    COMPLETE = "COMPLETE"  # measured to its end
    FAIL = "FAIL"  # the launch failed or the server died (fail_reason says why)
    PRUNED = "PRUNED"  # infeasible before launch, or hopeless after its saturation probe


COMPLETE, FAIL, PRUNED = TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED  # short names (tests, bench)
PREDICTED = "predicted"  # key in ``extra``: the capacity perfmodel predicted before launch (tune --predict)


@dataclass(frozen=True)
class TrialResult:
    number: int
    state: TrialState
    is_baseline: bool
    config: ServeConfig
    launched: ServeConfig | None = None  # what was really started (memory emulation may change gmu)
    fail_reason: str | None = None
    slo_met: bool = False
    goodput_req_s: float = 0.0
    best_rate: float | None = None
    saturation_req_s: float | None = None
    report: dict[str, Any] | None = None  # loadtest report at best_rate (or the closest level)
    levels: tuple[dict[str, Any], ...] = ()
    budget: dict[str, Any] | None = None
    readback: dict[str, Any] | None = None
    startup_s: float | None = None
    duration_s: float | None = None
    log_tail: str = ""
    constraint: float = 0.0  # <= 0: every SLO held at some load; > 0: relative excess at the closest level
    extra: dict[str, Any] = field(default_factory=dict)
    # wall-clock times of the trial's phases (tuner.trial.runner): host, device, launched, ready, measured, stopped
    timeline: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = str(self.state)
        d["config"] = self.config.to_dict()
        d["launched"] = self.launched.to_dict() if self.launched else None
        d["levels"] = list(self.levels)
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialResult:
        d = dict(d)
        d["state"] = TrialState(d["state"])
        d["config"] = ServeConfig.from_dict(d["config"])
        d["launched"] = ServeConfig.from_dict(d["launched"]) if d.get("launched") else None
        d["levels"] = tuple(d.get("levels") or ())
        return cls(**d)

    def metric(self, name: str) -> float | None:
        """A metric of the best report, e.g. ``metric("ttft_ms.p95")``."""
        node: Any = self.report
        for part in name.split("."):
            if not isinstance(node, dict) or part not in node:
                return None
            node = node[part]
        return node if isinstance(node, (int, float)) else None

    def csv_row(self) -> dict[str, Any]:
        """One trials.csv row with the contract columns (DESIGN.md)."""
        row: dict[str, Any] = {"number": self.number, "state": self.state, "is_baseline": self.is_baseline}
        for knob in KNOBS:
            row[knob] = getattr(self.config, knob)
        row["model"] = self.config.model
        row["goodput_req_s"] = round(self.goodput_req_s, 4)
        row["best_rate_req_s"] = None if self.best_rate is None else round(self.best_rate, 4)
        row["saturation_req_s"] = None if self.saturation_req_s is None else round(self.saturation_req_s, 4)
        for col, key in (
            ("ttft_p95_ms", "ttft_ms.p95"),
            ("tpot_p95_ms", "tpot_ms.p95"),
            ("e2e_p95_ms", "e2e_ms.p95"),
            ("throughput_tok_s", "throughput_tok_s"),
        ):
            value = self.metric(key)
            row[col] = None if value is None else round(value, 2)
        row["slo_met"] = self.slo_met
        row["fail_reason"] = self.fail_reason
        row["kv_tokens_predicted"] = (self.budget or {}).get("kv_tokens")
        row["kv_tokens_reported"] = (self.readback or {}).get("kv_cache_size_tokens")
        # speculative decoding as vLLM's /metrics counted it at the best load (drafts 0: nothing proposed)
        drafts, rate = self.metric("server.spec_decode_drafts"), self.metric("server.spec_decode_acceptance_rate")
        row["spec_drafts"] = None if drafts is None else int(drafts)
        row["spec_acceptance_rate"] = None if rate is None else round(rate, 4)
        row["startup_s"] = None if self.startup_s is None else round(self.startup_s, 1)
        row["duration_s"] = None if self.duration_s is None else round(self.duration_s, 1)
        predicted = (self.extra.get(PREDICTED) or {}).get("predicted_capacity_req_s")
        row["predicted_capacity_req_s"] = None if predicted is None else round(predicted, 4)
        return row
