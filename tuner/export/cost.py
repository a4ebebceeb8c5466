"""Dollars per million output tokens at a study's stated rate: arithmetic over best.json's figures.

    $ / 1M output tokens = hourly price of the server's GPUs / (output tokens/s at the rate × 3600) × 1e6

The rate is the certified one where the study has it (best.json ``certified_rate_req_s``, and the load
report of the certifying soak in ``certification``); otherwise the search's estimate (``best_rate_req_s``
of the trial and the report measured at it), and every figure built on it says so (``NOT_CERTIFIED``).
vLLM's defaults (best.json ``baseline``) are costed the same way, from their own figures.

``cost_document`` is the block for best.json; ``cost_lines`` the sentences for the report and console.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

from tuner.budget.gpu import GPUProfile
from tuner.certify.certification import Certification
from tuner.document.parts import StoredGpu, StoredSettings, TrialBrief
from tuner.errors import UsageError
from tuner.export.layout import gpu_count

NOT_CERTIFIED = "not certified: the search's estimate"
# best.json's keys the errors name: a side's certified rate (tuner.report.outputs) and every soak
# (tuner.certify.certification.Certification.to_dict)
CERTIFIED_RATE_KEY = "certified_rate_req_s"
CERTIFICATIONS_KEY = "certifications"


class StatedFigures(Protocol):
    """What a cost is computed from: a study's StudyDocument, or the CostFigures of a best.json being written."""

    @property
    def settings(self) -> StoredSettings | None: ...

    @property
    def gpu(self) -> StoredGpu | None: ...

    @property
    def best(self) -> TrialBrief | None: ...

    @property
    def baseline(self) -> TrialBrief | None: ...

    @property
    def certifications(self) -> tuple[Certification, ...]: ...


@dataclass(frozen=True)
class RateBasis:
    """The rate a figure is stated at and the output tokens/s measured there."""

    rate_req_s: float
    output_tok_s: float
    certified: bool

    @property
    def label(self) -> str:
        return "certified" if self.certified else NOT_CERTIFIED


def usd_per_million_output_tokens(hourly_usd: float, output_tok_s: float) -> float:
    """Cost of one million output tokens for a server costing ``hourly_usd`` that emits ``output_tok_s``."""
    if output_tok_s <= 0:
        raise ValueError(f"output tokens/s must be > 0 to state a cost per token (got {output_tok_s!r})")
    if hourly_usd < 0:
        raise ValueError(f"an hourly price must be >= 0 (got {hourly_usd!r})")
    return hourly_usd / (output_tok_s * 3600.0) * 1e6


def _certified_tok_s(doc: StatedFigures, trial: TrialBrief, rate: float, where: str) -> float:
    """Output tokens/s at ``trial``'s certified ``rate`` (best.json ``certifications``): its held soak's, or, where a
    step below the rate that held is stated (a KV-bound edge or a thin margin), the stated rate times the held
    soak's output tokens a request (no soak runs at the stated rate; the workload draws each request's count)."""
    for cert in doc.certifications:
        if cert.trial != trial.trial:
            continue
        stepped = cert.step is not None and math.isclose(cert.step.stated_req_s, rate, rel_tol=1e-6)
        soaked = cert.held_rate if stepped and cert.held_rate is not None else rate
        for soak in cert.soaks:
            if soak.holds and math.isclose(soak.rate, soaked, rel_tol=1e-6) and soak.throughput_tok_s:
                return float(soak.throughput_tok_s) * (rate / soak.rate if stepped else 1.0)
    raise UsageError(
        f"best.json {where} has {CERTIFIED_RATE_KEY} {rate} but no held soak at that rate in {CERTIFICATIONS_KEY}: "
        "the file is incomplete; re-run the certification (tune --resume) to state a cost"
    )


def _basis(doc: StatedFigures, trial: TrialBrief | None, where: str) -> RateBasis | None:
    if trial is None:
        return None
    rate = trial.certified_rate_req_s
    if rate is not None:
        return RateBasis(rate, _certified_tok_s(doc, trial, rate, where), certified=True)
    if not trial.slo_met or trial.best_rate_req_s is None:
        return None
    tok_s = trial.metrics.throughput_tok_s if trial.metrics is not None else 0.0  # 0 where not measured
    return RateBasis(trial.best_rate_req_s, float(tok_s), certified=False) if tok_s else None


def winner_basis(doc: StatedFigures) -> RateBasis | None:
    """The winner's stated rate (None when no configuration met the SLO)."""
    return _basis(doc, doc.best, "best")


