"""The parts of best.json that say what was tuned and what won: the run's settings, GPU, model and vLLM, each
trial as the file states it, and the headline. Field names are the file's keys."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from launch.config import ServeConfig
from loadtest.host_cpu import HostCpu
from loadtest.redact import without_password
from loadtest.summary import ReportSummary
from tuner.certify.edge import MissAbove
from tuner.certify.gain_check import GainCheck
from tuner.certify.kv_edge import KvEdge
from tuner.certify.margin import Step, ThinMargin, stated_step
from tuner.document.reader import DocumentError, Fields
from tuner.settings.tune_settings import TuneSettings
from tuner.trial.result import TrialState


@dataclass(frozen=True)
class StoredSettings:
    """best.json ``settings``: the run's TuneSettings as written (credentials masked: loadtest.redact)."""

    values: Mapping[str, object]
    gpu_price: float | None  # --gpu-price as tuned with (None: not given)

    @classmethod
    def from_fields(cls, f: Fields) -> StoredSettings:
        return cls(dict(f.data), f.opt_number("gpu_price"))

    def tune_settings(self, overrides: Mapping[str, object]) -> TuneSettings:
        """The settings a re-tune starts from: those stored that this version knows, then the set ``overrides``."""
        # JSON values as written: TuneSettings checks each one itself (tuner.settings.fields)
        values: dict[str, Any] = {k: v for k, v in self.values.items() if k in TuneSettings.__dataclass_fields__}
        if isinstance(values.get("storage"), str):  # written masked: the driver reads the password (PGPASSWORD)
            values["storage"] = without_password(values["storage"])
        values.update({k: v for k, v in overrides.items() if v is not None})
        return TuneSettings(**values)


@dataclass(frozen=True)
class StoredGpu:
    """best.json ``gpu``: the profile tuned for, and the GPU whose memory emulated it (None: none)."""

    profile: str
    emulated_on: str | None
    emulation: str | None

    @classmethod
    def from_fields(cls, f: Fields) -> StoredGpu:
        return cls(f.text("profile"), f.opt_text("emulated_on"), f.opt_text("emulation"))


@dataclass(frozen=True)
class StoredModel:
    """best.json ``model``: the weights' folder and fingerprint (launch.fingerprint)."""

    path: str
    fingerprint: str

    @classmethod
    def from_fields(cls, f: Fields) -> StoredModel:
        return cls(f.text("path"), f.text("fingerprint"))


@dataclass(frozen=True)
class StoredVllm:
    """best.json ``vllm``: the version tuned with and its interpreter."""

    version: str
    python: str | None

    @classmethod
    def from_fields(cls, f: Fields) -> StoredVllm:
        return cls(f.text("version"), f.opt_text("python"))


def trial_state(f: Fields) -> TrialState:
    """The ``state`` key: one of TrialState's values."""
    try:
        return TrialState(f.text("state"))
    except ValueError:
        raise DocumentError(f"'{f.path('state')}' is not one of {[s.value for s in TrialState]}") from None


def _config(f: Fields) -> ServeConfig:
    return f.record(ServeConfig.from_dict)


@dataclass(frozen=True)
class TrialBrief:
    """One trial as best.json states it (best, baseline, overruled, closest, top): tuner.report.outputs."""

    trial: int
    state: TrialState
    slo_met: bool
    goodput_req_s: float
    best_rate_req_s: float | None  # the search's highest passing rate (None: none passed)
    config: ServeConfig
    launched: ServeConfig | None  # what the server ran, where memory emulation changed it
    deployed: ServeConfig | None  # what launch.sh starts (the KV cache pinned: tuner.trial.kv_pin); older files: None
    metrics: ReportSummary | None  # the load report at best_rate_req_s
    kv_tokens_predicted: int | None
    kv_tokens_reported: int | None
    fail_reason: str | None
    certified_rate_req_s: float | None  # absent in files written before certification
    pace_ms: float | None  # its server's pace (launch.pace); absent before 2026-12-06 or where it was not timed

    @classmethod
    def from_fields(cls, f: Fields) -> TrialBrief:
        launched, metrics, deployed = f.opt_obj("launched"), f.opt_obj("metrics"), f.opt_obj("deployed")
        return cls(
            trial=f.integer("trial"),
            state=trial_state(f),
            slo_met=f.flag("slo_met"),
            goodput_req_s=f.number("goodput_req_s"),
            best_rate_req_s=f.opt_number("best_rate_req_s"),
            config=_config(f.obj("config")),
            launched=_config(launched) if launched else None,
            deployed=_config(deployed) if deployed else None,
            metrics=metrics.record(ReportSummary.from_dict) if metrics else None,
            kv_tokens_predicted=f.opt_integer("kv_tokens_predicted"),
            kv_tokens_reported=f.opt_integer("kv_tokens_reported"),
            fail_reason=f.opt_text("fail_reason"),
            certified_rate_req_s=f.opt_number("certified_rate_req_s"),
            pace_ms=f.opt_number("pace_ms"),
        )


