"""What else ran on the host while each trial was measured, from the trials' timelines.

With several workers (``--devices``) and overlapped startups, a trial is measured while other servers
start, wait or are measured on the same host. On the H200 vLLM's defaults measured that way came out a
third lower than on fresh servers, while other configurations held (README "Long documents"; why the
baseline now runs alone: tuner.trial.scheduler); which of the other servers' activities did it is not known.
Each trial keeps the raw wall-clock times of its phases (``TrialResult.timeline``: launched, ready,
measured, stopped; tuner.trial.runner); this pure function turns them into two figures per measured trial,
written to trials.csv, so that a study tells which of its measurements had company and how much:

- ``others_starting_s``: seconds of other servers' startups (launch to warmed up) during the measurement,
  summed over those servers;
- ``others_up_mean``: how many other servers were up (warmed up, not yet stopped) on the host, on average
  over the measurement — idle ones waiting for their turn as well as ones being measured.

Only trials of the same host are compared (a study worked by several hosts through PostgreSQL keeps each
trial's host); trials without a timeline (studies from before it was kept) get no figures. Trials given up
over the time budget keep theirs (tuner.search.study.timelines_of): their servers were up; trials cut by Ctrl-C or
a time limit do not, so the last measurements of such a call may have had more company than they show.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Company:
    others_starting_s: float
    others_up_mean: float


def _overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def company(timelines: Mapping[int, Mapping[str, Any]]) -> dict[int, Company]:
    """Per measured trial (by number): the other servers' startups and presence during its measurement.
    ``timelines``: trial number → TrialResult.timeline."""
    timed = [(n, tl) for n, tl in timelines.items() if tl.get("launched") is not None]
    out: dict[int, Company] = {}
    for number, tl in timed:
        window = tl.get("measured")
        if not window:
            continue
        m0, m1 = window
        starting = up = 0.0
        for other, ot in timed:
            if other == number or ot.get("host") != tl.get("host"):
                continue
            launched, ready, stopped = ot["launched"], ot.get("ready"), ot.get("stopped")
            end_of_start = ready if ready is not None else stopped
            if end_of_start is not None:
                starting += _overlap(launched, end_of_start, m0, m1)
            if ready is not None and stopped is not None:
                up += _overlap(ready, stopped, m0, m1)
        out[number] = Company(starting, up / (m1 - m0) if m1 > m0 else 0.0)
    return out
