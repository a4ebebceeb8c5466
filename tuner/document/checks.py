"""The parts of best.json that say how the winner was checked and what it costs: --confirm's runs, perfmodel's
predictions, the sample answer, the speculation rule's verdict and the cost block. Certifications and the
current confirmation read back into their own records (tuner.certify). Field names are the file's keys."""

from __future__ import annotations

from dataclasses import dataclass

from tuner.certify.certification import Certification
from tuner.certify.confirm import CAPACITY, GOODPUT, Confirmation
from tuner.certify.spec_rule import SpecVerdict
from tuner.document.parts import trial_state
from tuner.document.reader import Fields
from tuner.trial.result import TrialState


def certification(f: Fields) -> Certification:
    """One entry of best.json ``certifications`` (Certification.to_dict)."""
    return f.record(Certification.from_dict)


def _measure(f: Fields) -> str:
    """What a confirmation measured: capacity, or goodput in files written before capacity ranked."""
    return CAPACITY if f.has(f"best_{CAPACITY}_req_s") else GOODPUT


def confirmation(f: Fields) -> Confirmation:
    """best.json ``confirmation`` (Confirmation.to_dict: the means follow from the runs). Files written before
    --confirm counted calls and devices lack them: Confirmation's own defaults say so (one call, none recorded)."""
    measure = _measure(f)
    return Confirmation(
        f.integer("best_trial"),
        f.integer("rival_trial"),
        f.flag("rival_is_baseline"),
        f.numbers(f"best_{measure}_req_s"),
        f.numbers(f"rival_{measure}_req_s"),
        measure=measure,
        calls=f.integer("calls") if f.has("calls") else 1,
        best_devices=f.texts("best_devices", nulls=True) if f.has("best_devices") else (),
        rival_devices=f.texts("rival_devices", nulls=True) if f.has("rival_devices") else (),
    )


@dataclass(frozen=True)
class ConfirmRun:
    """One --confirm run as the study keeps it (tuner.certify.confirm_store.stored_run): capacities, or goodputs
    in runs stored before capacity ranked (one pair of the two is None)."""

    best_trial: int
    rival_trial: int
    rival_is_baseline: bool
    best_capacity_req_s: tuple[float, ...] | None
    rival_capacity_req_s: tuple[float, ...] | None
    best_goodput_req_s: tuple[float, ...] | None
    rival_goodput_req_s: tuple[float, ...] | None
    best_devices: tuple[str | None, ...]  # empty: not recorded (runs before devices were)
    rival_devices: tuple[str | None, ...]
    devices: str | None  # --devices as given
    finished: str

    @classmethod
    def from_fields(cls, f: Fields) -> ConfirmRun:
        def opt(key: str) -> tuple[float, ...] | None:
            return f.numbers(key) if f.has(key) else None

        if _measure(f) == GOODPUT:  # one of the two pairs is required
            f.numbers("best_goodput_req_s")
        return cls(
            f.integer("best_trial"),
            f.integer("rival_trial"),
            f.flag("rival_is_baseline"),
            opt("best_capacity_req_s"),
            opt("rival_capacity_req_s"),
            opt("best_goodput_req_s"),
            opt("rival_goodput_req_s"),
            f.texts("best_devices", nulls=True) if f.has("best_devices") else (),
            f.texts("rival_devices", nulls=True) if f.has("rival_devices") else (),
            f.opt_text("devices"),
            f.text("finished"),
        )


@dataclass(frozen=True)
class Prediction:
    """perfmodel's capacity for a trial it launched, against the one measured (tuner.report.predict_report)."""

    trial: int
    state: TrialState
    predicted_capacity_req_s: float | None  # None: not predicted (unseen says why)
    measured_capacity_req_s: float | None  # None: no rate passed
    error: float | None  # (predicted − measured) / measured
    demonstrated_error_before: float | None
    extrapolated: str | None
    unseen: str | None
    certified_req_s: float | None = None  # with --certify each (absent from studies before it)
    error_vs_certified: float | None = None  # against the stated rate
    held_req_s: float | None = None  # the rate the soaks held (absent from studies before 2026-12-06)
    error_vs_held: float | None = None
    step: str | None = None  # why the stated rate is a step below the held one (a Step's kind); None: it is not

    @classmethod
    def from_fields(cls, f: Fields) -> Prediction:
        return cls(
            f.integer("trial"),
            trial_state(f),
            f.opt_number("predicted_capacity_req_s"),
            f.opt_number("measured_capacity_req_s"),
            f.opt_number("error"),
            f.opt_number("demonstrated_error_before"),
            f.opt_text("extrapolated"),
            f.opt_text("unseen"),
            f.opt_number("certified_req_s"),
            f.opt_number("error_vs_certified"),
            f.opt_number("held_req_s"),
            f.opt_number("error_vs_held"),
            step=f.opt_text("step"),
        )


@dataclass(frozen=True)
class StoredAnswer:
    """best.json ``sample_answer``: the winner's answer to one question (tuner.report.sample_answer)."""

    trial: int
    question: str
    answer: str
    finish_reason: str | None

    @classmethod
    def from_fields(cls, f: Fields) -> StoredAnswer:
        return cls(f.integer("trial"), f.text("question"), f.text("answer"), f.opt_text("finish_reason"))


def speculation(f: Fields) -> SpecVerdict:
    """best.json ``speculation``: the speculation rule's verdict (SpecVerdict.to_dict)."""
    return SpecVerdict(
        kept=f.flag("kept"),
        trial=f.integer("trial"),
        twin_trial=f.opt_integer("twin_trial"),
        acceptance=f.opt_number("acceptance"),
        rate_req_s=f.opt_number("rate_req_s"),
        twin_rate_req_s=f.opt_number("twin_rate_req_s"),
        basis=f.text("basis"),
        line=f.text("line"),
    )


@dataclass(frozen=True)
class StatedCost:
    """One side of best.json ``cost`` (tuner.export.cost.Cost.to_dict)."""

    usd_per_million_output_tokens: float
    rate_req_s: float
    certified: bool
    rate_basis: str
    output_tok_s: float
    gpus: int
    hourly_usd: float

    @classmethod
    def from_fields(cls, f: Fields) -> StatedCost:
        return cls(
            f.number("usd_per_million_output_tokens"),
            f.number("rate_req_s"),
            f.flag("certified"),
            f.text("rate_basis"),
            f.number("output_tok_s"),
            f.integer("gpus"),
            f.number("hourly_usd"),
        )


@dataclass(frozen=True)
class CostBlock:
    """best.json ``cost``: the price used, where it came from, and each side's cost (None: no stated rate)."""

    gpu_hourly_usd: float | None
    price_source: str
    winner: StatedCost | None
    baseline: StatedCost | None

    @classmethod
    def from_fields(cls, f: Fields) -> CostBlock:
        winner, baseline = f.opt_obj("winner"), f.opt_obj("baseline")
        return cls(
            f.opt_number("gpu_hourly_usd"),
            f.text("price_source"),
            StatedCost.from_fields(winner) if winner else None,
            StatedCost.from_fields(baseline) if baseline else None,
        )
