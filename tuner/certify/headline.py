"""The one headline of a study: the capacity it states and its gain over vLLM's defaults.

Computed once, here, and read by every output (console, best.json, report.html, launch.sh's header,
retune) so no two files of a study disagree. The capacity is the certified rate where a soak certified
it, else the search's estimate, said as such. The gain compares like with like: both certified; else
the means of both --confirm re-measurements; else both search estimates (saying when one of them is a
single measurement).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from loadtest.host_cpu import HostCpu
from tuner.certify.certification import Certification
from tuner.certify.certified import config_levels
from tuner.certify.confirm import Confirmation
from tuner.certify.edge import MissAbove, lowest_miss_above
from tuner.certify.gain_check import GainVerdict, verdict
from tuner.certify.kv_edge import KvEdge
from tuner.certify.margin import Step, ThinMargin, stated_step
from tuner.certify.summary import Summary

CERTIFIED, CONFIRMED, SEARCH = "certified", "confirmed", "search"
BASIS_TEXT = {
    CERTIFIED: "both certified by soaks on fresh servers",
    CONFIRMED: "means of the --confirm re-measurements on fresh servers",
    SEARCH: "the search's levels",
}


def uncertified_why(held_unconfirmed: bool) -> str:
    """Why a certification stated no rate, in the words every file of the study uses."""
    return "every rate that held missed on another fresh server" if held_unconfirmed else "no soak held"


@dataclass(frozen=True)
class Headline:
    best_trial: int | None
    best_is_baseline: bool
    estimate_req_s: float | None  # the search's highest passing rate for the best
    certified_req_s: float | None
    soak_s: float | None
    baseline_estimate_req_s: float | None
    baseline_certified_req_s: float | None
    gain: float | None
    basis: str | None  # CERTIFIED | CONFIRMED | SEARCH; None without a gain
    single_measurement: bool = False  # the gain rests on one search measurement of the best or the defaults
    certification_failed: bool = False  # a soak was asked for and no rate was certified
    held_unconfirmed: bool = False  # ... although a soak held: each rate that held missed on another fresh server
    overruled_trial: int | None = None  # the search's best, certified below vLLM's defaults (or another trial)
    overruled_req_s: float | None = None
    gpus: tuple[int, int] | None = None  # (best, defaults) when their layouts differ: the gain is then per GPU
    shared_host: HostCpu | None = None  # the certifying soak's host, when other processes used a notable share
    servers: int = 1  # fresh servers that held the certified rate (tuner.certify.confirming)
    miss_above: MissAbove | None = None  # the lowest rate above the stated one that missed (tuner.certify.edge)
    kv_edge: KvEdge | None = None  # a step below the held rate is stated: its edge is the KV cache (kv_edge)
    thin_margin: ThinMargin | None = None  # a step below the held rate is stated: its soaks' margin was thin
    beside: GainVerdict | None = None  # a certified gain: what its soak beside the defaults showed (gain_check)

    @property
    def gain_shown(self) -> bool | None:
        """A certified gain, shown beside the defaults (None: no certified gain, or not checked yet)."""
        return self.beside.shown if self.beside is not None else None

    @property
    def step(self) -> Step | None:
        """Why a step below the held rate is stated (tuner.certify.certification.Certification.step)."""
        return stated_step(self.kv_edge, self.thin_margin)

    @property
    def rate_req_s(self) -> float | None:
        """The stated capacity: certified where a soak certified it, else the search's estimate."""
        return self.certified_req_s if self.certified_req_s is not None else self.estimate_req_s

    def rate_text(self) -> str:
        if self.certified_req_s is not None:
            shared = (
                f"; during it {self.shared_host.phrase()}, so a quiet host may hold more"
                if self.shared_host is not None
                else ""
            )
            return (
                f"{self.certified_req_s:.3f} req/s certified ({self.soak_s:.0f}-s {self._where()}{self._step()}; "
                f"the search's estimate {self.estimate_req_s:.3f}{self._edge()}{shared})"
            )
        if self.estimate_req_s is None:
            return "no rate held"
        why = "not certified"
        if self.certification_failed:
            why = uncertified_why(self.held_unconfirmed)
        return f"{self.estimate_req_s:.3f} req/s, the search's estimate ({why}{self._edge()})"

    def _step(self) -> str:
        return f"; {self.step.phrase()}" if self.step is not None else ""

    def _edge(self) -> str:
        stated = self.rate_req_s
        return f"; {self.miss_above.phrase(stated)}" if self.miss_above is not None and stated else ""

    def overruled_text(self) -> str:
        held = "no rate" if self.overruled_req_s is None else f"only {self.overruled_req_s:.3f} req/s"
        return (
            f"the search's best, trial {self.overruled_trial}, certified {held} (its short search levels overstated it)"
        )

    def gain_text(self) -> str:
        if self.overruled_trial is not None and self.best_is_baseline:
            return f"vLLM's defaults are kept: {self.overruled_text()}"
        if self.overruled_trial is not None:
            return f"{self._gain_text()}; it certified the highest rate: {self.overruled_text()}"
        return self._gain_text()

    def _gain_text(self) -> str:
        if self.best_is_baseline:
            return "vLLM's defaults were the best configuration tried"
        if self.gain is None or self.basis is None:
            return "no gain over vLLM's defaults stated (they have no comparable measurement)"
        per_gpu = " per GPU" if self.gpus else ""
        text = f"{self.gain * 100:+.0f}%{per_gpu} over vLLM's defaults ({BASIS_TEXT[self.basis]}"
        if self.basis == CERTIFIED:
            text += f": {self.certified_req_s:.3f} vs {self.baseline_certified_req_s:.3f} req/s{self._beside()}"
        if self.single_measurement:
            text += "; a single measurement of one side"
        if (under := self._certified_under_defaults_estimate()) is not None:
            text += (
                f"; but certified at {under[0]:.3f} req/s{per_gpu} it is below the defaults' uncertified "
                f"{under[1]:.3f}: that it beats them is not shown (--certify all soaks both)"
            )
        if self.gpus:
            text += f"; {self.gpus[0]} GPUs against {self.gpus[1]}"
        return text + ")"

    def _beside(self) -> str:
        return f"; {self.beside.phrase()}" if self.beside is not None else ""

    def _certified_under_defaults_estimate(self) -> tuple[float, float] | None:
        """(certified, defaults' estimate), per GPU where the layouts differ, when a search-basis gain's certified
        rate is below the defaults' search estimate: the short levels that gave the gain overstated the winner,
        and the defaults' were never soaked. None otherwise."""
        c, b = self.certified_req_s, self.baseline_estimate_req_s
        if self.basis != SEARCH or c is None or b is None:
            return None
        if self.gpus:
            c, b = c / self.gpus[0], b / self.gpus[1]
        return (c, b) if c < b else None

    def line(self) -> str:
        if self.best_trial is None:
            return "No configuration met the SLOs at any tested load."
        return f"Best: trial {self.best_trial}, {self.rate_text()}; {self.gain_text()}"

    def _where(self) -> str:
        return "soak on a fresh server" if self.servers < 2 else f"soaks held on {self.servers} fresh servers"

    def to_dict(self) -> dict[str, Any]:
        return {
            "best_trial": self.best_trial,
            "rate_req_s": self.rate_req_s,
            "certified_rate_req_s": self.certified_req_s,
            "estimate_req_s": self.estimate_req_s,
            "soak_s": self.soak_s,
            "baseline_certified_rate_req_s": self.baseline_certified_req_s,
            "baseline_estimate_req_s": self.baseline_estimate_req_s,
            "gain_over_baseline": self.gain,
            "gain_basis": self.basis,
            "single_measurement": self.single_measurement,
            "certification_failed": self.certification_failed,
            "overruled_trial": self.overruled_trial,
            "overruled_certified_rate_req_s": self.overruled_req_s,
            "gain_per_gpu": self.gpus is not None,
            "certified_on_shared_host": self.shared_host.to_dict() if self.shared_host is not None else None,
            "certified_on_servers": self.servers if self.certified_req_s is not None else None,
            "lowest_miss_above": self.miss_above.to_dict() if self.miss_above is not None else None,
            "kv_edge": self.kv_edge.to_dict() if self.kv_edge is not None else None,
            "thin_margin": self.thin_margin.to_dict() if self.thin_margin is not None else None,
            "gain_check": self.beside.check.to_dict() if self.beside and self.beside.check else None,
            "gain_shown": self.gain_shown,
            "line": self.line(),
        }