def baseline_basis(doc: StatedFigures) -> RateBasis | None:
    """vLLM's defaults' stated rate (None when they did not run or met the SLO at no tested load)."""
    return _basis(doc, doc.baseline, "baseline")


@dataclass(frozen=True)
class Cost:
    """What one configuration's output tokens cost at its stated rate."""

    who: str  # "winner" or "vLLM's defaults"
    basis: RateBasis
    gpus: int
    gpu_hourly_usd: float  # per GPU

    @property
    def hourly_usd(self) -> float:
        return self.gpu_hourly_usd * self.gpus

    @property
    def usd_per_million_output_tokens(self) -> float:
        return usd_per_million_output_tokens(self.hourly_usd, self.basis.output_tok_s)

    def line(self) -> str:
        return (
            f"{self.who}: ${self.usd_per_million_output_tokens:.4f} per million output tokens at "
            f"{self.basis.rate_req_s:.2f} req/s ({self.basis.label}; {self.basis.output_tok_s:,.0f} output tok/s, "
            f"{self.gpus} GPU x ${self.gpu_hourly_usd:.2f}/h)"
        )

    def to_dict(self) -> dict[str, object]:
        return {
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "rate_req_s": self.basis.rate_req_s,
            "certified": self.basis.certified,
            "rate_basis": self.basis.label,
            "output_tok_s": self.basis.output_tok_s,
            "gpus": self.gpus,
            "hourly_usd": self.hourly_usd,
        }


def study_costs(doc: StatedFigures, gpu_hourly_usd: float) -> tuple[Cost | None, Cost | None]:
    """(winner, vLLM's defaults) at ``gpu_hourly_usd`` per GPU; None where a side has no stated rate."""
    sides = []
    for who, basis, trial in (
        ("winner", winner_basis(doc), doc.best),
        ("vLLM's defaults", baseline_basis(doc), doc.baseline),
    ):
        sides.append(
            None if basis is None or trial is None else Cost(who, basis, gpu_count(trial.config), gpu_hourly_usd)
        )
    return sides[0], sides[1]


def cost_document(doc: StatedFigures, gpu_hourly_usd: float | None, price_source: str) -> dict[str, object]:
    """best.json's ``cost`` block: the price used, its source, and each side's cost (or why none)."""
    out: dict[str, object] = {"gpu_hourly_usd": gpu_hourly_usd, "price_source": price_source}
    if gpu_hourly_usd is None:
        return {**out, "winner": None, "baseline": None}
    winner, baseline = study_costs(doc, gpu_hourly_usd)
    return {**out, "winner": winner and winner.to_dict(), "baseline": baseline and baseline.to_dict()}


def cost_lines(doc: StatedFigures, gpu_hourly_usd: float | None, price_source: str) -> list[str]:
    """The cost sentences for the report, the console and an export's header."""
    if gpu_hourly_usd is None:
        return [f"cost: not stated ({price_source})"]
    winner, baseline = study_costs(doc, gpu_hourly_usd)
    lines = [f"cost at ${gpu_hourly_usd:.2f} per GPU-hour ({price_source}):"]
    lines.append("  " + (winner.line() if winner else "winner: none (no configuration met the SLO)"))
    lines.append(
        "  "
        + (baseline.line() if baseline else "vLLM's defaults: no stated rate (did not run or met the SLO at no load)")
    )
    return lines


def gpu_price(doc: StatedFigures, override: float | None = None) -> tuple[float | None, str]:
    """(US$ per GPU-hour, where it comes from): ``override``, else the ``--gpu-price`` the study was tuned
    with (best.json ``settings.gpu_price``), else the profile of the GPU whose speed was measured: with
    memory emulation (best.json ``gpu.emulated_on``) the tokens came from that GPU, not the target."""
    if override is not None:
        if override < 0:
            raise UsageError(f"--gpu-price {override!r}: give US dollars per GPU-hour, >= 0")
        return override, "--gpu-price"
    tuned_with = doc.settings.gpu_price if doc.settings is not None else None
    if tuned_with is not None:
        return tuned_with, "--gpu-price given to tune"

    gpu = doc.gpu
    name = (gpu.emulated_on or gpu.profile) if gpu is not None else None
    if gpu is None or not name:
        return None, "best.json names no GPU profile; pass --gpu-price USD_PER_GPU_HOUR"
    profile = GPUProfile.load(name)
    why = f"GPU profile {name}"
    if gpu.emulated_on:
        why += f", the GPU measured: {gpu.profile}'s memory was emulated on it"
    if profile.hourly_price_usd is None:
        return None, f"{why} states no hourly_price_usd; pass --gpu-price USD_PER_GPU_HOUR"
    return profile.hourly_price_usd, why
