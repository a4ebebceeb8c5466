"""bench/slowed_host.py: the server's group runs 1/f of the time, and always runs again at the end."""

import signal

import pytest

from bench.slowed_host import Slowed, main, stop_for, throttle


class FakeTime:
    """A clock that moves only when slept on, plus a late wake-up on every stop."""

    def __init__(self, late_s: float = 0.0) -> None:
        self.now = 0.0
        self.late_s = late_s
        self.stopped = False

    def clock(self) -> float:
        return self.now

    def sleep(self, s: float) -> None:
        self.now += s + (self.late_s if self.stopped else 0.0)


def run(factor: float, seconds: float, late_s: float = 0.0) -> tuple[Slowed, list[int], float]:
    t = FakeTime(late_s)
    sent: list[int] = []
    running_s = 0.0
    last = [0.0]

    def to_group(sig: int) -> None:
        nonlocal running_s
        if sig == signal.SIGSTOP and not t.stopped:
            running_s += t.now - last[0]
            t.stopped = True
        elif sig == signal.SIGCONT and t.stopped:
            last[0] = t.now
            t.stopped = False
        sent.append(sig)

    slowed = throttle(to_group, factor, 0.05, lambda el: el >= seconds, t.clock, t.sleep)
    running_s += 0.0 if t.stopped else t.now - last[0]
    return slowed, sent, running_s


@pytest.mark.parametrize("factor", [1.05, 1.1, 1.25, 2.0])
def test_the_group_runs_one_over_f_of_the_time(factor):
    slowed, sent, running_s = run(factor, 60.0)
    assert slowed.realized == pytest.approx(factor, rel=0.002)
    assert slowed.wall_s / running_s == pytest.approx(factor, rel=0.002)
    assert sent[-1] == signal.SIGCONT


def test_late_wake_ups_are_paid_back_not_added():
    slowed, _, running_s = run(1.1, 60.0, late_s=0.002)  # every stop 2 ms longer than asked, as a busy host does
    assert slowed.wall_s / running_s == pytest.approx(1.1, rel=0.01)


def test_a_stall_is_at_most_twice_a_periods_share():
    assert stop_for(10.0, 0.05, 1.1) == pytest.approx(2 * 0.05 * (1 - 1 / 1.1))
    assert stop_for(-0.01, 0.05, 1.1) == 0.0


def test_the_group_runs_again_when_the_loop_fails():
    sent: list[int] = []

    def to_group(sig: int) -> None:
        sent.append(sig)
        if sig == signal.SIGSTOP:
            raise OSError("boom")

    with pytest.raises(OSError):
        throttle(to_group, 1.1, 0.05, lambda el: False)
    assert sent == [signal.SIGSTOP, signal.SIGCONT]


def test_a_factor_of_one_or_less_is_refused(capsys):
    assert main(["--pgid", "1", "--factor", "1.0"]) == 2
    assert "--factor 1.0 must be above 1" in capsys.readouterr().err
