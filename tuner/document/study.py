"""best.json read back as one frozen record, StudyDocument: ``from_json`` reads the file, and a key it lacks
(or a value of another kind) is one line naming the file and the key (a UsageError: the CLI exits 2).

What every ``tune`` run writes is required. What older files lack (the headline, certifications, cost, …)
reads as None or empty, as the readers before the record took it; a reader that needs such a part asks for
it with ``need``, which fails the same way."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from loadtest.textfile import read_json
from tuner.certify.certification import Certification
from tuner.certify.confirm import Confirmation
from tuner.certify.spare_speed import SpareSpeed
from tuner.certify.spec_rule import SpecVerdict
from tuner.document.checks import (
    ConfirmRun,
    CostBlock,
    Prediction,
    StoredAnswer,
    certification,
    confirmation,
    speculation,
)
from tuner.document.parts import (
    StatedHeadline,
    StoredGpu,
    StoredModel,
    StoredSettings,
    StoredVllm,
    TrialBrief,
)
from tuner.document.reader import DocumentError, Fields
from tuner.errors import UsageError

T = TypeVar("T")


def unreadable(source: str, problem: str) -> UsageError:
    """The one-line error for a best.json that lacks what is read from it."""
    return UsageError(
        f"{source}: {problem}; it was not written by this slotune: re-run `tune --resume` on the study to rewrite it"
    )


def _opt(f: Fields, key: str, parse: Callable[[Fields], T]) -> T | None:
    sub = f.opt_obj(key)
    return parse(sub) if sub is not None else None


def _each(f: Fields, key: str, parse: Callable[[Fields], T]) -> tuple[T, ...]:
    return tuple(parse(sub) for sub in f.objs(key)) if f.has(key) else ()


@dataclass(frozen=True)
class StudyDocument:
    """best.json (tuner.report.outputs.best_document, with the run's metadata: tuner.tune_setup.metadata)."""

    created: str
    settings: StoredSettings | None  # None: a file not written by `tune`; retune needs it, export does not
    slo: str
    workload: str
    gpu: StoredGpu
    model: StoredModel
    vllm: StoredVllm
    versions: Mapping[str, object] | None  # the stack as tuner.versions.collect_versions read it
    notes: tuple[str, ...]
    slo_met: bool
    certified_rate_req_s: float | None  # the best's, where a soak certified it
    headline: StatedHeadline | None  # None: written before the headline existed
    best: TrialBrief | None  # None: no configuration met the SLO
    best_capacities_req_s: tuple[float, ...] | None  # every measurement of the best's configuration (what ranks)
    best_capacity_mean_req_s: float | None
    best_goodputs_req_s: tuple[float, ...] | None  # the same measurements' goodput
    best_goodput_mean_req_s: float | None
    baseline: TrialBrief | None  # vLLM's defaults (None: they did not run)
    gain_over_baseline: float | None
    gain_basis: str | None
    baseline_note: str | None
    overruled: TrialBrief | None  # the search's best, certified below vLLM's defaults
    closest: tuple[TrialBrief, ...]  # the closest misses when none met the SLO
    top: tuple[TrialBrief, ...]
    certifications: tuple[Certification, ...]
    confirmations: tuple[ConfirmRun, ...]  # every --confirm run
    confirmation: Confirmation | None  # those of the current best and rival, merged
    sample_answer: StoredAnswer | None
    spare_speed: SpareSpeed | None  # tune --predict: how much slower a machine may be before the stated rate tips
    speculation: SpecVerdict | None  # the rule's verdict on a speculating best
    speculation_lost: str | None  # what speculating trials measured when the best does not speculate
    predictions: tuple[Prediction, ...]  # tune --predict
    prediction_median_abs_error: float | None
    prediction_median_abs_error_vs_certified: float | None  # with --certify each: against the stated rates
    prediction_median_abs_error_vs_held: float | None  # against the rates the soaks held (None before 2026-12-06)
    cost: CostBlock | None
    source: str = "best.json"  # the file it was read from: errors name it

    @classmethod
    def from_json(cls, path: Path) -> StudyDocument:
        """The best.json at ``path``; UsageError naming the file (and the key) when it is not one."""
        data = read_json(path, UsageError)
        try:
            return cls.from_dict(data, source=str(path))
        except DocumentError as exc:
            raise unreadable(str(path), str(exc)) from None

    @classmethod
    def from_dict(cls, data: object, source: str = "best.json") -> StudyDocument:
        """The record of a parsed best.json; DocumentError names a key it lacks."""
        f = Fields(data)
        return cls(
            created=f.text("created"),
            settings=_opt(f, "settings", StoredSettings.from_fields),
            slo=f.text("slo"),
            workload=f.text("workload"),
            gpu=StoredGpu.from_fields(f.obj("gpu")),
            model=StoredModel.from_fields(f.obj("model")),
            vllm=StoredVllm.from_fields(f.obj("vllm")),
            versions=f.mapping("versions") if f.has("versions") else None,
            notes=tuple(n for n in f.texts("notes") if n is not None),
            slo_met=f.flag("slo_met"),
            certified_rate_req_s=f.opt_number("certified_rate_req_s"),
            headline=_opt(f, "headline", StatedHeadline.from_fields),
            best=_opt(f, "best", TrialBrief.from_fields),
            best_capacities_req_s=f.numbers("best_capacities_req_s") if f.has("best_capacities_req_s") else None,
            best_capacity_mean_req_s=f.opt_number("best_capacity_mean_req_s"),
            best_goodputs_req_s=f.numbers("best_goodputs_req_s") if f.has("best_goodputs_req_s") else None,
            best_goodput_mean_req_s=f.opt_number("best_goodput_mean_req_s"),
            baseline=_opt(f, "baseline", TrialBrief.from_fields),
            gain_over_baseline=f.opt_number("gain_over_baseline"),
            gain_basis=f.opt_text("gain_basis"),
            baseline_note=f.opt_text("baseline_note"),
            overruled=_opt(f, "overruled", TrialBrief.from_fields),
            closest=_each(f, "closest", TrialBrief.from_fields),
            top=_each(f, "top", TrialBrief.from_fields),
            certifications=_each(f, "certifications", certification),
            confirmations=_each(f, "confirmations", ConfirmRun.from_fields),
            confirmation=_opt(f, "confirmation", confirmation),
            sample_answer=_opt(f, "sample_answer", StoredAnswer.from_fields),
            spare_speed=_opt(f, "spare_speed", lambda sub: sub.record(SpareSpeed.from_dict)),
            speculation=_opt(f, "speculation", speculation),
            speculation_lost=f.opt_text("speculation_lost"),
            predictions=_each(f, "predictions", Prediction.from_fields),
            prediction_median_abs_error=f.opt_number("prediction_median_abs_error"),
            prediction_median_abs_error_vs_certified=f.opt_number("prediction_median_abs_error_vs_certified"),
            prediction_median_abs_error_vs_held=f.opt_number("prediction_median_abs_error_vs_held"),
            cost=_opt(f, "cost", CostBlock.from_fields),
            source=source,
        )

    def need(self, value: T | None, key: str) -> T:
        """``value``, read from ``key``; the one-line error naming the file and the key where it is absent."""
        if value is None:
            raise unreadable(self.source, f"no key '{key}'")
        return value


@dataclass(frozen=True)
class CostFigures:
    """What a cost is computed from (tuner.export.cost), read from a best.json as it is being written: its
    metadata may be partial (a GPU profile, the settings), as the cost has always taken it."""

    settings: StoredSettings | None
    gpu: StoredGpu | None
    best: TrialBrief | None
    baseline: TrialBrief | None
    certifications: tuple[Certification, ...]

    @classmethod
    def from_dict(cls, data: object) -> CostFigures:
        f = Fields(data)
        return cls(
            settings=_opt(f, "settings", StoredSettings.from_fields),
            gpu=_opt(f, "gpu", StoredGpu.from_fields),
            best=_opt(f, "best", TrialBrief.from_fields),
            baseline=_opt(f, "baseline", TrialBrief.from_fields),
            certifications=_each(f, "certifications", certification),
        )
