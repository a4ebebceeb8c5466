"""Progress lines on stderr: ``[12:03:04] [trial 3] message``, and after each trial k/N, the best so far and an
ETA from the mean trial time of this call."""

from __future__ import annotations

import datetime as dt
import sys
import time
from typing import TextIO

import optuna

from tuner.certify.summary import Summary
from tuner.search.study import finished


class Progress:
    """Progress lines on stderr: trial k/N, best so far, ETA from the mean trial time."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total, self.stream, self.t0 = total, stream or sys.stderr, time.monotonic()
        self.done_here = 0
        self.trial = "-"

    def say(self, msg: str, trial: int | str | None = None) -> None:
        stamp = dt.datetime.now().strftime("%H:%M:%S")
        print(f"[{stamp}] [trial {self.trial if trial is None else trial}] {msg}", file=self.stream, flush=True)

    def trial_done(self, study: optuna.Study, summary: Summary) -> None:
        self.done_here += 1
        done = len(finished(study))
        per = (time.monotonic() - self.t0) / self.done_here
        eta = per * max(0, self.total - done)
        best = (
            f"best so far {summary.best_capacity_text()} (trial {summary.best.number})"
            if summary.best
            else "no config has met the SLO yet"
        )
        if done > self.total:  # a trial past --trials: a step after the search (a speculating best's twin)
            self.say(f"{done} finished, {done - self.total} after the search's {self.total}; {best}")
        else:
            self.say(f"{done}/{self.total} finished; {best}; ETA {eta / 60:.1f} min")