def headline(
    summary: Summary, certifications: Mapping[int, Certification], confirmation: Confirmation | None
) -> Headline:
    stated = _headline(summary, certifications, confirmation)
    best, base = summary.best, summary.baseline
    if stated.gain is None or best is None or base is None or best.config.gpus == base.config.gpus:
        return stated
    # a layout over more GPUs than the defaults' one: compare what each GPU serves, not the whole host
    per_gpu = (1 + stated.gain) * base.config.gpus / best.config.gpus - 1
    return replace(stated, gain=per_gpu, gpus=(best.config.gpus, base.config.gpus))


def _headline(
    summary: Summary, certifications: Mapping[int, Certification], confirmation: Confirmation | None
) -> Headline:
    best, base = summary.best, summary.baseline
    if best is None:
        return Headline(None, False, None, None, None, None, None, None, None)
    cert = certifications.get(best.number)
    base_cert = certifications.get(base.number) if base is not None else None
    base_rate = base.best_rate if base is not None and base.slo_met else None
    stated = Headline(
        best_trial=best.number,
        best_is_baseline=best.is_baseline,
        estimate_req_s=best.best_rate,
        certified_req_s=cert.certified_rate if cert else None,
        soak_s=cert.soak_s if cert else None,
        baseline_estimate_req_s=base_rate,
        baseline_certified_req_s=base_cert.certified_rate if base_cert else None,
        gain=None,
        basis=None,
        certification_failed=cert is not None and cert.certified_rate is None,
        held_unconfirmed=cert is not None and cert.certified_rate is None and any(s.holds for s in cert.soaks),
        shared_host=_shared_host(cert),
        servers=max(1, cert.servers) if cert else 1,
        kv_edge=cert.kv_edge if cert else None,
        thin_margin=cert.thin_margin if cert else None,
    )
    stated = replace(stated, miss_above=_miss_above(stated, summary, cert))
    if summary.overruled is not None:
        lost = certifications.get(summary.overruled.number)
        stated = replace(
            stated, overruled_trial=summary.overruled.number, overruled_req_s=lost.certified_rate if lost else None
        )
    if best.is_baseline:
        return stated
    if cert and base_cert and cert.certified_rate and base_cert.certified_rate:
        gain = cert.certified_rate / base_cert.certified_rate - 1
        return replace(stated, gain=gain, basis=CERTIFIED, beside=verdict(cert, base_cert))
    if confirmation is not None and confirmation.rival_is_baseline and confirmation.gain_on_means is not None:
        return replace(stated, gain=confirmation.gain_on_means, basis=CONFIRMED)
    if summary.gain_over_baseline is not None:
        single = min(len(summary.best_capacities), len(summary.baseline_capacities)) == 1
        return replace(stated, gain=summary.gain_over_baseline, basis=SEARCH, single_measurement=single)
    return stated


def _miss_above(stated: Headline, summary: Summary, cert: Certification | None) -> MissAbove | None:
    """The lowest miss above the stated capacity, over the best configuration's soaks and every search level of it
    (each of its measurements); None where no rate is stated or the certification stated none."""
    best, rate = summary.best, stated.rate_req_s
    if best is None or rate is None or stated.certification_failed:
        return None
    return lowest_miss_above(rate, cert.soaks if cert else (), config_levels(summary, best))


def _shared_host(cert: Certification | None) -> HostCpu | None:
    """The certifying soak's host use, when other processes took a notable share of its cores."""
    soak = cert.certified_soak if cert else None
    return soak.host if soak is not None and soak.host is not None and soak.host.notable else None
