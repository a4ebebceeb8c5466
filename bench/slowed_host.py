"""Emulate a host ``f`` times slower for a running server: stop its process group for a share of every period.

A spare speed (tuner/certify/spare_speed.py) says how much slower a machine may be before the stated rate tips. To
check one without a slower machine at hand, this stops the server's processes (SIGSTOP) for ``1 - 1/f`` of every
period and lets them run (SIGCONT) for the rest, so a server that would use its cores throughout gets ``1/f`` of
the time: every step it takes is, on average, ``f`` times as long. The stops are steered on the measured stopped
time (a late wake-up is paid back in the next period), and the realized factor, wall time over running time, is
printed at the end. The group is always let run again on exit (SIGTERM, SIGINT, an error).

    python bench/slowed_host.py --pgid PGID --factor 1.1 [--period-ms 50] [--seconds S] [--report FILE]

Emulation, not a slower machine: the stalls are up to ``period x (1 - 1/f)`` long (2.5 ms at 1.05, 4.5 ms at 1.1
with the 50-ms default), which a request's latency pays once per stall it spans, as on a machine whose every step
is ``f`` times longer.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Slowed:
    """What one run applied: the wall time, the time the group was stopped, the factor asked for."""

    factor: float
    wall_s: float
    stopped_s: float

    @property
    def realized(self) -> float:
        """Wall time over running time: how many times slower the group ran."""
        running = self.wall_s - self.stopped_s
        return self.wall_s / running if running > 0 else float("inf")

    def line(self) -> str:
        return (
            f"slowed_host: factor {self.factor:.3f} asked, {self.realized:.4f} realized "
            f"({self.stopped_s:.1f} s stopped of {self.wall_s:.1f} s)"
        )


def stop_for(owed_s: float, period_s: float, factor: float) -> float:
    """How long to stop in this period: the stopped time still owed, at most a period's stopped share twice over
    (a long late wake-up is paid back over a few periods, not in one stall)."""
    share = period_s * (1.0 - 1.0 / factor)
    return max(0.0, min(owed_s, 2.0 * share))


def throttle(
    signal_group: Callable[[int], None],
    factor: float,
    period_s: float,
    until: Callable[[float], bool],
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Slowed:
    """Stop and continue the group through ``signal_group`` until ``until(elapsed)`` says to end; the group runs
    again before this returns, whatever happened."""
    start = clock()
    stopped = 0.0
    try:
        while not until(clock() - start):
            owed = (clock() - start + period_s) * (1.0 - 1.0 / factor) - stopped
            pause = stop_for(owed, period_s, factor)
            if pause > 0:
                t0 = clock()
                signal_group(signal.SIGSTOP)
                sleep(pause)
                signal_group(signal.SIGCONT)
                stopped += clock() - t0
            sleep(max(0.0, period_s - pause))
    finally:
        try:
            signal_group(signal.SIGCONT)
        except ProcessLookupError:  # the group is gone: nothing left to let run
            pass
    return Slowed(factor, clock() - start, stopped)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pgid", type=int, required=True, help="the server's process group (launch.sh under setsid)")
    ap.add_argument("--factor", type=float, required=True, help="how many times slower, > 1")
    ap.add_argument("--period-ms", type=float, default=50.0)
    ap.add_argument("--seconds", type=float, default=0.0, help="0: until SIGTERM or SIGINT")
    ap.add_argument("--report", help="also write the closing line here")
    args = ap.parse_args(argv)
    if args.factor <= 1.0:
        print(f"slowed_host: --factor {args.factor} must be above 1 (1.1: every step 10 % longer)", file=sys.stderr)
        return 2
    done = False

    def finish(*_: object) -> None:
        nonlocal done
        done = True

    signal.signal(signal.SIGTERM, finish)
    signal.signal(signal.SIGINT, finish)

    def to_group(sig: int) -> None:
        os.killpg(args.pgid, sig)

    slowed = throttle(
        to_group, args.factor, args.period_ms / 1000.0, lambda t: done or (args.seconds > 0 and t >= args.seconds)
    )
    print(slowed.line(), flush=True)
    if args.report:
        with open(args.report, "w") as f:
            f.write(slowed.line() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