def host_cpu(f: Fields) -> HostCpu:
    """A HostCpu as its ``to_dict`` writes it (``others`` follows from the rest)."""
    return HostCpu(f.integer("cores"), f.number("seconds"), f.number("busy"), f.number("tree"))


@dataclass(frozen=True)
class StatedHeadline:
    """best.json ``headline``: the capacity and gain every file states (tuner.certify.headline.Headline.to_dict)."""

    best_trial: int | None
    rate_req_s: float | None  # certified where a soak certified it, else the search's estimate
    certified_rate_req_s: float | None
    estimate_req_s: float | None
    soak_s: float | None
    baseline_certified_rate_req_s: float | None
    baseline_estimate_req_s: float | None
    gain_over_baseline: float | None
    gain_basis: str | None  # certified | confirmed | search
    single_measurement: bool
    certification_failed: bool
    overruled_trial: int | None
    overruled_certified_rate_req_s: float | None
    gain_per_gpu: bool | None  # None: written before it was recorded
    certified_on_shared_host: HostCpu | None
    certified_on_servers: int | None  # fresh servers that held it; None: not certified, or written before 2026-12-03
    line: str
    lowest_miss_above: MissAbove | None = None  # tuner.certify.edge; None: nothing above missed, or written before
    kv_edge: KvEdge | None = None  # tuner.certify.kv_edge; None: the held rate is stated, or written before 2026-12-06
    thin_margin: ThinMargin | None = None  # tuner.certify.margin; None: no such step, or written before the rule
    gain_check: GainCheck | None = None  # tuner.certify.gain_check; None: no soak beside the defaults (yet)
    gain_shown: bool | None = None  # a certified gain shown beside the defaults; None: not checked, or no such gain

    @property
    def step(self) -> Step | None:
        """Why a step below the held rate is stated (None: the held rate is)."""
        return stated_step(self.kv_edge, self.thin_margin)

    @classmethod
    def from_fields(cls, f: Fields) -> StatedHeadline:
        host, edge = f.opt_obj("certified_on_shared_host"), f.opt_obj("lowest_miss_above")
        return cls(
            best_trial=f.opt_integer("best_trial"),
            rate_req_s=f.opt_number("rate_req_s"),
            certified_rate_req_s=f.opt_number("certified_rate_req_s"),
            estimate_req_s=f.opt_number("estimate_req_s"),
            soak_s=f.opt_number("soak_s"),
            baseline_certified_rate_req_s=f.opt_number("baseline_certified_rate_req_s"),
            baseline_estimate_req_s=f.opt_number("baseline_estimate_req_s"),
            gain_over_baseline=f.opt_number("gain_over_baseline"),
            gain_basis=f.opt_text("gain_basis"),
            single_measurement=f.flag("single_measurement"),
            certification_failed=f.flag("certification_failed"),
            overruled_trial=f.opt_integer("overruled_trial"),
            overruled_certified_rate_req_s=f.opt_number("overruled_certified_rate_req_s"),
            gain_per_gpu=f.opt_flag("gain_per_gpu"),
            certified_on_shared_host=host_cpu(host) if host else None,
            certified_on_servers=f.opt_integer("certified_on_servers"),
            line=f.text("line"),
            lowest_miss_above=MissAbove(edge.number("rate_req_s"), edge.opt_number("seconds"), edge.text("source"))
            if edge
            else None,
            kv_edge=_kv_edge(f.opt_obj("kv_edge")),
            thin_margin=_thin_margin(f.opt_obj("thin_margin")),
            gain_check=_gain_check(f.opt_obj("gain_check")),
            gain_shown=f.opt_flag("gain_shown"),
        )


def _kv_edge(f: Fields | None) -> KvEdge | None:
    return f.record(KvEdge.from_dict) if f is not None else None  # one reader: the record's own


def _gain_check(f: Fields | None) -> GainCheck | None:
    return f.record(GainCheck.from_dict) if f is not None else None  # one reader: the record's own


def _thin_margin(f: Fields | None) -> ThinMargin | None:
    return f.record(ThinMargin.from_dict) if f is not None else None
