"""TrialResult: the frozen record of one trial, as stored in the study and written to trials.csv.

A failed trial is a *state* (FAIL with ``fail_reason``), an infeasible one is PRUNED before launch.
Stored in Optuna as the user attribute ``result`` (JSON), so a resumed study reads it back unchanged.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any

from launch.config import KNOBS, ServeConfig
from launch.readback import ReadBack
from loadtest.server_metrics import ServerSummary
from loadtest.summary import ReportSummary
from tuner.budget.kv_budget import KVBudget
from tuner.trial.level import Level


class TrialState(StrEnum):
    """How a trial ended. Its value is what trials.csv, best.json and the stored study say (a str: the
    files read and write the same text as the plain strings before it)."""

    COMPLETE = "COMPLETE"  # measured to its end
    FAIL = "FAIL"  # the launch failed or the server died (fail_reason says why)
    PRUNED = "PRUNED"  # infeasible before launch, or hopeless after its saturation probe


COMPLETE, FAIL, PRUNED = TrialState.COMPLETE, TrialState.FAIL, TrialState.PRUNED  # short names (tests, bench)
PREDICTED = "predicted"  # key in ``extra``: the capacity perfmodel predicted before launch (tune --predict)


@dataclass(frozen=True)
class Predicted:
    """The capacity perfmodel predicted before a trial's launch, as stored under ``extra[PREDICTED]``."""

    capacity_req_s: float | None  # None: not predicted (unseen says why)
    demonstrated_error: float | None = None  # the calibration's median relative error on launches it had not seen
    extrapolated: str | None = None  # what the prediction assumes beyond the calibration
    unseen: str | None = None  # why the model could not predict it

    def to_dict(self) -> dict[str, float | str | None]:
        return {
            "predicted_capacity_req_s": self.capacity_req_s,
            "demonstrated_error": self.demonstrated_error,
            "extrapolated": self.extrapolated,
            "unseen": self.unseen,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Predicted:
        return cls(
            d.get("predicted_capacity_req_s"), d.get("demonstrated_error"), d.get("extrapolated"), d.get("unseen")
        )


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
    report: ReportSummary | None = None  # the load report at best_rate (or the closest level)
    levels: tuple[Level, ...] = ()
    budget: KVBudget | None = None  # what tuner.budget predicted for the configuration
    readback: ReadBack | None = None  # what the server said it had (None: it never started)
    startup_s: float | None = None
    pace_ms: float | None = None  # its server's pace, one fixed request alone (launch.pace); None: not timed
    duration_s: float | None = None
    log_tail: str = ""
    constraint: float = 0.0  # <= 0: every SLO held at some load; > 0: relative excess at the closest level
    # an open JSON map stored as it is (e.g. PREDICTED, read through ``predicted``): no one record fits its keys
    extra: dict[str, Any] = field(default_factory=dict)
    # wall-clock times of the trial's phases (tuner.trial.runner): host, device, launched, ready, measured, stopped;
    # a JSON map the runner fills as the phases pass, also stored for trials that never became results
    timeline: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        d.update(
            state=str(self.state),
            config=self.config.to_dict(),
            launched=self.launched.to_dict() if self.launched else None,
            report=self.report.to_dict() if self.report else None,
            levels=[lv.to_dict() for lv in self.levels],
            budget=self.budget.to_dict() if self.budget else None,
            readback=self.readback.to_dict() if self.readback else None,
            extra=copy.deepcopy(self.extra),
            timeline=copy.deepcopy(self.timeline),
        )
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrialResult:
        """A stored result back, also one an older version stored (tuner.search.study.results_of)."""
        d = dict(d)
        d["state"] = TrialState(d["state"])
        d["config"] = ServeConfig.from_dict(d["config"])
        d["launched"] = ServeConfig.from_dict(d["launched"]) if d.get("launched") else None
        d["report"] = ReportSummary.from_dict(d["report"]) if d.get("report") else None
        d["levels"] = tuple(Level.from_dict(lv) for lv in d.get("levels") or ())
        d["budget"] = KVBudget.from_dict(d["budget"]) if d.get("budget") else None
        d["readback"] = ReadBack.from_dict(d["readback"]) if d.get("readback") else None
        return cls(**d)

    @property
    def capacity_req_s(self) -> float:
        """The highest request rate that kept every SLO (0 where none did): what a study ranks, tells its
        sampler and states. Goodput divides by a level's whole length, drain included, so levels of
        different lengths would compare unevenly on it."""
        return self.best_rate if self.slo_met and self.best_rate is not None else 0.0

    @property
    def server(self) -> ServerSummary:
        """vLLM's /metrics at the reported level (all None when there is no report)."""
        return self.report.server if self.report else ServerSummary()

    @property
    def ttft_p95_ms(self) -> float | None:
        return self.report.ttft_ms.p95 if self.report else None

    @property
    def tpot_p95_ms(self) -> float | None:
        return self.report.tpot_ms.p95 if self.report else None

    @property
    def predicted(self) -> Predicted | None:
        """perfmodel's prediction before the launch (tune --predict); None when the trial was not predicted."""
        pred = self.extra.get(PREDICTED)
        return Predicted.from_dict(pred) if pred else None

    def csv_row(self) -> dict[str, Any]:
        """One trials.csv row with the contract columns (DESIGN.md)."""
        row: dict[str, Any] = {"number": self.number, "state": self.state, "is_baseline": self.is_baseline}
        for knob in KNOBS:
            row[knob] = getattr(self.config, knob)
        row["model"] = self.config.model
        row["goodput_req_s"] = round(self.goodput_req_s, 4)
        row["best_rate_req_s"] = None if self.best_rate is None else round(self.best_rate, 4)
        row["saturation_req_s"] = None if self.saturation_req_s is None else round(self.saturation_req_s, 4)
        rep = self.report
        for col, value in (
            ("ttft_p95_ms", self.ttft_p95_ms),
            ("tpot_p95_ms", self.tpot_p95_ms),
            ("e2e_p95_ms", rep.e2e_ms.p95 if rep else None),
            ("throughput_tok_s", rep.throughput_tok_s if rep else None),
        ):
            row[col] = None if value is None else round(value, 2)
        row["slo_met"] = self.slo_met
        row["fail_reason"] = self.fail_reason
        row["kv_tokens_predicted"] = self.budget.kv_tokens if self.budget else None
        row["kv_tokens_reported"] = self.readback.kv_cache_size_tokens if self.readback else None
        # speculative decoding as vLLM's /metrics counted it at the best load (drafts 0: nothing proposed)
        drafts, rate = self.server.spec_decode_drafts, self.server.spec_decode_acceptance_rate
        row["spec_drafts"] = None if drafts is None else int(drafts)
        row["spec_acceptance_rate"] = None if rate is None else round(rate, 4)
        row["startup_s"] = None if self.startup_s is None else round(self.startup_s, 1)
        row["duration_s"] = None if self.duration_s is None else round(self.duration_s, 1)
        predicted = self.predicted.capacity_req_s if self.predicted else None
        row["predicted_capacity_req_s"] = None if predicted is None else round(predicted, 4)
        return row
