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
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from launch.config import ServeConfig
from loadtest.summary import ReportSummary
from tuner.budget.gpu import GPUProfile
from tuner.errors import UsageError
from tuner.export.layout import gpu_count

NOT_CERTIFIED = "not certified: the search's estimate"
# where a side of best.json (the top level for the winner, ``baseline`` for vLLM's defaults) keeps its
# certified rate and the output tokens/s of the soak at that rate
CERTIFIED_RATE_KEY = "certified_rate_req_s"  # on best.json's ``best`` and ``baseline`` (tuner.report.outputs)
# best.json: each trial's soaks (tuner.certify.certification.Certification.to_dict)
CERTIFICATIONS_KEY = "certifications"


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


def _certified_tok_s(doc: Mapping[str, Any], trial: Mapping[str, Any], rate: float, where: str) -> float:
    """Output tokens/s of the soak that certified ``trial`` at ``rate`` (best.json ``certifications``)."""
    for cert in doc.get(CERTIFICATIONS_KEY) or []:
        if cert.get("trial") != trial.get("trial"):
            continue
        for soak in cert.get("soaks") or []:
            same = math.isclose(float(soak.get("rate_req_s") or 0.0), rate, rel_tol=1e-6)
            if soak.get("holds") and same and soak.get("throughput_tok_s"):
                return float(soak["throughput_tok_s"])
    raise UsageError(
        f"best.json {where} has {CERTIFIED_RATE_KEY} {rate} but no held soak at that rate in {CERTIFICATIONS_KEY}: "
        "the file is incomplete; re-run the certification (tune --resume) to state a cost"
    )


def _basis(doc: Mapping[str, Any], trial: Mapping[str, Any] | None, where: str) -> RateBasis | None:
    if not trial:
        return None
    rate = trial.get(CERTIFIED_RATE_KEY)
    if rate is not None:
        return RateBasis(float(rate), _certified_tok_s(doc, trial, float(rate), where), certified=True)
    if not trial.get("slo_met") or trial.get("best_rate_req_s") is None:
        return None
    tok_s = ReportSummary.from_dict(trial.get("metrics") or {}).throughput_tok_s  # 0 where not measured
    return RateBasis(float(trial["best_rate_req_s"]), float(tok_s), certified=False) if tok_s else None


def winner_basis(doc: Mapping[str, Any]) -> RateBasis | None:
    """The winner's stated rate (None when no configuration met the SLO)."""
    return _basis(doc, doc.get("best"), "best")


def baseline_basis(doc: Mapping[str, Any]) -> RateBasis | None:
    """vLLM's defaults' stated rate (None when they did not run or met the SLO at no tested load)."""
    return _basis(doc, doc.get("baseline"), "baseline")


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "usd_per_million_output_tokens": self.usd_per_million_output_tokens,
            "rate_req_s": self.basis.rate_req_s,
            "certified": self.basis.certified,
            "rate_basis": self.basis.label,
            "output_tok_s": self.basis.output_tok_s,
            "gpus": self.gpus,
            "hourly_usd": self.hourly_usd,
        }


def _config(trial: Mapping[str, Any] | None) -> ServeConfig | None:
    return ServeConfig.from_dict(trial["config"]) if trial and trial.get("config") else None


def study_costs(doc: Mapping[str, Any], gpu_hourly_usd: float) -> tuple[Cost | None, Cost | None]:
    """(winner, vLLM's defaults) at ``gpu_hourly_usd`` per GPU; None where a side has no stated rate."""
    sides = []
    for who, basis, trial in (
        ("winner", winner_basis(doc), doc.get("best")),
        ("vLLM's defaults", baseline_basis(doc), doc.get("baseline")),
    ):
        config = _config(trial)
        sides.append(None if basis is None or config is None else Cost(who, basis, gpu_count(config), gpu_hourly_usd))
    return sides[0], sides[1]


def cost_document(doc: Mapping[str, Any], gpu_hourly_usd: float | None, price_source: str) -> dict[str, Any]:
    """best.json's ``cost`` block: the price used, its source, and each side's cost (or why none)."""
    out: dict[str, Any] = {"gpu_hourly_usd": gpu_hourly_usd, "price_source": price_source}
    if gpu_hourly_usd is None:
        return {**out, "winner": None, "baseline": None}
    winner, baseline = study_costs(doc, gpu_hourly_usd)
    return {**out, "winner": winner and winner.to_dict(), "baseline": baseline and baseline.to_dict()}


def cost_lines(doc: Mapping[str, Any], gpu_hourly_usd: float | None, price_source: str) -> list[str]:
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


def gpu_price(doc: Mapping[str, Any], override: float | None = None) -> tuple[float | None, str]:
    """(US$ per GPU-hour, where it comes from): ``override``, else the ``--gpu-price`` the study was tuned
    with (best.json ``settings.gpu_price``), else the profile of the GPU whose speed was measured: with
    memory emulation (best.json ``gpu.emulated_on``) the tokens came from that GPU, not the target."""
    if override is not None:
        if override < 0:
            raise UsageError(f"--gpu-price {override!r}: give US dollars per GPU-hour, >= 0")
        return override, "--gpu-price"
    tuned_with = (doc.get("settings") or {}).get("gpu_price")
    if tuned_with is not None:
        return float(tuned_with), "--gpu-price given to tune"

    gpu = doc.get("gpu") or {}
    name = gpu.get("emulated_on") or gpu.get("profile")
    if not name:
        return None, "best.json names no GPU profile; pass --gpu-price USD_PER_GPU_HOUR"
    profile = GPUProfile.load(str(name))
    why = f"GPU profile {name}"
    if gpu.get("emulated_on"):
        why += f", the GPU measured: {gpu.get('profile')}'s memory was emulated on it"
    if profile.hourly_price_usd is None:
        return None, f"{why} states no hourly_price_usd; pass --gpu-price USD_PER_GPU_HOUR"
    return profile.hourly_price_usd, why
