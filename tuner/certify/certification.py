"""Certify a capacity: hold a fresh server at the stated rate for minutes; step down until it holds.

The capacity search brackets the edge with levels that last several request lifetimes; a level is still short,
and the best of many short levels is biased upwards. A certified rate is one a fresh server held for ``soak_s``
(default 2 min on the CPU, 3 on a GPU) with every SLO met over the whole soak and over its last half, and no
growing queue (loadtest.steady). Where a soak misses, the rate steps down by ``STEP`` and a fresh server soaks
again (one that a missed soak overloaded can stay slower for minutes: docs/certification.md), down to the lowest
rate the search saw hold (or half its estimate), or, when the server completed fewer requests per second than
that, to STEP below what it completed (a search estimate twice too high then costs one soak, not seven). Once a
soak held, the rate between it and the lowest missed one is bisected while they are more than a step apart, so
the certified rate is not far below what holds either. A soak that missed while other processes took a notable
share of the host's cores is held once more at its rate. The rate that certifies is then held once more on
another fresh server; where that misses, the stepping goes on below it (tuner.certify.confirming: the rules,
SERVERS). The stated rate is the held one, or a step below it where the lowest miss above ran out of KV cache
(kv_edge) or the soaks left too little room under an SLO's limit (margin). Where the soaks that held ran out of KV
cache too, the rate below such an edge is soaked before it is stated (kv_edge.next_edge_rate).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from tuner.certify.confirming import eligible_rates, next_step, servers_holding, soak_again
from tuner.certify.gain_check import RATE_TOLERANCE, GainCheck
from tuner.certify.kv_edge import KvEdge, kv_edge, next_edge_rate
from tuner.certify.margin import Step, ThinMargin, stated_step, thin_margin
from tuner.certify.soak_record import Soak, stepping
from tuner.trial.level import Level

if TYPE_CHECKING:
    from loadtest.slo import SLO

__all__ = ["Certification", "KeepSoaks", "Soak", "certify"]  # Soak: where its callers found it before soak_record


class Served(Protocol):
    url: str


KeepSoaks = Callable[[tuple[Soak, ...]], None]  # stores a certification's soaks as they come (tuner.certify.certified)


@dataclass(frozen=True)
class Certification:
    """The soaks of one configuration, from the search's estimate down; the first that held certifies."""

    trial: int
    estimate_req_s: float
    soak_s: float
    soaks: tuple[Soak, ...]
    fail_reason: str | None = None  # the server could not start
    kv_edge: KvEdge | None = None  # the held rate's edge is the KV cache: a step below it is stated (kv_edge)
    thin_margin: ThinMargin | None = None  # no KV edge, but the soaks came too near a limit: a step below (margin)
    gain_check: GainCheck | None = None  # the best's soak beside the defaults' miss (tuner.certify.gain_check)

    @property
    def held_rate(self) -> float | None:
        """The highest held rate below every miss not cleared by a retry (tuner.certify.confirming)."""
        return max(eligible_rates(self.soaks), default=None)

    @property
    def certified_rate(self) -> float | None:
        """The stated rate: the held one, or a step below it (``step``)."""
        return self.step.stated_req_s if self.step is not None else self.held_rate

    @property
    def step(self) -> Step | None:
        """Why a step below the held rate is stated: a KV-bound edge, or a thin margin (None: no step)."""
        return stated_step(self.kv_edge, self.thin_margin)

    @property
    def servers(self) -> int:
        """Fresh servers that held the held rate (or more)."""
        rate = self.held_rate
        return 0 if rate is None else servers_holding(self.soaks, rate)

    @property
    def certified_soak(self) -> Soak | None:
        """The first soak that held the held rate."""
        return next((s for s in stepping(self.soaks) if s.holds and s.rate == self.held_rate), None)

    def line(self) -> str:
        if self.certified_rate is None:
            why = self.fail_reason or self._why_none()
            return f"trial {self.trial}: NOT certified ({why}); the search's estimate was {self.estimate_req_s:.3f}"
        where = "a fresh server" if self.servers < 2 else f"{self.servers} fresh servers"
        stepped = f"; {self.step.phrase()}" if self.step is not None else ""
        return (
            f"trial {self.trial}: certified {self.certified_rate:.3f} req/s ({self.soak_s:.0f}-s soaks held on "
            f"{where}{stepped}; the search's estimate {self.estimate_req_s:.3f})"
        )

    def _why_none(self) -> str:
        held = sorted({s.rate for s in stepping(self.soaks) if s.holds})
        if not held:
            return f"no soak held down to {self.soaks[-1].rate:.3f} req/s"
        rates = ", ".join(f"{r:.3f}" for r in held)
        return f"{rates} req/s held on a fresh server and missed on another"

    def to_dict(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "estimate_req_s": self.estimate_req_s,
            "soak_s": self.soak_s,
            "certified_rate_req_s": self.certified_rate,
            "held_rate_req_s": self.held_rate,
            "soaks": [s.to_dict() for s in self.soaks],
            "fail_reason": self.fail_reason,
            "kv_edge": self.kv_edge.to_dict() if self.kv_edge is not None else None,
            "thin_margin": self.thin_margin.to_dict() if self.thin_margin is not None else None,
            "gain_check": self.gain_check.to_dict() if self.gain_check is not None else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Certification:
        soaks = tuple(Soak.from_dict(s) for s in d["soaks"])
        edge = KvEdge.from_dict(d["kv_edge"]) if d.get("kv_edge") else None  # None in files before 2026-12-06
        thin = ThinMargin.from_dict(d["thin_margin"]) if d.get("thin_margin") else None  # None in files before the rule
        check = GainCheck.from_dict(d["gain_check"]) if d.get("gain_check") else None  # None before the check
        return cls(d["trial"], d["estimate_req_s"], d["soak_s"], soaks, d.get("fail_reason"), edge, thin, check)

    def with_step(self, levels: Iterable[Level], slos: Iterable[SLO] = ()) -> Certification:
        """This certification, a step lower where the lowest miss above its held rate ran out of KV cache, or
        else where its soaks left too little room under one of ``slos``."""
        edge = kv_edge(self.held_rate, self.soaks, levels)
        thin = thin_margin(self.held_rate, self.soaks, slos) if edge is None else None
        return replace(self, kv_edge=edge, thin_margin=thin)


def certify(
    trial: int,
    estimate: float,
    floor: float,
    soak_s: float,
    serve: Callable[[], contextlib.AbstractContextManager[Served]],
    run_soak: Callable[[str, float], Soak],
    progress: Callable[[str], None] = lambda _m: None,
    first: float | None = None,
    prior: tuple[Soak, ...] = (),
    keep: KeepSoaks = lambda _s: None,
    levels: Sequence[Level] = (),
    slos: Sequence[SLO] = (),
) -> Certification:
    """Soak a fresh server (``serve()``) at ``estimate``; step down by STEP while a soak misses, to no lower
    than ``floor`` (tuner.certify.certified.floor_rate) and at most MAX_SOAKS times. ``first``: the first
    soak's rate where it is not the estimate (a speculating winner's twin starts at the rate it must beat).
    ``prior``: the soaks of an interrupted certification, gone on from on a fresh server (from ``first`` where none
    reached it); ``keep`` is given the soaks after each one, so that an interruption loses at most the soak it cut.
    ``levels`` and ``slos`` decide a step below the held rate (``Certification.with_step``)."""
    from launch.errors import LaunchFailure

    soaks = list(prior)
    rate, index, edge = _start(prior, floor, estimate, first, levels)
    if prior:
        went = f"{rate:.3f} req/s next" if rate is not None else "nothing left to soak"
        progress(f"certifying trial {trial}: going on from {len(prior)} soak(s) of an interrupted certification "
                 f"({went})")  # fmt: skip
    if rate is None:
        return Certification(trial, estimate, soak_s, tuple(soaks)).with_step(levels, slos)
    try:
        with contextlib.ExitStack() as servers:
            server = servers.enter_context(serve())
            fresh = False
            while rate is not None:
                if fresh:  # after a miss (it may have left this server worse), or to confirm a held rate
                    servers.close()
                    server, index = servers.enter_context(serve()), index + 1
                below = " below the KV-bound edge" if edge else ""
                progress(f"certifying trial {trial}: soak{below} at {rate:.3f} req/s for {soak_s:.0f} s")
                soaks.append(replace(run_soak(server.url, rate), server=index, edge=edge))
                keep(tuple(soaks))
                progress(soaks[-1].line())
                if soak_again(soaks):
                    progress(f"certifying trial {trial}: other processes shared the host; the same rate again")
                    fresh = False
                else:
                    rate, fresh, edge = _next(soaks, floor, levels)
                    if rate is not None and edge:
                        progress(f"certifying trial {trial}: {rate:.3f} req/s on a fresh server, below a KV-bound "
                                 "edge whose held soaks preempted")  # fmt: skip
                    elif rate is not None and fresh and soaks[-1].holds:
                        progress(f"certifying trial {trial}: {rate:.3f} req/s once more, on another fresh server")
    except LaunchFailure as exc:
        failed = Certification(trial, estimate, soak_s, tuple(soaks), fail_reason=f"{exc.reason}: {exc.detail}")
        return failed.with_step(levels, slos)
    return Certification(trial, estimate, soak_s, tuple(soaks)).with_step(levels, slos)


def _next(soaks: Sequence[Soak], floor: float, levels: Sequence[Level]) -> tuple[float | None, bool, bool]:
    """The next soak's rate (None: done), whether it needs a fresh server, and whether it is below a KV-bound edge:
    stepping, bisecting and confirming first (tuner.certify.confirming); then, where the soaks that held the held
    rate preempted below a KV-bound edge, the rate below it (kv_edge.next_edge_rate), on a fresh server each."""
    steps = stepping(soaks)
    if len(steps) == len(soaks):
        rate, fresh = next_step(steps, floor)
        if rate is not None:
            return rate, fresh, False
    held = max(eligible_rates(steps), default=None)
    below = next_edge_rate(kv_edge(held, soaks, levels), floor)
    return below, True, below is not None


def _start(
    prior: tuple[Soak, ...], floor: float, estimate: float, first: float | None, levels: Sequence[Level]
) -> tuple[float | None, int, bool]:
    """The first soak's rate (None: the prior soaks finished the certification), its server's index (after an
    interruption the server is a new one, so a rate that is confirmed there counts as another server's), and
    whether it is below a KV-bound edge. A rate to beat (``first``) that no prior soak reached is soaked first: a
    certification reopened from before that rule (scripts/gpu/reopen-certification.py) is judged at it too."""
    if not prior:
        return estimate if first is None else first, 0, False
    index = max(s.server for s in prior) + 1
    if first is not None and not any(s.rate >= first * (1 - RATE_TOLERANCE) for s in stepping(prior)):
        return first, index, False
    rate, _fresh, edge = _next(prior, floor, levels)
    return rate, index, edge
